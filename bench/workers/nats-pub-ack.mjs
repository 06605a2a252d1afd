// The floor of a write across routers (bench/lib/nats-floor.ts): a bare publish-and-acknowledge
// between two Node processes, no zest. `node bench/workers/nats-pub-ack.mjs <url> <subject>
// <bytes> <in flight> <seconds>`: one connection, messages of <bytes> published with a reply
// subject (`request`) and answered by bench/workers/nats-echo.mjs on another node, <in flight>
// outstanding at all times, for <seconds> after a 1 s warm-up. Prints `start` and `stop` around
// the measured part (the parent reads the other processes' CPU there), then one JSON line:
// messages acknowledged, seconds, latency p50/p99 and this process's CPU while measuring.
import { connect } from "@nats-io/transport-node";

const [url, subject, bytes, inFlight, seconds, warmup = "1"] = process.argv.slice(2);
const payload = new TextEncoder().encode("x".repeat(Number(bytes)));

const nc = await connect({ servers: url, noEcho: true });
let measuring = false;
let acked = 0;
const latencies = [];

async function lane(until) {
  while (performance.now() < until) {
    const t0 = performance.now();
    await nc.request(subject, payload, { timeout: 60_000 });
    if (measuring) {
      acked++;
      latencies.push(performance.now() - t0);
    }
  }
}
const lanes = (until) => Promise.all(Array.from({ length: Number(inFlight) }, () => lane(until)));

await lanes(performance.now() + Number(warmup) * 1000);
console.log("start");
measuring = true;
const cpu0 = process.cpuUsage();
const t0 = performance.now();
await lanes(t0 + Number(seconds) * 1000);
const wall = (performance.now() - t0) / 1000;
const cpu = process.cpuUsage(cpu0);
console.log("stop");
await nc.close();
latencies.sort((a, b) => a - b);
const at = (q) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? Number.NaN;
console.log(
  JSON.stringify({ acked, seconds: wall, p50Ms: at(0.5), p99Ms: at(0.99), cpuSeconds: (cpu.user + cpu.system) / 1e6 }),
);
