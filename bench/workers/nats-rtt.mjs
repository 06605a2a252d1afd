// The floor of bench/suites/nats-get.ts: what one request/reply across the NATS cluster costs
// with no zest at all. `node bench/workers/nats-rtt.mjs <requester url> <subject> <warmup> <count>`:
// one plain Node process, one connection (to the node router B uses), sequential requests of 60
// bytes on <subject>, answered by a responder elsewhere (the bench process, on router A's node)
// with about the bytes of a one-key GET answer. Prints `start` and `stop` around the measured
// requests (a parent may read the other processes' CPU there), then one JSON line: latency
// p50/p99 of the <count> measured requests after <warmup>, and the CPU this process used while
// measuring.
import { connect } from "@nats-io/transport-node";

const [url, subject, warmup, count] = process.argv.slice(2);
const payload = new TextEncoder().encode("x".repeat(60));

const nc = await connect({ servers: url });
for (let i = 0; i < Number(warmup); i++) await nc.request(subject, payload, { timeout: 5_000 });

const latencies = [];
console.log("start");
const cpu0 = process.cpuUsage();
for (let i = 0; i < Number(count); i++) {
  const t0 = performance.now();
  await nc.request(subject, payload, { timeout: 5_000 });
  latencies.push(performance.now() - t0);
}
const cpu = process.cpuUsage(cpu0);
console.log("stop");
await nc.close();

latencies.sort((a, b) => a - b);
const at = (q) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))];
console.log(
  JSON.stringify({
    requests: latencies.length,
    p50Ms: at(0.5),
    p99Ms: at(0.99),
    cpuSeconds: (cpu.user + cpu.system) / 1e6,
  }),
);
