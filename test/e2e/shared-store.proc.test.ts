/**
 * Storages of one JetStream bucket on several routers (docs/conditional-writes.md, "Shared
 * stores"): a write the writer's own storage put in the bucket is not written again by the other
 * routers' storages of that bucket, nor waited for, so a router that does not answer (paused)
 * does not hold it up; reads through that router still see it, from the bucket. A router holding
 * the key in a storage of its own (memory) is still waited for.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { http } from "../support/http.js";
import { startNatsCluster, type NatsCluster } from "../support/nats-cluster.js";
import type { ZestProcess } from "../support/zest-process.js";
import { fabricTimings, getValues, NO_STORAGES, putText, startRouters, untilRoutersMeet } from "../fabric/helpers.js";

const TEXT = { "content-type": "text/plain" };
const cfg = (path: string, value: unknown): string[] => ["--cfg", `${path}:${JSON.stringify(value)}`];
/** B is paused for less than this: it stays known, and a write waiting for it waits this long at least. */
const PEER_TIMEOUT_MS = 2_500;

describe("a shared JetStream bucket on two routers", () => {
  let cluster: NatsCluster;
  let routers: ZestProcess[] = [];
  before(async () => {
    cluster = await startNatsCluster({ size: 1 });
    routers = await startRouters(
      ["A1", "B1"].map((id) => [
        "--id",
        id,
        "--nats",
        cluster.urls[0]!,
        ...NO_STORAGES,
        ...fabricTimings({ heartbeatMs: 250, peerTimeoutMs: PEER_TIMEOUT_MS, ackTimeoutMs: PEER_TIMEOUT_MS + 2_000 }),
        ...cfg("plugins/storage_manager/storages/shared", { key_expr: "js/**", volume: "jetstream" }),
        ...cfg("plugins/storage_manager/storages/own", { key_expr: "mem/**", volume: "memory" }),
      ]),
    );
    await untilRoutersMeet(
      routers.map((r) => r.url),
      1,
      10_000,
    );
  });
  after(async () => {
    for (const r of routers) if (r.proc.exitCode === null) r.proc.kill("SIGCONT"); // never leave one stopped
    await Promise.all(routers.map((r) => r.stop()));
    await cluster?.stop();
  });

  test("a write through A is not held up by B, whose storage of the bucket has nothing to store", async () => {
    const [a, b] = routers as [ZestProcess, ZestProcess];
    assert.equal((await putText(a.url, "js/k", "0")).status, 200);
    assert.equal((await putText(a.url, "mem/k", "0")).status, 200);
    // Read before B stops answering: a read waits for every router holding the key.
    const etag = (await http(a.url, "GET", "/js/k")).headers.get("etag")!;
    b.proc.kill("SIGSTOP");
    try {
      let t = Date.now();
      const cond = await http(a.url, "PUT", "/js/k", { body: "1", headers: { ...TEXT, "if-match": etag } });
      const condMs = Date.now() - t;
      assert.equal(cond.status, 200, cond.text);
      t = Date.now();
      assert.equal((await putText(a.url, "js/k", "2")).status, 200);
      const plainMs = Date.now() - t;
      // B is known and silent: waiting for it would take until it is forgotten.
      assert.ok(plainMs < 1_500 && condMs < 1_500, `not waited for B: ${plainMs} ms, ${condMs} ms`);
      // A memory storage on B holds what it is sent: that write waits for B.
      t = Date.now();
      await putText(a.url, "mem/k", "1");
      assert.ok(Date.now() - t >= 1_500, `a write B stores itself waits for B (${Date.now() - t} ms)`);
    } finally {
      b.proc.kill("SIGCONT");
    }
    await untilRoutersMeet(
      routers.map((r) => r.url),
      1,
      10_000,
    );
    // Read through B: the bucket holds what A wrote.
    const read = await getValues(b.url, "js/k");
    assert.equal(read.status, 200);
    assert.deepEqual(read.values, { "js/k": "2" });
    // B's conditional write on the version A's last write made: B's memory of the key is stale,
    // and the bucket decides.
    const seen = (await http(b.url, "GET", "/js/k")).headers.get("etag")!;
    const put = await http(b.url, "PUT", "/js/k", { body: "3", headers: { ...TEXT, "if-match": seen } });
    assert.equal(put.status, 200, put.text);
    assert.deepEqual((await getValues(a.url, "js/k")).values, { "js/k": "3" });
  });
});
