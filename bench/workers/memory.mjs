// Memory (issue 2), run by suites/memory.ts as `node --expose-gc bench/workers/memory.mjs [keys]`.
// A full router from the built package (default start options, default memory storage on `**`,
// REST off), plain node like the `zest` command: 1,000,000 keys put through the Session API with
// distinct 100-byte values, then gc() and RSS. Prints one JSON line.
import { defaultStartOptions, startZest } from "../../dist/index.js";
import { silentLogger } from "../../dist/core/log.js";

const KEYS = Number(process.argv[2] ?? 1_000_000);
const VALUE_BYTES = 100;
const MB = 2 ** 20;
if (typeof globalThis.gc !== "function") throw new Error("run with --expose-gc");

function settle() {
  for (let i = 0; i < 3; i++) globalThis.gc();
  return process.memoryUsage();
}

const zest = await startZest(
  { plugins: { rest: { http_port: "none" } } },
  { ...defaultStartOptions(), logger: silentLogger },
);
const before = settle();
const filler = "v".repeat(VALUE_BYTES);
const t0 = performance.now();
for (let i = 0; i < KEYS; i++) {
  // A distinct value per key, as clients send them (the string becomes its own Buffer).
  const id = String(i);
  await zest.session.put(`bench/mem/${id}`, id + filler.slice(id.length));
}
const putSeconds = (performance.now() - t0) / 1000;
const after = settle();

const last = await zest.session.get(`bench/mem/${KEYS - 1}`);
if (last.length !== 1 || last[0].kind !== "ok" || last[0].sample.payload.length !== VALUE_BYTES)
  throw new Error("the last key was not stored");

console.log(
  JSON.stringify({
    keys: KEYS,
    valueBytes: VALUE_BYTES,
    rssMb: after.rss / MB,
    rssEmptyMb: before.rss / MB,
    heapUsedMb: after.heapUsed / MB,
    arrayBuffersMb: after.arrayBuffers / MB,
    bytesPerKey: (after.rss - before.rss) / KEYS,
    putsPerSec: KEYS / putSeconds,
    cpuSeconds: cpuSeconds(),
  }),
);
await zest.close();

/** CPU this process used (for the runner's interference check). */
function cpuSeconds() {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1e6;
}
