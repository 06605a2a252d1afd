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
import { pythonSkip } from "../support/zenoh-python.js";
import { call, type PyProcess, startZenohClient, startZenohRouter } from "./join/python.js";
import { httpUrl, untilJoined, restEntries, startJoinedZest } from "./join/routers.js";
import { freePort } from "../support/ports.js";

const skip = pythonSkip();

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
      assert.equal(
        (await httpUrl("PUT", `${zest.url}/secret/a`, "zest's", { "content-type": "text/plain" })).status,
        200,
      );
      assert.equal(
        (await httpUrl("PUT", `${zest.url}/open/a`, "shared", { "content-type": "text/plain" })).status,
        200,
      );
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
      const kept = JSON.parse((await httpUrl("GET", `${zest.url}/secret/a`)).text) as Array<{ value: unknown }>;
      assert.deepEqual(
        kept.map((e) => e.value),
        ["zest's"],
      );
      // The admin space is never declared to the network: a get on @/** from the router side
      // reaches nothing of zest's (the router's own admin space answers with its zid only).
      const admin = await call(c, { op: "get", selector: "@/**" });
      const keys = (admin.replies as Array<{ key?: string }>).map((r) => r.key ?? "");
      const zestAdmin = (await httpUrl("GET", `${zest.url}/@/router/local`)).text;
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
      const storages = await httpUrl("GET", `${zest.url}/@/router/local/status/plugins/storage_manager/storages/*`);
      assert.doesNotMatch(storages.text, /fromnet/);
    } finally {
      await c.stop();
      await zest.stop();
      await router.stop();
    }
  });
});
