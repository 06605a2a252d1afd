/**
 * Replicas across a partition, with real processes: one nats-server, two `zest` routers that
 * reach it through TCP proxies the test cuts and heals, each with a memory storage on `d/**` and
 * a SQLite storage on `s/**` (replication on, the default with a fabric).
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { fabricTimings, NO_STORAGES, putText, routerStatus, untilRoutersMeet } from "../../fabric/helpers.js";
import { getJson, http } from "../../support/http.js";
import { type NatsCluster, startNatsCluster } from "../../support/nats-cluster.js";
import { startTcpProxy, type TcpProxy } from "../../support/tcp-proxy.js";
import { startZest, type ZestProcess } from "../../support/zest-process.js";
import { eventually } from "../../support/wait.js";

const TIMINGS = { heartbeatMs: 250, peerTimeoutMs: 1_500, ackTimeoutMs: 2_500 };
/** A short interval, so that the periodic safety net also runs within the test. */
const REPLICATION = "{interval:2,sub_intervals:4,hot:3,warm:5,propagation_delay:100}";
const STATUS = "/@/router/local/status/plugins/storage_manager/replication";

interface Router {
  readonly id: string;
  readonly proxy: TcpProxy;
  readonly args: string[];
  z: ZestProcess;
}

interface Entry {
  key: string;
  value: unknown;
  time: string;
}

interface ReplicaHealth {
  behind: boolean;
  keys_repaired: number;
  last_exchange: string | null;
  log: { keys: number; tombstones: number; fingerprint: string };
}

describe("replicas across a partition (real nats-server, real routers, a TCP proxy)", () => {
  let nats: NatsCluster;
  let dir: string;
  let a: Router;
  let b: Router;

  async function router(id: string): Promise<Router> {
    const proxy = await startTcpProxy(Number(new URL(nats.urls[0]!).port));
    const db = join(dir, `${id}.db`);
    const args = [
      "--id",
      id,
      "--nats",
      proxy.url,
      ...fabricTimings(TIMINGS),
      "--cfg",
      "fabric/nats/reconnect_time_wait_ms:100",
      ...NO_STORAGES,
      "--cfg",
      `plugins/storage_manager/storages/d:{key_expr:"d/**",volume:"memory",replication:${REPLICATION}}`,
      "--cfg",
      `plugins/storage_manager/storages/s:{key_expr:"s/**",volume:{id:"sqlite",path:${JSON.stringify(db)}},replication:${REPLICATION}}`,
    ];
    return { id, proxy, args, z: await startZest(args) };
  }

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), "zest-repl-"));
    nats = await startNatsCluster({ size: 1, jetstream: false });
    [a, b] = await Promise.all([router("AA"), router("BB")]);
    await untilRoutersMeet([a.z.url], 1);
  });

  after(async () => {
    await Promise.all([a?.z.stop(), b?.z.stop()]);
    await Promise.all([a?.proxy.close(), b?.proxy.close()]);
    await nats?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  async function connected(r: Router): Promise<boolean> {
    return (await routerStatus(r.z.url)).fabric.connected;
  }

  /** Cuts `r` from NATS and waits until the other router has forgotten it. */
  async function partition(r: Router, other: Router): Promise<void> {
    r.proxy.cut();
    await eventually(async () => !(await connected(r)), 5_000, `${r.id} to see the cut`);
    await eventually(
      async () => !(await routerStatus(other.z.url)).fabric.detail.routers.includes(r.id),
      5_000,
      `${other.id} to forget ${r.id}`,
    );
  }

  async function heal(r: Router): Promise<void> {
    r.proxy.heal();
    await eventually(() => connected(r), 5_000, `${r.id} to reconnect`);
  }

  async function health(r: Router, storage: string): Promise<ReplicaHealth> {
    const { entries } = await getJson(r.z.url, `${STATUS}/${storage}`);
    return entries[0]!.value as ReplicaHealth;
  }

  /** What `r`'s own storage holds under `selector`: read while it is cut off, so no other router answers. */
  async function replicaView(r: Router, selector: string): Promise<Entry[]> {
    r.proxy.cut();
    try {
      await eventually(async () => !(await connected(r)), 5_000, `${r.id} to see the cut`);
      const { entries } = await getJson(r.z.url, `/${selector}`);
      return (entries as unknown as Entry[])
        .filter((e) => e.key !== "ERROR")
        .map((e) => ({ key: e.key, value: e.value, time: e.time }));
    } finally {
      await heal(r);
    }
  }

  /** Waits until both replicas of `storage` say they are up to date and hold as many events. */
  async function converged(storage: string, timeoutMs = 10_000): Promise<void> {
    await eventually(
      async () => {
        const [ha, hb] = await Promise.all([health(a, storage), health(b, storage)]);
        return (
          !ha.behind &&
          !hb.behind &&
          ha.log.keys === hb.log.keys &&
          ha.log.tombstones === hb.log.tombstones &&
          ha.log.fingerprint === hb.log.fingerprint &&
          ha.last_exchange !== null &&
          hb.last_exchange !== null
        );
      },
      timeoutMs,
      `${storage} to converge`,
    );
  }

  async function put(r: Router, key: string, value: string): Promise<void> {
    const res = await putText(r.z.url, key, value);
    assert.equal(res.status, 200, `PUT ${key} on ${r.id}: ${res.text}`);
  }

  async function del(r: Router, key: string): Promise<void> {
    const res = await http(r.z.url, "DELETE", `/${key}`);
    assert.equal(res.status, 200, `DELETE ${key} on ${r.id}: ${res.text}`);
  }

  test("puts and deletes made on one side during a cut reach the other after the heal, with their timestamps, and no deleted key comes back", async () => {
    for (let i = 0; i < 20; i++) await put(a, `d/one/${i}`, `v${i}`);
    for (let i = 0; i < 5; i++) await del(a, `d/one/${i}`);
    await partition(b, a);
    for (let i = 20; i < 70; i++) await put(a, `d/one/${i}`, `v${i}`);
    for (let i = 5; i < 10; i++) await del(a, `d/one/${i}`);
    for (let i = 10; i < 15; i++) await put(a, `d/one/${i}`, `changed ${i}`);
    assert.equal((await health(b, "d")).behind, true, "the cut-off replica knows it is behind");
    await heal(b);
    await converged("d");
    const [va, vb] = [await replicaView(a, "d/one/**"), await replicaView(b, "d/one/**")];
    assert.equal(va.length, 60);
    assert.deepEqual(vb, va);
    assert.ok(!vb.some((e) => /^d\/one\/[0-9]$/.test(e.key)), "no deleted key is back");
    assert.ok((await health(b, "d")).keys_repaired >= 60);
  });

  test("writes on both sides of a cut converge to the newest write of each key on both replicas", async () => {
    await put(a, "d/two/x", "a0");
    await put(a, "d/two/y", "a0");
    await put(a, "d/two/z", "a0");
    await partition(b, a);
    await put(a, "d/two/x", "a1");
    // B writes while cut off: its own storage takes it, and the PUT says the others did not.
    assert.equal((await putText(b.z.url, "d/two/y", "b1")).status, 503);
    assert.equal((await putText(b.z.url, "d/two/only-b", "b")).status, 503);
    assert.equal((await http(b.z.url, "DELETE", "/d/two/z")).status, 503);
    await del(a, "d/two/y"); // newer than B's put of y: the delete wins
    await put(a, "d/two/only-a", "a");
    await heal(b);
    await converged("d");
    const [va, vb] = [await replicaView(a, "d/two/**"), await replicaView(b, "d/two/**")];
    assert.deepEqual(vb, va);
    assert.deepEqual(
      va.map((e) => [e.key, e.value]),
      [
        ["d/two/only-a", "a"],
        ["d/two/only-b", "b"],
        ["d/two/x", "a1"],
      ],
    );
  });

  test("a router restarted with its SQLite file after missing writes catches up", async () => {
    for (let i = 0; i < 10; i++) await put(a, `s/k/${i}`, `v${i}`);
    await converged("s");
    await b.z.stop();
    await eventually(
      async () => !(await routerStatus(a.z.url)).fabric.detail.routers.includes("BB"),
      5_000,
      "A to forget B",
    );
    for (let i = 10; i < 30; i++) await put(a, `s/k/${i}`, `v${i}`);
    for (let i = 0; i < 3; i++) await del(a, `s/k/${i}`);
    b.z = await startZest(b.args);
    await converged("s");
    const [va, vb] = [await replicaView(a, "s/k/**"), await replicaView(b, "s/k/**")];
    assert.equal(va.length, 27);
    assert.deepEqual(vb, va);
  });

  test("failover: once the router that took the writes is killed, the other serves every acknowledged write", async () => {
    await partition(b, a);
    const acked: string[] = [];
    for (let i = 0; i < 50; i++) {
      await put(a, `d/fail/${i}`, `v${i}`);
      acked.push(`d/fail/${i}`);
    }
    await heal(b);
    await converged("d");
    await a.z.kill9();
    await eventually(
      async () => !(await routerStatus(b.z.url)).fabric.detail.routers.includes("AA"),
      5_000,
      "B to forget A",
    );
    const { status, entries } = await getJson(b.z.url, "/d/fail/**");
    assert.equal(status, 200, JSON.stringify(entries));
    assert.deepEqual(entries.map((e) => e.key).sort(), [...acked].sort());
  });
});
