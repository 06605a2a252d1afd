/**
 * zest joined to zenoh's own router (docs/zenoh-network.md), in a loopback-only namespace:
 * matching status on both sides across the join, and access control and the admin space applied
 * to what comes in from the network.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { untilPasses } from "../support/assert.js";
import { openSse } from "../support/http.js";
import { zenohLocatorOf } from "../support/zest-process.js";
import { type Agent, pythonSkip, type ReplyJson, startAgent } from "../support/zenoh-python.js";
import { call, type PyProcess, startZenohClient, startZenohRouter } from "./join/python.js";
import { http, restEntries } from "./join/rest.js";
import { startJoinedZest, untilJoined } from "./join/routers.js";
import { freePort } from "../support/ports.js";

const skip = pythonSkip();

describe("zest's complete storages seen from the network", { skip }, () => {
  test("a storage with `complete` is declared complete: a python querier with target ALL_COMPLETE on the router's side matches it and reads it; one without is not", async () => {
    const port = await freePort();
    const endpoint = `tcp/127.0.0.1:${port}`;
    const router = await startZenohRouter(port);
    const zest = await startJoinedZest(endpoint, [
      "--cfg",
      'plugins/storage_manager:{storages:{full:{key_expr:"jcpl/full/**",volume:"memory",complete:true},part:{key_expr:"jcpl/part/**",volume:"memory"}}}',
    ]);
    const py: Agent = await startAgent("client", endpoint);
    const matches = async (name: string) =>
      (await py.call<{ matching: boolean }>("matching_status", { name })).matching;
    const octets = { "content-type": "application/octet-stream" };
    try {
      await py.call("querier", { name: "full", key: "jcpl/full/a", target: "ALL_COMPLETE", timeout: 5 });
      await py.call("querier", { name: "part", key: "jcpl/part/a", target: "ALL_COMPLETE", timeout: 5 });
      await py.call("querier", { name: "part-all", key: "jcpl/part/a", target: "ALL", timeout: 5 });
      await untilPasses(async () => assert.equal(await matches("full"), true), 15_000);
      // The other storage is declared too (an ALL querier matches it), but not complete.
      await untilPasses(async () => assert.equal(await matches("part-all"), true), 15_000);
      assert.equal(await matches("part"), false);
      assert.equal((await http("PUT", `${zest.url}/jcpl/full/a`, "kept by zest", octets)).status, 200);
      assert.equal((await http("PUT", `${zest.url}/jcpl/part/a`, "kept too", octets)).status, 200);
      const full = await py.call<{ replies: ReplyJson[] }>("querier_get", { name: "full" });
      assert.deepEqual(
        full.replies.map((r) => `${r.ok?.key}=${r.ok?.payload.text}`),
        ["jcpl/full/a=kept by zest"],
      );
      // zenoh's ALL_COMPLETE reaches complete queryables that include the whole key expression queried.
      const allComplete = async (selector: string) =>
        (await py.call<{ replies: ReplyJson[] }>("get", { selector, target: "ALL_COMPLETE", timeout: 5 })).replies.map(
          (r) => `${r.ok?.key}=${r.ok?.payload.text}`,
        );
      assert.deepEqual(await allComplete("jcpl/full/*"), ["jcpl/full/a=kept by zest"]);
      assert.deepEqual(await allComplete("jcpl/part/*"), []);
      assert.deepEqual(await allComplete("jcpl/**"), []);
      // A complete storage made at run time is declared complete; replaced by one that is not, no longer.
      const admin = `${zest.url}/@/router/local/config/plugins/storage_manager/storages/late`;
      const json = { "content-type": "application/json" };
      await py.call("querier", { name: "late", key: "jcpl/late/x", target: "ALL_COMPLETE", timeout: 5 });
      assert.equal(await matches("late"), false);
      let r = await http("PUT", admin, '{"key_expr":"jcpl/late/**","volume":"memory","complete":true}', json);
      assert.equal(r.status, 200, r.text);
      await untilPasses(async () => assert.equal(await matches("late"), true), 15_000);
      r = await http("PUT", admin, '{"key_expr":"jcpl/late/**","volume":"memory"}', json);
      assert.equal(r.status, 200, r.text);
      await untilPasses(async () => assert.equal(await matches("late"), false), 15_000);
      assert.deepEqual(await restEntries(`${zest.url}/jcpl/full/**`), ["jcpl/full/a=kept by zest"]);
    } finally {
      await py.stop();
      await zest.stop();
      await router.stop();
    }
  });
});

describe("matching status across the join", { skip }, () => {
  test("a python publisher on either side matches while a subscriber on the other side exists, and stops matching when it goes", async () => {
    const port = await freePort();
    const endpoint = `tcp/127.0.0.1:${port}`;
    const router = await startZenohRouter(port);
    // No storage on **: it would match every publisher. An SSE key expression lingers 5 minutes
    // after its last stream by default (for resume, docs/sse.md): here it goes with the stream.
    const zest = await startJoinedZest(endpoint, [
      "--cfg",
      "plugins/rest/sse/resume_linger_ms:0",
      "--cfg",
      "plugins/storage_manager:{storages:{}}",
    ]);
    const onRouter = await startZenohClient(endpoint);
    const onZest = await startZenohClient(zenohLocatorOf(zest));
    const matching = async (c: PyProcess, key: string) => (await call(c, { op: "matching", key })).matching;
    try {
      // Router side publisher, SSE client on zest.
      await call(onRouter, { op: "pub", key: "jm/a" });
      assert.equal(await matching(onRouter, "jm/a"), false);
      const sse = await openSse(`${zest.url}/jm/a`);
      await untilPasses(async () => assert.equal(await matching(onRouter, "jm/a"), true), 10_000);
      sse.close();
      await untilPasses(async () => assert.equal(await matching(onRouter, "jm/a"), false), 10_000);
      // zest side publisher (a python client of zest's listener), python subscriber on the router side.
      await call(onZest, { op: "pub", key: "jm/b" });
      assert.equal(await matching(onZest, "jm/b"), false);
      await call(onRouter, { op: "sub", key: "jm/**" });
      await untilPasses(async () => assert.equal(await matching(onZest, "jm/b"), true), 10_000);
      await call(onRouter, { op: "unsub", key: "jm/**" });
      await untilPasses(async () => assert.equal(await matching(onZest, "jm/b"), false), 10_000);
    } finally {
      await onRouter.stop();
      await onZest.stop();
      await zest.stop();
      await router.stop();
    }
  });
});

describe("access control and the admin space on what comes from the network", { skip }, () => {
  test("a put and a get from the router side that zest's rules refuse do nothing; @/… stays zest's", async () => {
    const port = await freePort();
    const endpoint = `tcp/127.0.0.1:${port}`;
    const router = await startZenohRouter(port);
    // Everything allowed, except put and query on secret/** from the network (the router's zid).
    const acl = {
      enabled: true,
      default_permission: "allow",
      rules: [
        {
          id: "no-secret",
          messages: ["put", "delete", "query"],
          key_exprs: ["secret/**"],
          permission: "deny",
          flows: ["ingress"],
        },
      ],
      subjects: [{ id: "network", zids: [router.zid] }],
      policies: [{ rules: ["no-secret"], subjects: ["network"] }],
    };
    const zest = await startJoinedZest(endpoint, ["--cfg", `access_control:${JSON.stringify(acl)}`]);
    const c = await startZenohClient(endpoint);
    try {
      await untilJoined(zest.url, 15_000);
      // zest's own client (REST, loopback, no zid) may write secret/**; the network may not read it.
      assert.equal((await http("PUT", `${zest.url}/secret/a`, "zest's", { "content-type": "text/plain" })).status, 200);
      assert.equal((await http("PUT", `${zest.url}/open/a`, "shared", { "content-type": "text/plain" })).status, 200);
      await untilPasses(async () => {
        const done = await call(c, { op: "get", selector: "open/**" });
        assert.deepEqual(done.replies, [{ key: "open/a", value: "shared" }]);
      });
      const secret = await call(c, { op: "get", selector: "secret/**" });
      assert.deepEqual(
        (secret.replies as Array<{ key?: string }>).filter((r) => r.key !== undefined),
        [],
        "a refused get reads nothing",
      );
      // A put from the network on secret/** never enters zest; one on open/** does.
      await call(c, { op: "put", key: "secret/a", value: "overwritten?" });
      await call(c, { op: "put", key: "open/b", value: "from python" });
      await untilPasses(async () => assert.deepEqual(await restEntries(`${zest.url}/open/b`), ["open/b=from python"]));
      // zest's text value, as zest's own client wrote it (REST renders text as it is).
      const kept = JSON.parse((await http("GET", `${zest.url}/secret/a`)).text) as Array<{ value: unknown }>;
      assert.deepEqual(
        kept.map((e) => e.value),
        ["zest's"],
      );
      // The admin space is never declared to the network: a get on @/** from the router side
      // reaches nothing of zest's (the router's own admin space answers with its zid only).
      const admin = await call(c, { op: "get", selector: "@/**" });
      const keys = (admin.replies as Array<{ key?: string }>).map((r) => r.key ?? "");
      const zestAdmin = (await http("GET", `${zest.url}/@/router/local`)).text;
      const zestId = (JSON.parse(zestAdmin) as Array<{ key: string }>)[0]!.key.split("/")[2]!;
      assert.ok(
        keys.every((k) => !k.toLowerCase().includes(zestId.toLowerCase())),
        `zest's admin space reached the network: ${keys.join(", ")}`,
      );
      // Nor can the network write it: a put on zest's admin space from the router side is not applied.
      await call(c, {
        op: "put",
        key: `@/router/${zestId}/config/plugins/storage_manager/storages/fromnet`,
        value: '{"key_expr":"fromnet/**","volume":"memory"}',
      });
      await new Promise((r) => setTimeout(r, 500));
      const storages = await http("GET", `${zest.url}/@/router/local/status/plugins/storage_manager/storages/*`);
      assert.doesNotMatch(storages.text, /fromnet/);
    } finally {
      await c.stop();
      await zest.stop();
      await router.stop();
    }
  });
});
