// The floor of a write across routers (bench/lib/nats-floor.ts): a bare publish-and-acknowledge
// between two Node processes, no zest. `node bench/workers/nats-pub-ack.mjs <url> <subject>
// <bytes> <in flight> <seconds>`: one connection, messages of <bytes> published with a reply
// subject (`request`) and answered by bench/workers/nats-echo.mjs on another node, <in flight>
// outstanding at all times, for <seconds> after a 1 s warm-up. Prints `start` and `stop` around
// the measured part (the parent reads the other processes' CPU there), then one JSON line:
// messages acknowledged, seconds, latency p50/p99 and this process's CPU while measuring.
import { connect } from "@nats-io/transport-node";
import { runLanes } from "./lanes.mjs";

const [url, subject, bytes, inFlight, seconds, warmup = "1"] = process.argv.slice(2);
const payload = new TextEncoder().encode("x".repeat(Number(bytes)));

const nc = await connect({ servers: url, noEcho: true });
const r = await runLanes(() => nc.request(subject, payload, { timeout: 60_000 }), {
  inFlight: Number(inFlight),
  warmupS: Number(warmup),
  seconds: Number(seconds),
  marks: true,
});
await nc.close();
console.log(
  JSON.stringify({ acked: r.count, seconds: r.seconds, p50Ms: r.p50Ms, p99Ms: r.p99Ms, cpuSeconds: r.cpuSeconds }),
);
