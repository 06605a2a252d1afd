// A plugin for the zenoh benchmarks (`zest -P bench/workers/gc-on-put.mjs`, bench/zenoh.md): a put
// on `bench/zenoh/gc` runs three garbage collections (the router runs with --expose-gc), so that
// the RSS the benchmark reads next holds what is live, not what is waiting to be collected.

/** @param {{ session: import("../../dist/core/session.js").Session }} ctx */
export default function gcOnPut({ session }) {
  const sub = session.declareSubscriber("bench/zenoh/gc", () => {
    for (let i = 0; i < 3; i++) globalThis.gc?.();
  });
  return { close: () => sub.undeclare() };
}
