// The baseline of bench/suites/jetstream-put.ts: what the NATS client library itself does.
// `node bench/workers/kv-put.mjs <nats url> <bucket> <replicas> <in flight> <seconds>`: one
// plain Node process, one connection, `@nats-io/kv` puts of 100 bytes, each on a new key, with
// `<in flight>` puts outstanding at all times (a new one starts when one is acknowledged), for
// `<seconds>` after a 1 s warm-up. Creates the bucket (history 1, like the jetstream volume) if
// it is missing. Prints one JSON line: puts acknowledged, seconds, latency p50/p99 and the CPU
// this process used while measuring.
import { connect } from "@nats-io/transport-node";
import { jetstream } from "@nats-io/jetstream";
import { Kvm } from "@nats-io/kv";

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
let measuring = false;
let puts = 0;
const latencies = [];

/** One lane: puts one after the other until `until`. */
async function lane(until) {
  while (performance.now() < until) {
    const t0 = performance.now();
    await kv.put(`k.${process.pid}.${seq++}`, value);
    if (measuring) {
      puts++;
      latencies.push(performance.now() - t0);
    }
  }
}

const lanes = (until) => Promise.all(Array.from({ length: Number(inFlight) }, () => lane(until)));
await lanes(performance.now() + WARMUP_MS);
measuring = true;
const cpu0 = process.cpuUsage();
const t0 = performance.now();
await lanes(t0 + Number(seconds) * 1000);
const wall = (performance.now() - t0) / 1000;
const cpu = process.cpuUsage(cpu0);
latencies.sort((a, b) => a - b);
const at = (q) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? Number.NaN;
await nc.drain();
console.log(
  JSON.stringify({ puts, seconds: wall, p50Ms: at(0.5), p99Ms: at(0.99), cpuSeconds: (cpu.user + cpu.system) / 1e6 }),
);
