// Keys with a lifetime (issue 27), run by suites/ttl.ts on the built package:
//   node --expose-gc bench/workers/ttl.mjs memory <keys> <plain|ttl>
//     a router with its default memory storage on `**` (REST off), <keys> keys of 100 bytes put
//     through the Session API, with a 1 h TTL or none; then gc() and the bytes held.
//   node bench/workers/ttl.mjs expiry <keys> <spreadSeconds>
//     <keys> keys with deadlines spread evenly over <spreadSeconds>, starting once they are all
//     written; a subscriber notes how late each expiry's DELETE comes, while a mixed workload
//     (90% GET / 10% PUT over 1,000 other keys) runs at TTL_BENCH_MIX_OPS per second (20,000).
// Prints one JSON line.
import { defaultStartOptions, startZest } from "../../dist/index.js";
import { silentLogger } from "../../dist/core/log.js";

const [mode, keysArg, third] = process.argv.slice(2);
const KEYS = Number(keysArg ?? 1_000_000);
const MB = 2 ** 20;
const filler = "v".repeat(100);
/** Operations per second of the mixed workload (90% GET, 10% PUT over 1,000 other keys). */
const MIX_OPS = Number(process.env.TTL_BENCH_MIX_OPS ?? 20_000);

const zest = await startZest(
  { plugins: { rest: { http_port: "none" } } },
  { ...defaultStartOptions(), logger: silentLogger },
);
const session = zest.session;

function settle() {
  for (let i = 0; i < 3; i++) globalThis.gc?.();
  return process.memoryUsage();
}
const held = (m) => m.heapUsed + m.arrayBuffers;

if (mode === "memory") {
  const ttl = third === "ttl" ? 3_600_000 : undefined;
  const before = settle();
  for (let i = 0; i < KEYS; i++) {
    const id = String(i);
    await session.put(`bench/ttl/${id}`, id + filler.slice(id.length), ttl === undefined ? {} : { ttl });
  }
  const after = settle();
  console.log(
    JSON.stringify({
      keys: KEYS,
      bytesPerKey: (held(after) - held(before)) / KEYS,
      rssMb: after.rss / MB,
      cpuSeconds: cpuSeconds(),
    }),
  );
} else if (mode === "expiry") {
  const spreadMs = Number(third ?? 60) * 1000;
  // Deadlines are absolute and known here: key i expires at start + slot(i) * spread / keys,
  // the slots shuffled so that expiry order is not write order.
  const slotOf = (i) => (i * 7919) % KEYS;
  let start = 0;
  const lateness = new Float64Array(KEYS);
  let expired = 0;
  let early = 0;
  session.declareSubscriber("bench/ttl/**", (s) => {
    if (s.kind !== "delete") return;
    const i = Number(s.key.slice(10));
    const late = Date.now() - (start + (slotOf(i) * spreadMs) / KEYS);
    if (late < 0) early++;
    lateness[expired++] = late;
  });
  // Writing a million keys takes seconds: the deadlines start once they are all in. The fill
  // rate is measured on a first 20,000 plain writes (rewritten with their deadline after).
  const t0 = Date.now();
  const probe = Math.min(20_000, KEYS);
  for (let i = 0; i < probe; i++) await session.put(`bench/ttl/${i}`, filler);
  const rate = probe / Math.max(1, Date.now() - t0); // keys per ms
  start = Date.now() + Math.ceil((KEYS / rate) * 1.5) + 5_000;
  for (let i = 0; i < KEYS; i++) {
    const id = String(i);
    await session.put(`bench/ttl/${id}`, id + filler.slice(id.length), {
      deadline: start + (slotOf(i) * spreadMs) / KEYS,
    });
  }
  const fillSeconds = (Date.now() - t0) / 1000;
  if (Date.now() > start) throw new Error("the fill ran past the first deadline (a very busy machine): rerun");
  // The mixed workload, paced: every millisecond the ops that keep it at MIX_OPS per second
  // (a router has other work, not a tight loop), until every key expired.
  let ops = 0;
  const end = start + spreadMs + 10_000;
  const mixStart = Date.now();
  await new Promise((resolve) => {
    const timer = setInterval(() => {
      const due = Math.floor(((Date.now() - mixStart) * MIX_OPS) / 1000);
      for (; ops < due; ops++) {
        const k = `bench/mix/${ops % 1000}`;
        if (ops % 10 === 0) void session.put(k, filler);
        else session.interest.readStored?.(k) ?? void session.get(k);
      }
      if (expired >= KEYS || Date.now() > end) {
        clearInterval(timer);
        resolve();
      }
    }, 1);
  });
  const mixSeconds = (Date.now() - mixStart) / 1000;
  const sorted = lateness.subarray(0, expired).sort();
  const q = (p) => sorted[Math.min(expired - 1, Math.floor(p * expired))];
  console.log(
    JSON.stringify({
      keys: KEYS,
      spreadSeconds: spreadMs / 1000,
      expired,
      early,
      p50Ms: q(0.5),
      p99Ms: q(0.99),
      maxMs: sorted[expired - 1],
      fillSeconds,
      mixOpsPerSec: ops / mixSeconds,
      cpuSeconds: cpuSeconds(),
    }),
  );
}
await zest.close();
process.exit(0);

/** CPU this process used (for the runner's interference check). */
function cpuSeconds() {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1e6;
}
