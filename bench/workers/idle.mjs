// A worker that does nothing for argv[2] milliseconds, then reports its CPU: for the tests of the
// benchmarks' interference accounting (test/bench/run-worker.proc.test.ts).
const ms = Number(process.argv[2] ?? 1000);
await new Promise((r) => setTimeout(r, ms));
const c = process.cpuUsage();
process.stdout.write(`${JSON.stringify({ cpuSeconds: (c.user + c.system) / 1e6 })}\n`);
