/**
 * The acceptance of zest joining a zenoh network (docs/zenoh-network.md): a zenoh-python
 * subscriber on the zenoh router's side and an SSE client on zest see the same samples, in the
 * same order, for a run of puts from each side (a zenoh-python publisher on the router, then one
 * on zest's own listener), nothing lost, nothing twice.
 *
 * `npm test` runs the 100,000 puts from each side (about 21 s in all on the shared host
 * at a load average of 8: 5 s for the router's side, 8 s for zest's). A shorter run, while
 * developing (after `node scripts/run-tests.mjs join-order` compiled it):
 *   ZEST_JOIN_ORDER_COUNT=10000 bash scripts/in-netns.sh node --test \
 *     .test-build/test/zenoh/join-order.netns.test.js
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { untilPasses } from "../support/assert.js";
import { openSse } from "../support/http.js";
import { type ZestProcess, zenohLocatorOf } from "../support/zest-process.js";
import { pythonSkip } from "../support/zenoh-python.js";
import { call, type PyProcess, startZenohClient, startZenohRouter } from "./join/python.js";
import { freePort } from "../support/ports.js";
import { startJoinedZest } from "./join/routers.js";

const skip = pythonSkip();
const COUNT = Number(process.env.ZEST_JOIN_ORDER_COUNT ?? 100_000);
// Generous: the host is shared; 100,000 from each side take about 20 s a side on it.
const RUN_TIMEOUT_MS = 30_000 + COUNT * 2;

/** Where the first difference between two key sequences is, for a readable failure. */
function firstDifference(a: readonly string[], b: readonly string[]): string | undefined {
  const n = Math.max(a.length, b.length);
  for (let i = 0; i < n; i++)
    if (a[i] !== b[i]) return `at ${i} of ${a.length} / ${b.length}: ${a[i] ?? "(none)"} ≠ ${b[i] ?? "(none)"}`;
  return undefined;
}

describe(`the same ${COUNT} samples from each side, in the same order, on both sides`, { skip }, () => {
  let router: PyProcess & { zid: string };
  let zest: ZestProcess;
  let endpoint: string;

  before(async () => {
    const port = await freePort();
    endpoint = `tcp/127.0.0.1:${port}`;
    router = await startZenohRouter(port);
    // No storage: the run measures routing, not a storage holding 2 × COUNT keys.
    zest = await startJoinedZest(endpoint, ["--cfg", "plugins/storage_manager:{storages:{}}"]);
  });
  after(async () => {
    await zest?.stop();
    await router?.stop();
  });

  test("a zenoh-python subscriber on the router's side and an SSE client on zest", {
    timeout: 4 * RUN_TIMEOUT_MS,
  }, async () => {
    const sse = await openSse(`${zest.url}/order/**`);
    const env = { JOIN_CLIENT_LIFETIME_S: String(Math.ceil((4 * RUN_TIMEOUT_MS) / 1000)) };
    const sub = await startZenohClient(endpoint, env);
    const onRouter = await startZenohClient(endpoint, env);
    const onZest = await startZenohClient(zenohLocatorOf(zest), env);
    try {
      await call(sub, { op: "sub", key: "order/**", quiet: true });
      // Both subscribers are declared along the way: one put from each side until both sides have it.
      let warm = 0;
      await untilPasses(async () => {
        await call(onRouter, { op: "put", key: `order/warm/${++warm}`, value: "w" });
        await call(onZest, { op: "put", key: `order/warm/${++warm}`, value: "w" });
        const n = await call(sub, { op: "count" });
        assert.ok(Number(n.n) >= 2);
      }, 20_000);
      // Warm-up samples still on their way are left out below: only the runs' keys are compared.
      const RUN = "order/run/";
      const runKeysOf = (keys: readonly string[]) => keys.filter((k) => k.startsWith(RUN));
      const sseNext = async (n: number): Promise<string[]> => {
        const keys: string[] = [];
        while (keys.length < n) {
          const events = await sse.next(n - keys.length, RUN_TIMEOUT_MS);
          keys.push(...runKeysOf(events.map((e) => (JSON.parse(e.data) as { key: string }).key)));
        }
        return keys;
      };
      // One side's run, then the other's once both subscribers have all of it: two publishers
      // running at once reach the two sides in orders that may differ, and both are right.
      const expected: string[] = [];
      const sseKeys: string[] = [];
      for (const [side, pub] of [
        ["router", onRouter],
        ["zest", onZest],
      ] as const) {
        const t0 = Date.now();
        await call(pub, { op: "putmany", key: `${RUN}${side}`, count: COUNT }, RUN_TIMEOUT_MS);
        const tPut = Date.now() - t0;
        for (let i = 0; i < COUNT; i++) expected.push(`${RUN}${side}/${i}`);
        sseKeys.push(...(await sseNext(COUNT)));
        const tSse = Date.now() - t0;
        await untilPasses(async () => {
          const n = Number((await call(sub, { op: "count", prefix: RUN })).n);
          assert.equal(n, expected.length);
        }, RUN_TIMEOUT_MS);
        console.log(
          `# ${COUNT} puts from the ${side}'s side: published in ${tPut} ms, on the SSE client in ${tSse} ms, on the python subscriber in ${Date.now() - t0} ms`,
        );
      }
      const pyKeys = runKeysOf((await call(sub, { op: "collected" }, RUN_TIMEOUT_MS)).keys as string[]);
      assert.equal(firstDifference(pyKeys, expected), undefined, "the python subscriber");
      assert.equal(firstDifference(sseKeys, expected), undefined, "the SSE client");
      // Nothing more, on either side.
      await new Promise((r) => setTimeout(r, 500));
      assert.deepEqual(
        runKeysOf((await sse.next(1, 300).catch(() => [])).map((e) => (JSON.parse(e.data) as { key: string }).key)),
        [],
      );
      assert.equal(Number((await call(sub, { op: "count", prefix: RUN })).n), expected.length);
    } finally {
      sse.close();
      await Promise.all([sub.stop(), onRouter.stop(), onZest.stop()]);
    }
  });
});
