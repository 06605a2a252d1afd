// Closed-loop load for the NATS workers (kv-put.mjs, nats-pub-ack.mjs): `inFlight` lanes, each
// running `op()` one call after the other, for `warmupS` seconds uncounted, then `seconds`
// counted. `marks`: print `start` and `stop` around the counted part (a parent reads other
// processes' CPU there). Resolves with the calls counted, the counted seconds, latency p50/p99 (ms)
// and this process's CPU seconds meanwhile.
export async function runLanes(op, { inFlight, warmupS, seconds, marks = false }) {
  let measuring = false;
  let count = 0;
  const latencies = [];
  async function lane(until) {
    while (performance.now() < until) {
      const t0 = performance.now();
      await op();
      if (measuring) {
        count++;
        latencies.push(performance.now() - t0);
      }
    }
  }
  const lanes = (until) => Promise.all(Array.from({ length: inFlight }, () => lane(until)));
  await lanes(performance.now() + warmupS * 1000);
  if (marks) console.log("start");
  measuring = true;
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  await lanes(t0 + seconds * 1000);
  const wall = (performance.now() - t0) / 1000;
  const cpu = process.cpuUsage(cpu0);
  if (marks) console.log("stop");
  latencies.sort((a, b) => a - b);
  const at = (q) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? Number.NaN;
  return { count, seconds: wall, p50Ms: at(0.5), p99Ms: at(0.99), cpuSeconds: (cpu.user + cpu.system) / 1e6 };
}
