/**
 * Failures with real processes: a NATS node killed with `kill -9` under a replicated jetstream
 * storage, a router killed during a stream of PUTs, and the whole NATS cluster going away.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { connect } from "@nats-io/transport-node";
import { Kvm } from "@nats-io/kv";
import { jetstreamManager } from "@nats-io/jetstream";
import { defaultBucket, keyToKvKey } from "../../src/storage/volumes/jetstream.js";
import { getJson, http } from "../support/http.js";
import { startNatsCluster, type NatsCluster } from "../support/nats-cluster.js";
import type { ZestProcess } from "../support/zest-process.js";
import {
  fabricTimings,
  getValues,
  memoryStorage,
  NO_STORAGES,
  putText,
  routerStatus,
  sleep,
  startRouters,
  untilRoutersMeet,
} from "./helpers.js";
import { eventually } from "../support/wait.js";

/**
 * Shorter fabric timings than the defaults (4 s peer timeout). The peer timeout stays well above
 * a NATS failover on a loaded machine (a router whose node died reconnects to another within a
 * second or so, and its peers may hear nothing meanwhile), or a write could stop waiting for a
 * router that was only reconnecting, or one router could forget another while the cluster dies
 * node by node.
 */
const TIMINGS = { heartbeatMs: 250, peerTimeoutMs: 2_500, ackTimeoutMs: 3_500 };
const PEER_TIMEOUT_MS = TIMINGS.peerTimeoutMs;

describe("failures over a NATS cluster", () => {
  let cluster: NatsCluster;
  /** On node 0: a jetstream storage (3 replicas) on js/**, a memory storage on s/**. */
  let j: ZestProcess;
  /** On node 1: a memory storage on s/** (killed by the second test). */
  let k: ZestProcess;
  /** On node 2: no storage, writes through the others. */
  let m: ZestProcess;

  before(async () => {
    cluster = await startNatsCluster();
    // J's and K's storages on s/** are replicas (replication is on by default with a fabric): a
    // killed replica does not make the survivor "behind", a cut-off one does (docs/replication.md).
    [j, k, m] = (await startRouters([
      [
        "--id",
        "11",
        "--nats",
        cluster.urls[0]!,
        ...fabricTimings(TIMINGS),
        "--cfg",
        'plugins/storage_manager/storages/js:{key_expr:"js/**",volume:{id:"jetstream",replicas:3}}',
        ...memoryStorage("s", "s/**"),
      ],
      ["--id", "22", "--nats", cluster.urls[1]!, ...fabricTimings(TIMINGS), ...memoryStorage("s", "s/**")],
      ["--id", "33", "--nats", cluster.urls[2]!, ...fabricTimings(TIMINGS), ...NO_STORAGES],
    ])) as [ZestProcess, ZestProcess, ZestProcess];
    await untilRoutersMeet([j.url, k.url, m.url], 2);
  });

  after(async () => {
    await Promise.all([j?.stop(), k?.stop(), m?.stop()]);
    await cluster?.stop();
  });

  test("kill -9 of a NATS node during PUTs through every router to a jetstream storage (3 replicas) loses no acknowledged write", async (t) => {
    const acked = new Set<string>();
    let failed = 0;
    let stop = false;
    // J hosts the storage; K and M write through the fabric and wait for J's acknowledgement.
    const writer = async (z: ZestProcess, name: string): Promise<void> => {
      for (let i = 0; !stop; i++) {
        const key = `js/${name}/${i}`;
        const r = await putText(z.url, key, key).catch(() => undefined);
        if (r?.status === 200) acked.add(key);
        else failed++;
      }
    };
    const writers = [
      writer(j, "j0"),
      writer(j, "j1"),
      writer(k, "k0"),
      writer(k, "k1"),
      writer(m, "m0"),
      writer(m, "m1"),
    ];
    const ackedThrough = (p: string): number => [...acked].filter((key) => key.startsWith(`js/${p}`)).length;
    try {
      await eventually(
        () => acked.size >= 60 && ackedThrough("k") > 0 && ackedThrough("m") > 0,
        15_000,
        "PUTs before the kill",
      );
      const before = { all: acked.size, k: ackedThrough("k"), m: ackedThrough("m") };
      // Node 0 is the one J is connected to: J loses its connection and fails over too.
      await cluster.kill9(0);
      // Writes resume once J reconnected and the stream has a leader again, through every router.
      await eventually(
        () => acked.size >= before.all + 60 && ackedThrough("k") > before.k + 5 && ackedThrough("m") > before.m + 5,
        30_000,
        "PUTs to be acknowledged again after the kill",
      );
    } finally {
      stop = true;
      await Promise.all(writers);
    }
    // Reads resume: through J (which reconnected to another node), K and M.
    await eventually(async () => (await routerStatus(j.url)).fabric.connected, 10_000, "J to reconnect");
    for (const [where, z] of [
      ["J", j],
      ["K", k],
      ["M", m],
    ] as const) {
      let last: Awaited<ReturnType<typeof getValues>> = { status: 0, values: {}, errors: [] };
      const missing = (): string[] => [...acked].filter((key) => !(key in last.values));
      await eventually(async () => {
        last = await getValues(z.url, "js/**");
        return last.status === 200 && missing().length === 0;
      }, 30_000).catch(() => undefined);
      assert.equal(last.status, 200, `GET through ${where}: ${last.status} ${last.errors.join("; ")}`);
      assert.deepEqual(missing(), [], `acknowledged writes missing through ${where}`);
      for (const key of acked) assert.equal(last.values[key], key);
    }
    // Every acknowledged key is in the bucket, and the bucket really has 3 replicas.
    const nc = await connect({ servers: [cluster.urls[1]!, cluster.urls[2]!] });
    try {
      const jsm = await jetstreamManager(nc, { checkAPI: false, timeout: 10_000 });
      const info = await jsm.streams.info(`KV_${defaultBucket("js")}`);
      assert.equal(info.config.num_replicas, 3);
      const kv = await new Kvm(jsm.jetstream()).open(defaultBucket("js"));
      const notInBucket: string[] = [];
      for (const key of acked) {
        const e = await kv.get(keyToKvKey(key));
        if (e?.operation !== "PUT") notInBucket.push(key);
      }
      assert.deepEqual(notInBucket, [], "acknowledged writes missing from the bucket");
    } finally {
      await nc.close();
    }
    await cluster.restart(0);
    // The storage keeps working with the node back.
    assert.equal((await putText(j.url, "js/after", "ok")).status, 200);
    assert.deepEqual((await getValues(m.url, "js/after")).values, { "js/after": "ok" });
    const resent = (
      await Promise.all(
        [j, k, m].map(async (z) => Number((await routerStatus(z.url)).fabric.detail.samplesResent ?? 0)),
      )
    ).reduce((x, y) => x + y, 0);
    t.diagnostic(
      `${acked.size} PUTs acknowledged, ${failed} refused while the cluster failed over, ${resent} samples resent`,
    );
  });

  test("a router killed during a stream of PUTs holds writes up at most until it is forgotten, and loses none", async () => {
    const slowest: number[] = [];
    for (let i = 0; i < 150; i++) {
      if (i === 50) await k.kill9();
      const t0 = Date.now();
      const r = await putText(m.url, `s/${i}`, `v${i}`);
      slowest.push(Date.now() - t0);
      assert.equal(r.status, 200, `PUT s/${i}: ${r.status} ${r.text}`);
    }
    // A write waits for K (it might be reconnecting) until K is forgotten for its silence.
    assert.ok(Math.max(...slowest) < PEER_TIMEOUT_MS + 2_000, `slowest PUT took ${Math.max(...slowest)} ms`);
    const { status, values } = await getValues(m.url, "s/**");
    assert.equal(status, 200);
    assert.equal(Object.keys(values).length, 150);
    for (let i = 0; i < 150; i++) assert.equal(values[`s/${i}`], `v${i}`);
    await eventually(
      async () => !(await routerStatus(j.url)).fabric.detail.routers.includes("22"),
      PEER_TIMEOUT_MS + 2_000,
      "J to forget K",
    );
    assert.deepEqual((await routerStatus(m.url)).sessions, [{ peer: "11", whatami: "router" }]);
  });

  test("a router that loses NATS keeps serving locally, answers 503 for what remote routers should get, and reconnects", async () => {
    // M stores s/m/**, which J's s/** storage covers too.
    const created = await http(m.url, "PUT", "/@/router/local/config/plugins/storage_manager/storages/m_s", {
      body: '{key_expr:"s/m/**",volume:"memory"}',
    });
    assert.equal(created.status, 200, created.text);
    await eventually(
      async () =>
        (await putText(j.url, "s/m/0", "zero")).status === 200 &&
        (await getValues(m.url, "s/m/0")).values["s/m/0"] === "zero",
      5_000,
      "J to write to M's storage",
    );
    // J's s/** covers M's s/m/**: J replicates with it on s/m/** (docs/replication.md, "Nested storages").
    await eventually(
      async () => {
        const { entries } = await getJson(j.url, "/@/router/local/status/plugins/storage_manager/replication/s");
        const nested = (entries[0]?.value as { nested?: Array<{ key_expr: string; peers: string[] }> } | undefined)
          ?.nested;
        return nested?.some((n) => n.key_expr === "s/m/**" && n.peers.includes("33/m_s")) ?? false;
      },
      5_000,
      "J to replicate with M's storage",
    );

    for (let i = 0; i < cluster.nodes.length; i++) await cluster.kill9(i);
    await eventually(
      async () => !(await routerStatus(j.url)).fabric.connected,
      15_000,
      "J to notice the lost connection",
    );
    const t0 = Date.now();
    assert.equal((await putText(j.url, "s/offline", "still here")).status, 200);
    assert.deepEqual((await getValues(j.url, "s/offline")).values, { "s/offline": "still here" });
    assert.ok(Date.now() - t0 < 1_000, "local PUT and GET do not wait for NATS");
    const down = (await getValues(j.url, "@/router/local/health")).values["@/router/11/health"] as {
      status: string;
      fabric: { connected: boolean };
    };
    assert.equal(down.status, "degraded");
    assert.equal(down.fabric.connected, false);

    // Never a silent 200: M should get this write and cannot.
    const put = await putText(j.url, "s/m/1", "one");
    assert.equal(put.status, 503, put.text);
    assert.match(
      put.text,
      /not connected to NATS: router\(s\) 33 with a matching subscriber did not get the write on s\/m\/1; it reached this router's subscribers only/,
    );
    // A GET returns the local answers plus an error entry for M, with a non-200 status.
    const got = await getValues(j.url, "s/m/**");
    assert.equal(got.status, 503);
    assert.deepEqual(got.values, { "s/m/0": "zero", "s/m/1": "one" });
    assert.equal(got.errors[0], "router 33 cannot be reached: not connected to NATS");
    // J's storage answers s/m/** alone, cut off from M's while M was alive: it may be behind it
    // (M may take writes J does not hear of), and says so (docs/replication.md, "Known to be behind").
    assert.equal(got.errors.length, 2, got.errors.join("; "));
    assert.match(
      got.errors[1]!,
      /^storage s on router 11 may be behind its replicas \(cut off from the fabric while 33\/m_s was alive; /,
    );
    // A router that stayed alive while we were away is still known (its silence was ours), past
    // its peer timeout: checked every 250 ms.
    for (const end = Date.now() + PEER_TIMEOUT_MS + 500; Date.now() < end; ) {
      assert.ok(
        (await routerStatus(j.url)).fabric.detail.routers.includes("33"),
        "J forgot M while J itself was disconnected",
      );
      await sleep(250);
    }
    assert.equal((await putText(j.url, "s/m/2", "two")).status, 503);

    for (let i = 0; i < cluster.nodes.length; i++) await cluster.restart(i, { wait: false });
    await cluster.waitReady();
    for (const z of [j, m])
      await eventually(async () => (await routerStatus(z.url)).fabric.connected, 15_000, "reconnection");
    await eventually(
      async () => (await routerStatus(m.url)).fabric.detail.routers.includes("11"),
      10_000,
      "M to see J again",
    );
    const up = (await getValues(j.url, "@/router/local/health")).values["@/router/11/health"] as { status: string };
    assert.equal(up.status, "ok");
    // The key space is whole again: M reads J's storage, J writes to M's and reads it.
    assert.deepEqual((await getValues(m.url, "s/offline")).values, { "s/offline": "still here" });
    assert.equal((await http(m.url, "PUT", "/s/back", { body: "1" })).status, 200);
    await eventually(
      async () => (await putText(j.url, "s/m/3", "three")).status === 200,
      10_000,
      "J's PUTs to reach M again",
    );
    const again = await getValues(j.url, "s/m/3");
    assert.equal(again.status, 200, again.errors.join("; "));
    assert.deepEqual(again.values, { "s/m/3": "three" });
    assert.deepEqual((await getValues(m.url, "s/m/3")).values, { "s/m/3": "three" });
  });
});
