/** One key space: zenoh-ts clients, REST, SSE, storages, evals and the admin space see each other. */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import {
  ConsolidationMode,
  Encoding,
  type Query,
  type Sample,
  type Session as ZSession,
} from "@eclipse-zenoh/zenoh-ts";
import { getJson, http, openSse } from "../support/http.js";
import { collect, openClient, roundTrip, startRemoteRouter } from "./helpers.js";
import { eventually } from "../support/wait.js";

type Router = Awaited<ReturnType<typeof startRemoteRouter>>;

describe("remote API and REST share one key space", () => {
  let z: Router;
  let c: ZSession;

  before(async () => {
    z = await startRemoteRouter();
    c = await openClient(z.locator);
  });
  after(async () => {
    await c.close();
    await z.close();
  });

  test("a zenoh-ts put is stored, read by REST GET with its encoding and timestamp, and streamed to SSE", async () => {
    const sse = await openSse(`${z.restUrl}/io/sse/**`);
    await c.put("io/sse/a", '{"n":1}', { encoding: Encoding.APPLICATION_JSON });
    await c.put("io/sse/b", "text", { encoding: Encoding.TEXT_PLAIN });
    await c.delete("io/sse/b");
    await roundTrip(c);
    const events = await sse.next(3);
    sse.close();
    assert.deepEqual(
      events.map((e) => e.event),
      ["PUT", "PUT", "DELETE"],
    );
    assert.deepEqual(JSON.parse(events[0]!.data).value, { n: 1 });
    const { entries } = await getJson(z.restUrl!, "/io/sse/**");
    assert.equal(entries.length, 1);
    assert.equal(entries[0]!.key, "io/sse/a");
    assert.deepEqual(entries[0]!.value, { n: 1 });
    assert.equal(entries[0]!.encoding, "application/json");
    assert.match(String(entries[0]!.time), /Z\/[0-9A-F]+$/);
  });

  test("a REST PUT reaches zenoh-ts subscribers with its MIME type as a zenoh encoding", async () => {
    const got: Sample[] = [];
    const sub = await c.declareSubscriber("io/rest/*", { handler: (s: Sample) => void got.push(s) });
    await http(z.restUrl!, "PUT", "/io/rest/j", { body: "[1]", headers: { "content-type": "application/json" } });
    await http(z.restUrl!, "PUT", "/io/rest/x", {
      body: "x",
      headers: { "content-type": "application/x-custom; charset=utf-8" },
    });
    await http(z.restUrl!, "DELETE", "/io/rest/j");
    await eventually(() => got.length === 3, 2000, "3 samples");
    assert.equal(got[0]!.encoding().toString(), "application/json");
    assert.equal(got[0]!.payload().toString(), "[1]");
    assert.equal(got[1]!.encoding().toString(), "application/x-custom");
    assert.equal(got[2]!.kind(), 1);
    assert.ok(got[0]!.timestamp());
    await sub.undeclare();
  });

  test("a zenoh-ts queryable answers REST GETs (an eval living in a client)", async () => {
    const q = await c.declareQueryable("io/eval/*", {
      handler: async (query: Query) => {
        await query.reply(query.keyExpr(), `hello ${query.parameters().get("name") ?? "?"}`, {
          encoding: Encoding.TEXT_PLAIN,
        });
        await query.finalize();
      },
    });
    const { entries } = await getJson(z.restUrl!, "/io/eval/greet?name=Bob");
    assert.deepEqual(
      entries.map((e) => [e.key, e.value, e.encoding]),
      [["io/eval/greet", "hello Bob", "text/plain"]],
    );
    await q.undeclare();
  });

  test("a zenoh-ts get reads storages and the admin space", async () => {
    await http(z.restUrl!, "PUT", "/io/st/a", { body: "stored", headers: { "content-type": "text/plain" } });
    assert.deepEqual(await collect(await c.get("io/st/**")), ["put:io/st/a=stored"]);
    const admin = await c.get(`@/router/${z.router.zid}`, { consolidation: ConsolidationMode.NONE });
    const replies: string[] = [];
    for await (const r of admin!) {
      const s = r.result() as Sample;
      replies.push(s.keyexpr().toString());
      assert.equal(JSON.parse(s.payload().toString()).zid, z.router.zid);
    }
    assert.deepEqual(replies, [`@/router/${z.router.zid}`]);
  });

  test("a zenoh-ts put with its own timestamp keeps it in storage", async () => {
    const ts = await c.newTimestamp();
    await c.put("io/ts/k", "v", { timestamp: ts });
    await roundTrip(c);
    const { entries } = await getJson(z.restUrl!, "/io/ts/k");
    const time = String(entries[0]!.time);
    assert.ok(time.endsWith(`/${z.router.zid}`));
    assert.equal(Date.parse(time.slice(0, time.indexOf("/"))), Math.floor(ts.getMsSinceUnixEpoch()));
  });
});

describe("remote API access", () => {
  test("admin-space writes are refused when the admin space is not writable; data writes are not", async () => {
    const z = await startRemoteRouter({ adminspace: { permissions: { read: true, write: false } } });
    const c = await openClient(z.locator);
    try {
      await assert.rejects(
        c.declarePublisher(`@/router/${z.router.zid}/config/plugins/storage_manager/storages/x`),
        /forbidden/,
      );
      const pub = await c.declarePublisher("data/k");
      await pub.undeclare();
    } finally {
      await c.close();
      await z.close();
    }
  });

  test("the remote API is off unless a port is configured", async () => {
    const { startZest } = await import("../../src/runtime.js");
    const { silentLogger } = await import("../../src/core/log.js");
    const zz = await startZest({ plugins: { rest: { http_port: "127.0.0.1:0" } } }, { logger: silentLogger });
    assert.equal(zz.remoteApiUrl, undefined);
    await zz.close();
  });
});
