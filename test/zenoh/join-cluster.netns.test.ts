/**
 * Two zest routers over a real nats-server, only one of them joined to zenoh's own router (the
 * zenoh-rust runtime of the `eclipse-zenoh` wheel, router mode), with zenoh-python clients on the
 * router's side (docs/zenoh-network.md, "Clusters"): the router that did not join reaches the
 * network through the joined one, its gets and its puts, each once; and the joined router declares
 * to the network the queryables the other holds, by key expression and completeness, and the
 * subscribers it holds (SSE streams, storages) by key expression, so that the network sends zest
 * only what a zest router wants.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { untilPasses } from "../support/assert.js";
import { openSse } from "../support/http.js";
import { type NatsCluster, startNatsCluster } from "../support/nats-cluster.js";
import {
  type Agent,
  type AgentLine,
  pythonSkip,
  type ReplyJson,
  type SampleEvent,
  startAgent,
} from "../support/zenoh-python.js";
import { startZest, type ZestProcess, zenohLocatorOf } from "../support/zest-process.js";
import { type PyProcess, startZenohRouter } from "./join/python.js";
import { freePort } from "../support/ports.js";
import { connectStatus, http, restEntries } from "./join/rest.js";

const skip = pythonSkip();

/** The same memory storage on `jc/**` on both routers, no replication: each holds what the fabric brings it. */
const STORAGE = 'plugins/storage_manager:{storages:{jc:{key_expr:"jc/**",volume:"memory",replication:false}}}';

describe("two zest routers over NATS, one joined to zenoh's router", { skip }, () => {
  let nats: NatsCluster;
  let router: PyProcess & { zid: string };
  let joined: ZestProcess;
  let other: ZestProcess;
  let endpoint: string;

  before(async () => {
    nats = await startNatsCluster({ size: 1, jetstream: false });
    const port = await freePort();
    endpoint = `tcp/127.0.0.1:${port}`;
    router = await startZenohRouter(port);
    const common = ["--nats", nats.urls[0]!, "-l", "tcp/127.0.0.1:0", "--no-multicast-scouting", "--cfg", STORAGE];
    joined = await startZest(["-e", endpoint, ...common]);
    other = await startZest(common);
    await untilPasses(async () => assert.equal((await connectStatus(joined.url)).state, "open"), 15_000);
  });
  after(async () => {
    await other?.stop();
    await joined?.stop();
    await router?.stop();
    await nats?.stop();
  });

  test("a REST GET on the router that did not join reads a python queryable on the router's side, consolidated with zest's storages, the queryable asked once", async () => {
    const py = await startAgent("client", endpoint);
    const onOther = await startAgent("client", zenohLocatorOf(other));
    try {
      await py.call("queryable", { name: "q", key: "jc/py/**", replies: [{ key: "jc/py/a", payload: "from python" }] });
      const put = await http("PUT", `${other.url}/jc/zest/b`, "from zest", {
        "content-type": "application/octet-stream",
      });
      assert.equal(put.status, 200);
      // The queryable is declared to the joined router, then to the fabric, on their own time.
      for (const z of [joined, other])
        await untilPasses(
          async () =>
            assert.deepEqual(await restEntries(`${z.url}/jc/**`), ["jc/py/a=from python", "jc/zest/b=from zest"]),
          20_000,
        );
      const asked = () => py.events<AgentLine>((e) => e.ev === "query" && e.name === "q").length;
      for (const z of [other, joined]) {
        const before = asked();
        assert.deepEqual(await restEntries(`${z.url}/jc/**`), ["jc/py/a=from python", "jc/zest/b=from zest"]);
        await new Promise((r) => setTimeout(r, 500));
        assert.equal(asked() - before, 1, `queries on the python queryable for one GET on ${z.url}`);
      }
      // Unconsolidated, as a zenoh client on the router that did not join sees them: python's reply once.
      const r = await onOther.call<{ replies: ReplyJson[] }>("get", {
        selector: "jc/py/**",
        target: "ALL",
        consolidation: "NONE",
        timeout: 5,
      });
      assert.deepEqual(
        r.replies.map((x) => `${x.ok?.key}=${x.ok?.payload.text}`),
        ["jc/py/a=from python"],
      );
    } finally {
      await onOther.stop();
      await py.stop();
    }
  });

  test("a REST PUT on the router that did not join reaches a python subscriber on the router's side, once", async () => {
    const py: Agent = await startAgent("client", endpoint);
    try {
      await py.call("sub", { name: "s", key: "jc/sub/**" });
      let n = 0;
      await untilPasses(async () => {
        await http("PUT", `${other.url}/jc/sub/warm${++n}`, "w", { "content-type": "text/plain" });
        await py.waitSample("s", undefined, 300);
      }, 20_000);
      await new Promise((r) => setTimeout(r, 300));
      const seen = py.events((e) => e.ev === "sample").length;
      const put = await http("PUT", `${other.url}/jc/sub/last`, "the last", { "content-type": "text/plain" });
      assert.equal(put.status, 200);
      await py.waitSample("s", "jc/sub/last");
      await new Promise((r) => setTimeout(r, 500));
      const after = py.events<SampleEvent>((e) => e.ev === "sample").slice(seen);
      assert.deepEqual(
        after.map((s) => `${s.key}=${s.payload.text}`),
        ["jc/sub/last=the last"],
      );
    } finally {
      await py.stop();
    }
  });
  test("the joined router declares the other router's storages to the network by key expression, complete when they are, and withdraws them with the last", async () => {
    const py: Agent = await startAgent("client", endpoint);
    const matches = async (name: string) =>
      (await py.call<{ matching: boolean }>("matching_status", { name })).matching;
    const admin = `${other.url}/@/router/local/config/plugins/storage_manager/storages/jcc`;
    const json = { "content-type": "application/json" };
    try {
      await py.call("querier", { name: "complete", key: "jcc/x", target: "ALL_COMPLETE", timeout: 5 });
      await py.call("querier", { name: "any", key: "jcc/x", target: "ALL", timeout: 5 });
      await py.call("querier", { name: "nobody", key: "jcnone/x", target: "ALL", timeout: 5 });
      // The other router's `jc/**` storage is declared already (the other tests read through it).
      await py.call("querier", { name: "jc", key: "jc/x", target: "ALL", timeout: 5 });
      await untilPasses(async () => assert.equal(await matches("jc"), true), 20_000);
      assert.equal(await matches("complete"), false);
      let r = await http("PUT", admin, '{"key_expr":"jcc/**","volume":"memory","complete":true}', json);
      assert.equal(r.status, 200, r.text);
      await untilPasses(async () => assert.equal(await matches("complete"), true), 20_000);
      assert.equal(await matches("any"), true);
      // No zest router holds this key expression: nothing declared covers it (it was `**` before).
      assert.equal(await matches("nobody"), false);
      const put = await http("PUT", `${other.url}/jcc/x`, "kept by the other router", {
        "content-type": "application/octet-stream",
      });
      assert.equal(put.status, 200);
      const got = await py.call<{ replies: ReplyJson[] }>("querier_get", { name: "complete" });
      assert.deepEqual(
        got.replies.map((x) => `${x.ok?.key}=${x.ok?.payload.text}`),
        ["jcc/x=kept by the other router"],
      );
      // Replaced by a storage that is not complete: declared again, no longer complete.
      r = await http("PUT", admin, '{"key_expr":"jcc/**","volume":"memory"}', json);
      assert.equal(r.status, 200, r.text);
      await untilPasses(async () => assert.equal(await matches("complete"), false), 20_000);
      assert.equal(await matches("any"), true);
      // Removed: the last queryable on `jcc/**` is gone, so is the declaration.
      r = await http("DELETE", admin);
      assert.equal(r.status, 200, r.text);
      await untilPasses(async () => assert.equal(await matches("any"), false), 20_000);
      assert.equal(await matches("jc"), true);
    } finally {
      await py.stop();
    }
  });

  test("the joined router declares the other router's subscribers to the network by key expression: a python publisher matches a key only the other's SSE stream or storage wants, not a key no zest router wants, and its put reaches the SSE client once", async () => {
    const py: Agent = await startAgent("client", endpoint);
    const matches = async (name: string) =>
      (await py.call<{ matching: boolean }>("matching_status", { name })).matching;
    const admin = `${other.url}/@/router/local/config/plugins/storage_manager/storages/jcsub`;
    const json = { "content-type": "application/json" };
    try {
      await py.call("pub", { name: "wanted", key: "jcs/sse/a", encoding: "text/plain" });
      await py.call("pub", { name: "nobody", key: "jcsnone/x" });
      await py.call("pub", { name: "stored", key: "jcs/store/x" });
      // No zest router wants these keys yet: nothing declared covers them (it was ** before).
      assert.equal(await matches("wanted"), false);
      assert.equal(await matches("nobody"), false);
      const sse = await openSse(`${other.url}/jcs/sse/a`);
      try {
        await untilPasses(async () => assert.equal(await matches("wanted"), true), 20_000);
        assert.equal(await matches("nobody"), false);
        assert.equal(await matches("stored"), false);
        await py.call("pub_put", { name: "wanted", payload: "from python" });
        const [event] = await sse.next(1, 10_000);
        assert.equal(event?.event, "PUT");
        assert.equal((JSON.parse(event!.data) as { value: unknown }).value, "from python");
        await new Promise((r) => setTimeout(r, 500));
        await assert.rejects(sse.next(1, 200), /expected 1 SSE events, got 0/);
      } finally {
        sse.close();
      }
      // A storage made at run time on the other router is wanted; removed, its key no longer is.
      let r = await http("PUT", admin, '{"key_expr":"jcs/store/**","volume":"memory"}', json);
      assert.equal(r.status, 200, r.text);
      await untilPasses(async () => assert.equal(await matches("stored"), true), 20_000);
      await py.call("pub_put", { name: "stored", payload: "kept by the other router" });
      await untilPasses(
        async () =>
          assert.deepEqual(await restEntries(`${other.url}/jcs/store/**`), ["jcs/store/x=kept by the other router"]),
        10_000,
      );
      r = await http("DELETE", admin);
      assert.equal(r.status, 200, r.text);
      await untilPasses(async () => assert.equal(await matches("stored"), false), 20_000);
      assert.equal(await matches("nobody"), false);
    } finally {
      await py.stop();
    }
  });
});
