// Fills a router with keys for the `growth` benchmark (suites/growth.ts), as a plugin loaded by
// `zest -P bench/workers/growth-fill.mjs`. HTTP PUTs from the bench process run at 3,000-6,000
// per second on a busy 2-core machine (1,000,000 keys would take minutes), so the keys are put
// from inside the router, through the same `session.put` the REST gateway calls for a PUT
// (text/plain, a distinct 100-byte value per key): the storage ends up in the state the same
// PUTs over HTTP would leave it in.
//
// A PUT of `<n>` on `bench/growth/fill` grows the set to keys `bench/growth/k/0` .. `k/<n-1>`;
// once done it runs the GC (when node has --expose-gc) and puts `<n> <rss bytes> <fill seconds>`
// on `bench/growth/filled`, which the benchmark polls.

const VALUE_BYTES = 100;
const FILLER = "v".repeat(VALUE_BYTES);
/** Puts between two yields to the event loop, so the benchmark's polls are answered meanwhile. */
const YIELD_EVERY = 20_000;

/** @param {{ session: import("../../dist/core/session.js").Session }} ctx */
export default function growthFill({ session }) {
  let filled = 0;
  let running = Promise.resolve();
  const sub = session.declareSubscriber("bench/growth/fill", (sample) => {
    const target = Number(sample.payload.toString("utf8"));
    // One fill at a time, in the order they were asked for.
    running = running.then(() => fillTo(target));
  });

  async function fillTo(target) {
    const t0 = performance.now();
    for (; filled < target; filled++) {
      const id = String(filled);
      await session.put(`bench/growth/k/${id}`, id + FILLER.slice(id.length), { encoding: "text/plain" });
      if (filled % YIELD_EVERY === 0) await new Promise((resolve) => setImmediate(resolve));
    }
    const seconds = (performance.now() - t0) / 1000;
    for (let i = 0; i < 3; i++) globalThis.gc?.();
    const rss = process.memoryUsage().rss;
    await session.put("bench/growth/filled", `${filled} ${rss} ${seconds}`, { encoding: "text/plain" });
  }

  return { close: () => sub.undeclare() };
}
