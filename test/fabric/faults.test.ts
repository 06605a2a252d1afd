/**
 * Failures with real processes: a router killed during a stream of PUTs, a NATS node killed
 * with `kill -9` under a replicated jetstream storage, and the whole NATS cluster going away.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { eventually, http } from "../support/http.js";
import { startNatsCluster, type NatsCluster } from "../support/nats-cluster.js";
import type { ZestProcess } from "../support/zest-process.js";
import { getValues, memoryStorage, NO_STORAGES, putText, routerStatus, startRouters } from "./helpers.js";

describe("failures over a NATS cluster", () => {
  let cluster: NatsCluster;
  /** On node 0: a jetstream storage (3 replicas) on js/**, a memory storage on s/**. */
  let j: ZestProcess;
  /** On node 1: a memory storage on s/** (killed by the first test). */
  let k: ZestProcess;
  /** On node 2: no storage, writes through the others. */
  let m: ZestProcess;

  before(async () => {
    cluster = await startNatsCluster();
    [j, k, m] = (await startRouters([
      ["--id", "11", "--nats", cluster.urls[0]!, "--cfg", 'plugins/storage_manager/storages/js:{key_expr:"js/**",volume:{id:"jetstream",replicas:3}}', ...memoryStorage("s", "s/**")],
      ["--id", "22", "--nats", cluster.urls[1]!, ...memoryStorage("s", "s/**")],
      ["--id", "33", "--nats", cluster.urls[2]!, ...NO_STORAGES],
    ])) as [ZestProcess, ZestProcess, ZestProcess];
    for (const z of [j, k, m]) await eventually(async () => (await routerStatus(z.url)).fabric.detail.routers.length === 2, 5_000, "routers to meet");
  });
  after(async () => {
    await Promise.all([j?.stop(), k?.stop(), m?.stop()]);
    await cluster?.stop();
  });

  test("a router killed during a stream of PUTs holds no write up and loses none of the others", async () => {
    const slowest: number[] = [];
    for (let i = 0; i < 150; i++) {
      if (i === 50) await k.kill9();
      const t0 = Date.now();
      const r = await putText(m.url, `s/${i}`, `v${i}`);
      slowest.push(Date.now() - t0);
      assert.equal(r.status, 200, `PUT s/${i}: ${r.status} ${r.text}`);
    }
    // The write in flight when K died waits for NATS to report K gone (a ping), not for a timeout.
    assert.ok(Math.max(...slowest) < 2_000, `slowest PUT took ${Math.max(...slowest)} ms`);
    const { status, values } = await getValues(m.url, "s/**");
    assert.equal(status, 200);
    assert.equal(Object.keys(values).length, 150);
    await eventually(async () => !(await routerStatus(j.url)).fabric.detail.routers.includes("22"), 6_000, "J to forget K");
    assert.deepEqual((await routerStatus(m.url)).sessions, [{ peer: "11", whatami: "router" }]);
  });

  test("kill -9 of a NATS node during PUTs to a jetstream storage (3 replicas) loses no acknowledged write", async (t) => {
    const acked = new Set<string>();
    let failed = 0;
    let stop = false;
    const writer = async (w: number): Promise<void> => {
      for (let i = 0; !stop; i++) {
        const key = `js/w${w}/${i}`;
        const r = await putText(j.url, key, key).catch(() => undefined);
        if (r?.status === 200) acked.add(key);
        else failed++;
      }
    };
    const writers = [0, 1, 2, 3].map(writer);
    try {
      await eventually(() => acked.size >= 40, 15_000, "PUTs before the kill");
      const before = acked.size;
      // Node 0 is the one J is connected to: J loses its connection and fails over too.
      await cluster.kill9(0);
      // Writes resume once J reconnected and the stream has a leader again.
      await eventually(() => acked.size >= before + 40, 30_000, "PUTs to be acknowledged again after the kill");
    } finally {
      stop = true;
      await Promise.all(writers);
    }
    // Reads resume: through J (which reconnected to another node) and through M.
    await eventually(async () => (await routerStatus(j.url)).fabric.connected, 10_000, "J to reconnect");
    for (const z of [j, m]) {
      let last: Awaited<ReturnType<typeof getValues>> = { status: 0, values: {}, errors: [] };
      const missing = (): string[] => [...acked].filter((key) => !(key in last.values));
      await eventually(async () => {
        last = await getValues(z.url, "js/**");
        return last.status === 200 && missing().length === 0;
      }, 30_000).catch(() => undefined);
      const where = z === j ? "J" : "M";
      assert.equal(last.status, 200, `GET through ${where}: ${last.status} ${last.errors.join("; ")}`);
      assert.deepEqual(missing(), [], `acknowledged writes missing through ${where}`);
      for (const key of acked) assert.equal(last.values[key], key);
    }
    await cluster.restart(0);
    // The storage keeps working with the node back.
    assert.equal((await putText(j.url, "js/after", "ok")).status, 200);
    assert.deepEqual((await getValues(m.url, "js/after")).values, { "js/after": "ok" });
    t.diagnostic(`${acked.size} PUTs acknowledged, ${failed} refused while the cluster failed over`);
  });

  test("a router that loses NATS keeps serving locally, reports the fabric down, and reconnects", async () => {
    for (let i = 0; i < cluster.nodes.length; i++) await cluster.kill9(i);
    await eventually(async () => !(await routerStatus(j.url)).fabric.connected, 15_000, "J to notice the lost connection");
    const t0 = Date.now();
    assert.equal((await putText(j.url, "s/offline", "still here")).status, 200);
    assert.deepEqual((await getValues(j.url, "s/offline")).values, { "s/offline": "still here" });
    assert.ok(Date.now() - t0 < 1_000, "local PUT and GET do not wait for NATS");
    const down = (await getValues(j.url, "@/router/local/health")).values["@/router/11/health"] as { status: string; fabric: { connected: boolean } };
    assert.equal(down.status, "degraded");
    assert.equal(down.fabric.connected, false);

    for (let i = 0; i < cluster.nodes.length; i++) await cluster.restart(i, { wait: false });
    await cluster.waitReady();
    for (const z of [j, m]) await eventually(async () => (await routerStatus(z.url)).fabric.connected, 15_000, "reconnection");
    await eventually(async () => (await routerStatus(m.url)).fabric.detail.routers.includes("11"), 10_000, "M to see J again");
    const up = (await getValues(j.url, "@/router/local/health")).values["@/router/11/health"] as { status: string };
    assert.equal(up.status, "ok");
    // The key space is whole again: M reads J's storage.
    assert.deepEqual((await getValues(m.url, "s/offline")).values, { "s/offline": "still here" });
    assert.equal((await http(m.url, "PUT", "/s/back", { body: "1" })).status, 200);
  });
});
