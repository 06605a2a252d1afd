// Routing one put in-process (issue 2), run by suites/routing.ts as
// `node --expose-gc bench/workers/routing.mjs [puts per config]`, against the built package.
// `session.put` on a Router with 10 subscriptions declared and on one with 100,000
// (`bench/sub/<i>`; the put key `bench/sub/7` matches exactly one in both), no HTTP, no storage.
// Both routers live in this process and are measured in alternating rounds after a warm-up, so
// JIT state and drift hit both alike. Prints one JSON line.
import { Router, Session } from "../../dist/index.js";
import { silentLogger } from "../../dist/core/log.js";

const SMALL = 10;
const LARGE = 100_000;
const PUTS = Number(process.argv[2] ?? 200_000);
const ROUNDS = 10;
const WARMUP = 50_000;
const KEY = "bench/sub/7";
const payload = Buffer.from("routing-bench-payload");

function setup(count) {
  const session = new Session(new Router({ logger: silentLogger }), "bench");
  const s = { session, delivered: 0, declareMs: 0 };
  const t0 = performance.now();
  for (let i = 0; i < count; i++) {
    const key = `bench/sub/${i}`;
    session.declareSubscriber(key, key === KEY ? () => void s.delivered++ : () => undefined);
  }
  s.declareMs = performance.now() - t0;
  return s;
}

async function puts(s, n) {
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < n; i++) await s.session.put(KEY, payload);
  return process.hrtime.bigint() - t0;
}

const small = setup(SMALL);
const large = setup(LARGE);
await puts(small, WARMUP);
await puts(large, WARMUP);
globalThis.gc?.();

let nsSmall = 0n;
let nsLarge = 0n;
const per = Math.ceil(PUTS / ROUNDS);
for (let r = 0; r < ROUNDS; r++) {
  if (r % 2 === 0) {
    nsSmall += await puts(small, per);
    nsLarge += await puts(large, per);
  } else {
    nsLarge += await puts(large, per);
    nsSmall += await puts(small, per);
  }
}
const total = per * ROUNDS;
if (small.delivered !== total + WARMUP || large.delivered !== total + WARMUP) {
  throw new Error(`deliveries: ${small.delivered} and ${large.delivered}, expected ${total + WARMUP} each`);
}
console.log(
  JSON.stringify({
    putsPerConfig: total,
    smallSubs: SMALL,
    largeSubs: LARGE,
    smallNsPerPut: Number(nsSmall) / total,
    largeNsPerPut: Number(nsLarge) / total,
    declareLargeMs: large.declareMs,
    heapUsedMb: process.memoryUsage().heapUsed / 2 ** 20,
    cpuSeconds: cpuSeconds(),
  }),
);


/** CPU this process used (for the runner's interference check). */
function cpuSeconds() {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1e6;
}
