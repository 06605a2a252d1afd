/**
 * Replication at its edges, with real processes: one nats-server, router AA (Variant A) with
 * memory storages on `d/**` and `a/*\/c`, router BB (Variant B) with ones on `d/x/**` (nested in
 * AA's) and `a/b/*` (intersecting AA's). What the admin spaces show, that the nested and the
 * intersecting storages converge, and that no client reaches `@repl/**`.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { fabricTimings, NO_STORAGES, putText, routerStatus, untilRoutersMeet } from "../../fabric/helpers.js";
import { getJson, getWithBody, http } from "../../support/http.js";
import { type NatsCluster, startNatsCluster } from "../../support/nats-cluster.js";
import { startTcpProxy, type TcpProxy } from "../../support/tcp-proxy.js";
import { startZest, type ZestProcess } from "../../support/zest-process.js";
import { replicaSpace } from "../../../src/storage/replication/replicator.js";
import { eventually } from "../../support/wait.js";

const TIMINGS = { heartbeatMs: 250, peerTimeoutMs: 1_500, ackTimeoutMs: 2_500 };
const REPLICATION = "{interval:2,sub_intervals:4,hot:3,warm:5,propagation_delay:100}";
const STATUS_A = "/@/router/local/status/plugins/storage_manager/replication/d";
const STATUS_B = "/@/router/local/plugin/storages/backend/memory/storage/d/replication";
const STATUS_AC = "/@/router/local/status/plugins/storage_manager/replication/ac";
const STATUS_AB = "/@/router/local/plugin/storages/backend/memory/storage/ab/replication";

interface Health {
  peers: string[];
  behind: boolean;
  keys_repaired: number;
  log: { keys: number; fingerprint: string };
  nested?: Array<Health & { key_expr: string }>;
  intersecting?: Array<Health & { key_expr: string }>;
}

describe("replication's edges: nested storages, Variant B's admin space, @repl/** closed to clients", () => {
  let nats: NatsCluster;
  let proxy: TcpProxy;
  let p: ZestProcess;
  let q: ZestProcess;

  before(async () => {
    nats = await startNatsCluster({ size: 1, jetstream: false });
    proxy = await startTcpProxy(Number(new URL(nats.urls[0]!).port));
    const common = [...fabricTimings(TIMINGS), "--cfg", "fabric/nats/reconnect_time_wait_ms:100", ...NO_STORAGES];
    [p, q] = await Promise.all([
      startZest([
        "--id",
        "AA",
        "--nats",
        nats.urls[0]!,
        ...common,
        "--cfg",
        `plugins/storage_manager/storages/d:{key_expr:"d/**",volume:"memory",replication:${REPLICATION}}`,
        "--cfg",
        `plugins/storage_manager/storages/ac:{key_expr:"a/*/c",volume:"memory",replication:${REPLICATION}}`,
      ]),
      startZest([
        "--id",
        "BB",
        "--rest-variant",
        "b",
        "--nats",
        proxy.url,
        ...common,
        "--cfg",
        `plugins/storage_manager/storages/d:{key_expr:"d/x/**",volume:"memory",replication:${REPLICATION}}`,
        "--cfg",
        `plugins/storage_manager/storages/ab:{key_expr:"a/b/*",volume:"memory",replication:${REPLICATION}}`,
      ]),
    ]);
    await untilRoutersMeet([p.url], 1);
  });

  after(async () => {
    await Promise.all([p?.stop(), q?.stop()]);
    await proxy?.close();
    await nats?.stop();
  });

  async function healthA(): Promise<Health> {
    return (await getJson(p.url, STATUS_A)).entries[0]!.value as Health;
  }

  async function healthB(): Promise<Health | undefined> {
    const { entries } = await getJson(q.url, STATUS_B);
    return entries[0]?.value as Health | undefined;
  }

  test("Variant B shows each storage's replication health below it, read-only, as Variant A does", async () => {
    await eventually(async () => (await healthB())?.peers.join() === "AA/d", 5_000, "BB to see AA's nested replica");
    const h = (await healthB())!;
    assert.equal(h.behind, false);
    assert.equal(typeof h.log.fingerprint, "string");
    // `storage/*` still lists one entry per storage.
    const { entries } = await getJson(q.url, "/@/router/local/plugin/storages/backend/memory/storage/*");
    assert.deepEqual(entries.map((e) => e.key).sort(), [
      "/@/router/bb/plugin/storages/backend/memory/storage/ab",
      "/@/router/bb/plugin/storages/backend/memory/storage/d",
    ]);
    const put = await http(q.url, "PUT", STATUS_B, { body: "{}" });
    assert.equal(put.status, 403, put.text);
  });

  test("nested storages on two routers converge on the keys both cover after a cut, and the wider one shows it", async () => {
    await eventually(
      async () => (await healthA()).nested?.[0]?.peers.join() === "BB/d",
      5_000,
      "AA to replicate with BB on d/x/**",
    );
    proxy.cut();
    await eventually(
      async () => !(await routerStatus(p.url)).fabric.detail.routers.includes("BB"),
      5_000,
      "AA to forget BB",
    );
    for (let i = 0; i < 10; i++) assert.equal((await putText(p.url, `d/x/cut/${i}`, `v${i}`)).status, 200);
    assert.equal((await putText(p.url, "d/y/outside", "v")).status, 200);
    proxy.heal();
    await eventually(
      async () => {
        const [a, b] = [await healthA(), await healthB()];
        const nested = a.nested?.[0];
        return (
          nested !== undefined &&
          b !== undefined &&
          !nested.behind &&
          !b.behind &&
          nested.log.fingerprint === b.log.fingerprint &&
          b.log.keys >= 10
        );
      },
      10_000,
      "the nested storages to converge",
    );
    assert.equal((await healthA()).nested![0]!.key_expr, "d/x/**");
    assert.ok((await healthB())!.keys_repaired >= 10);
  });

  test("storages on a/*/c and a/b/* on two routers converge on a/b/c after a cut, and nothing else crosses", async () => {
    const health = async (url: string, path: string) =>
      ((await getJson(url, path)).entries[0]?.value as Health | undefined)?.intersecting?.[0];
    await eventually(
      async () =>
        (await health(p.url, STATUS_AC))?.peers.join() === "BB/ab" &&
        (await health(q.url, STATUS_AB))?.peers.join() === "AA/ac",
      5_000,
      "AA and BB to replicate the keys both cover",
    );
    proxy.cut();
    await eventually(
      async () => !(await routerStatus(p.url)).fabric.detail.routers.includes("BB"),
      5_000,
      "AA to forget BB",
    );
    assert.equal((await putText(p.url, "a/b/c", "cut")).status, 200);
    assert.equal((await putText(p.url, "a/x/c", "only AA")).status, 200);
    proxy.heal();
    await eventually(
      async () => {
        const [a, b] = [await health(p.url, STATUS_AC), await health(q.url, STATUS_AB)];
        return (
          a !== undefined &&
          b !== undefined &&
          !a.behind &&
          !b.behind &&
          b.log.keys === 1 &&
          a.log.fingerprint === b.log.fingerprint
        );
      },
      10_000,
      "the intersecting storages to converge",
    );
    const [a, b] = [(await health(p.url, STATUS_AC))!, (await health(q.url, STATUS_AB))!];
    assert.equal(a.key_expr, "a/b/*");
    assert.equal(b.key_expr, "a/*/c");
    assert.equal(a.log.keys, 1, "AA's second log holds a/b/c only, not a/x/c");
    // BB's log follows what its storage applied: a/b/c reached BB's storage by a repair.
    assert.ok(b.keys_repaired >= 1);
  });

  test("no REST client reaches the alignment queryables under @repl/**: 403, with or without a message body", async () => {
    const align = `/${replicaSpace("d/x/**")}/align/BB/d`;
    for (const url of [p.url, q.url]) {
      for (const path of ["/@repl/**", align, "/@repl/ke/**"]) {
        const r = await http(url, "GET", path);
        assert.equal(r.status, 403, `${url}${path}: ${r.text}`);
      }
      // A digest message (type 1) as the body: still refused before any queryable sees it.
      const withBody = await getWithBody(url, align, "\u0001");
      assert.equal(withBody.status, 403, withBody.text);
    }
    // `**` never reached them (`@` chunks are verbatim), and still does not.
    const { entries } = await getJson(p.url, "/**");
    assert.ok(!entries.some((e) => String(e.key).startsWith("@repl")));
  });
});
