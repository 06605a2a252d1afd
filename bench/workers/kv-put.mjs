// The baseline of bench/suites/jetstream-put.ts: what the NATS client library itself does.
// `node bench/workers/kv-put.mjs <nats url> <bucket> <replicas> <in flight> <seconds>`: one
// plain Node process, one connection, `@nats-io/kv` puts of 100 bytes, each on a new key, with
// `<in flight>` puts outstanding at all times (a new one starts when one is acknowledged), for
// `<seconds>` after a 1 s warm-up. Creates the bucket (history 1, like the jetstream volume) if
// it is missing. Prints one JSON line: puts acknowledged while measuring, seconds, latency
// p50/p99, the CPU this process used while measuring, and every put acknowledged (`total`, the
// warm-up's included).
import { connect } from "@nats-io/transport-node";
import { jetstream } from "@nats-io/jetstream";
import { Kvm } from "@nats-io/kv";
import { runLanes } from "./lanes.mjs";

const [url, bucket, replicas, inFlight, seconds] = process.argv.slice(2);
const WARMUP_MS = 1_000;
const value = new TextEncoder().encode("x".repeat(100));

const nc = await connect({ servers: url });
const kv = await new Kvm(jetstream(nc, { timeout: 10_000 })).create(bucket, {
  history: 1,
  replicas: Number(replicas),
  allow_direct: false,
});

let seq = 0;
const r = await runLanes(() => kv.put(`k.${process.pid}.${seq++}`, value), {
  inFlight: Number(inFlight),
  warmupS: WARMUP_MS / 1000,
  seconds: Number(seconds),
});
await nc.drain();
console.log(
  JSON.stringify({
    puts: r.count,
    seconds: r.seconds,
    p50Ms: r.p50Ms,
    p99Ms: r.p99Ms,
    cpuSeconds: r.cpuSeconds,
    total: seq,
  }),
);
