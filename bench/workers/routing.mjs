// Routing one put in-process (issue 2), run by suites/routing.ts as
// `node --expose-gc bench/workers/routing.mjs [puts per config]`, against the built package.
// `session.put` on a Router with 10 subscriptions declared and on one with 100,000
// (`bench/sub/<i>`), no HTTP, no storage, in two ways:
// - hot: one key (`bench/sub/7`, matching one subscription in both) again and again, which the
//   router's route cache answers after the first put;
// - cold: 200,000 distinct keys (`bench/sub/<j>`) in turn, more than the route cache holds
//   (65,536), so every put walks the chunk trie. This is the figure the target applies to.
// Both routers live in this process and are measured in alternating rounds after a warm-up, so
// JIT state and drift hit both alike. Prints one JSON line.
import { Router, Session } from "../../dist/index.js";
import { silentLogger } from "../../dist/core/log.js";

const SMALL = 10;
const LARGE = 100_000;
const PUTS = Number(process.argv[2] ?? 200_000);
const ROUNDS = 10;
const WARMUP = 50_000;
const HOT_KEY = "bench/sub/7";
const COLD_KEYS = Array.from({ length: 200_000 }, (_, j) => `bench/sub/${j}`);
const payload = Buffer.from("routing-bench-payload");

function setup(count) {
  const session = new Session(new Router({ logger: silentLogger }), "bench");
  const s = { session, delivered: 0, declareMs: 0, next: 0 };
  const t0 = performance.now();
  for (let i = 0; i < count; i++) session.declareSubscriber(`bench/sub/${i}`, () => void s.delivered++);
  s.declareMs = performance.now() - t0;
  return s;
}

async function hot(s, n) {
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < n; i++) await s.session.put(HOT_KEY, payload);
  return process.hrtime.bigint() - t0;
}

async function cold(s, n) {
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < n; i++) {
    await s.session.put(COLD_KEYS[s.next], payload);
    s.next = (s.next + 1) % COLD_KEYS.length;
  }
  return process.hrtime.bigint() - t0;
}

/** Time per put of `fn` on both routers, alternating which goes first. */
async function measure(fn, small, large) {
  await fn(small, WARMUP);
  await fn(large, WARMUP);
  globalThis.gc?.();
  let nsSmall = 0n;
  let nsLarge = 0n;
  const per = Math.ceil(PUTS / ROUNDS);
  for (let r = 0; r < ROUNDS; r++) {
    if (r % 2 === 0) {
      nsSmall += await fn(small, per);
      nsLarge += await fn(large, per);
    } else {
      nsLarge += await fn(large, per);
      nsSmall += await fn(small, per);
    }
  }
  const total = per * ROUNDS;
  return { total, small: Number(nsSmall) / total, large: Number(nsLarge) / total };
}

const small = setup(SMALL);
const large = setup(LARGE);
const h = await measure(hot, small, large);
// Every hot put matches exactly one subscription on both routers.
const hotDeliveries = h.total + WARMUP;
if (small.delivered !== hotDeliveries || large.delivered !== hotDeliveries) {
  throw new Error(`hot deliveries: ${small.delivered} and ${large.delivered}, expected ${hotDeliveries} each`);
}
small.delivered = large.delivered = 0;
const c = await measure(cold, small, large);
// Cold key j matches a subscription when j < the router's count: check the large router's tally.
const coldPuts = c.total + WARMUP;
let expectLarge = 0;
for (let i = 0; i < coldPuts; i++) if (i % COLD_KEYS.length < LARGE) expectLarge++;
if (large.delivered !== expectLarge) throw new Error(`cold deliveries: ${large.delivered}, expected ${expectLarge}`);

console.log(
  JSON.stringify({
    putsPerConfig: c.total,
    smallSubs: SMALL,
    largeSubs: LARGE,
    coldKeys: COLD_KEYS.length,
    smallNsPerPut: c.small,
    largeNsPerPut: c.large,
    hotSmallNsPerPut: h.small,
    hotLargeNsPerPut: h.large,
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
