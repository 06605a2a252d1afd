/**
 * The remote API with the unmodified zenoh-ts 1.10 client (run with --experimental-wasm-modules
 * --experimental-websocket; scripts/run-tests.mjs passes them): every message type, every target
 * and consolidation mode, locality, liveliness, timeouts, and cleanup on close.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import {
  CongestionControl,
  ConsolidationMode,
  Duration,
  type MatchingStatus,
  Encoding,
  Locality,
  Priority,
  type Query,
  QueryTarget,
  ReplyKeyExpr,
  type Sample,
  type Session as ZSession,
} from "@eclipse-zenoh/zenoh-ts";
import { idToZenohId } from "../../src/core/timestamp.js";
import { collect, openClient, roundTrip, showSample, startRemoteRouter } from "./helpers.js";
import { eventually } from "../support/wait.js";

type Router = Awaited<ReturnType<typeof startRemoteRouter>>;

describe("remote API with the zenoh-ts client", () => {
  let z: Router;
  let a: ZSession;
  let b: ZSession;

  before(async () => {
    // No storage: the default `**` one would match every publisher and answer every get.
    z = await startRemoteRouter({ id: "AB12", plugins: { storage_manager: { storages: {} } } });
    a = await openClient(z.locator);
    b = await openClient(z.locator);
  });
  after(async () => {
    await a.close();
    await b.close();
    await z.close();
  });

  /** Waits until both sessions have seen everything the server sent them so far. */
  const settle = async (): Promise<void> => {
    await roundTrip(a);
    await roundTrip(b);
  };

  test("session info: every connection reports the router's zid (hex read as a little-endian u128), no peers", async () => {
    const ia = await a.info();
    const ib = await b.info();
    assert.equal(ia.zid().toString(), "0000000000000000000000000000ab12");
    assert.equal(ib.zid().toString(), ia.zid().toString());
    assert.deepEqual(ia.zid().toLeBytes(), idToZenohId("AB12"));
    assert.deepEqual(ia.routersZid(), []);
    assert.deepEqual(ia.peersZid(), []);
    assert.deepEqual(await ia.transports(), []);
    assert.deepEqual(await ia.links(), []);
  });

  test("timestamps come from the router's clock: increasing, near wall time, with the router's zid", async () => {
    const t1 = await a.newTimestamp();
    const t2 = await b.newTimestamp();
    assert.ok(t2.getMsSinceUnixEpoch() >= t1.getMsSinceUnixEpoch());
    assert.ok(Math.abs(t1.getMsSinceUnixEpoch() - Date.now()) < 1000);
    assert.equal(t1.getId().toString(), "0000000000000000000000000000ab12");
  });

  test("put and delete reach a subscriber on another connection with key, payload, encoding, attachment, timestamp and QoS", async () => {
    const got: Sample[] = [];
    const sub = await b.declareSubscriber("pd/**", { handler: (s: Sample) => void got.push(s) });
    const ts = await a.newTimestamp();
    await a.put("pd/x", "hello", {
      encoding: Encoding.TEXT_PLAIN,
      attachment: "meta",
      timestamp: ts,
      priority: Priority.INTERACTIVE_HIGH,
      congestionControl: CongestionControl.BLOCK,
      express: true,
    });
    await a.put("pd/y", "json", { encoding: "application/json;schema1" });
    await a.put("pd/z", "custom", { encoding: "application/x-zest" });
    await a.delete("pd/x", { attachment: "gone" });
    await settle();
    await eventually(() => got.length === 4, 2000, "4 samples");
    const [p, j, c, d] = got;
    assert.equal(showSample(p!), "put:pd/x=hello");
    assert.equal(p!.encoding().toString(), "text/plain");
    assert.equal(p!.attachment()?.toString(), "meta");
    assert.equal(p!.timestamp()?.getMsSinceUnixEpoch(), ts.getMsSinceUnixEpoch());
    assert.equal(p!.priority(), Priority.INTERACTIVE_HIGH);
    assert.equal(p!.congestionControl(), CongestionControl.BLOCK);
    assert.equal(p!.express(), true);
    assert.equal(j!.encoding().toString(), "application/json;schema1");
    assert.equal(c!.encoding().toString(), "application/x-zest");
    assert.equal(showSample(d!), "delete:pd/x");
    assert.equal(d!.attachment()?.toString(), "gone");
    assert.ok(d!.timestamp(), "zest stamps every sample");
    await sub.undeclare();
    await a.put("pd/x", "after");
    await settle();
    assert.equal(got.length, 4);
  });

  test("subscriber locality: SESSION_LOCAL hears its own connection only, REMOTE the others only", async () => {
    const local: string[] = [];
    const remote: string[] = [];
    const s1 = await a.declareSubscriber("loc/*", {
      handler: (s: Sample) => void local.push(s.payload().toString()),
      allowedOrigin: Locality.SESSION_LOCAL,
    });
    const s2 = await a.declareSubscriber("loc/*", {
      handler: (s: Sample) => void remote.push(s.payload().toString()),
      allowedOrigin: Locality.REMOTE,
    });
    await a.put("loc/k", "self");
    await b.put("loc/k", "other");
    await b.put("loc/k", "other-local-only", { allowedDestination: Locality.SESSION_LOCAL });
    await a.put("loc/k", "self-remote-only", { allowedDestination: Locality.REMOTE });
    await settle();
    assert.deepEqual(local, ["self"]);
    assert.deepEqual(remote, ["other"]);
    await s1.undeclare();
    await s2.undeclare();
  });

  test("publishers: key, encoding and QoS of the declaration; a put's own encoding wins; delete", async () => {
    const got: Sample[] = [];
    const sub = await b.declareSubscriber("pub/k", { handler: (s: Sample) => void got.push(s) });
    const pub = await a.declarePublisher("pub/k", { encoding: Encoding.APPLICATION_JSON, priority: Priority.DATA_LOW });
    await pub.put('{"a":1}');
    await pub.put("txt", { encoding: Encoding.TEXT_PLAIN, attachment: "x" });
    await pub.delete();
    await settle();
    assert.deepEqual(got.map(showSample), ['put:pub/k={"a":1}', "put:pub/k=txt", "delete:pub/k"]);
    assert.equal(got[0]!.encoding().toString(), "application/json");
    assert.equal(got[0]!.priority(), Priority.DATA_LOW);
    assert.equal(got[1]!.encoding().toString(), "text/plain");
    assert.equal(got[1]!.attachment()?.toString(), "x");
    await pub.undeclare();
    await sub.undeclare();
  });

  test("matching status and listeners follow subscribers on other connections", async () => {
    const pub = await a.declarePublisher("match/x");
    assert.equal((await pub.matchingStatus()).matching(), false);
    const changes: boolean[] = [];
    const listener = await pub.matchingListener({ handler: (m: MatchingStatus) => void changes.push(m.matching()) });
    const sub = await b.declareSubscriber("match/*", { handler: () => undefined });
    await eventually(() => changes.length === 1, 2000, "matching true");
    assert.equal((await pub.matchingStatus()).matching(), true);
    await sub.undeclare();
    await eventually(() => changes.length === 2, 2000, "matching false");
    assert.deepEqual(changes, [true, false]);
    await listener.undeclare();
    await pub.undeclare();

    const querier = await a.declareQuerier("match/q", { target: QueryTarget.ALL_COMPLETE });
    const qchanges: boolean[] = [];
    const ql = await querier.matchingListener({ handler: (m: MatchingStatus) => void qchanges.push(m.matching()) });
    const incomplete = await b.declareQueryable("match/q", { handler: (q: Query) => void q.finalize() });
    await roundTrip(a);
    assert.equal((await querier.matchingStatus()).matching(), false, "ALL_COMPLETE ignores incomplete queryables");
    const complete = await b.declareQueryable("match/**", { complete: true, handler: (q: Query) => void q.finalize() });
    await eventually(() => qchanges.length === 1, 2000, "querier matching");
    assert.equal((await querier.matchingStatus()).matching(), true);
    await ql.undeclare();
    await complete.undeclare();
    await incomplete.undeclare();
    await querier.undeclare();
  });

  test("a get reaches queryables on other connections: payload, encoding, attachment, parameters; replies, delete replies, errors, final", async () => {
    const seen: Array<{
      key: string;
      params: string;
      payload?: string;
      encoding?: string;
      attachment?: string;
      accepts: ReplyKeyExpr;
    }> = [];
    const q = await b.declareQueryable("qa/**", {
      handler: async (query: Query) => {
        seen.push({
          key: query.keyExpr().toString(),
          params: query.parameters().toString(),
          payload: query.payload()?.toString(),
          encoding: query.encoding()?.toString(),
          attachment: query.attachment()?.toString(),
          accepts: query.acceptsReplies(),
        });
        await query.reply("qa/one", "1", { encoding: Encoding.TEXT_PLAIN, attachment: "ra" });
        await query.replyDel("qa/two");
        await query.replyErr("boom", { encoding: Encoding.ZENOH_STRING });
        await query.finalize();
      },
    });
    const replies = await collect(
      await a.get("qa/**?x=1", {
        payload: "body",
        encoding: Encoding.APPLICATION_JSON,
        attachment: "att",
        consolidation: ConsolidationMode.NONE,
      }),
    );
    assert.deepEqual(replies, ["put:qa/one=1", "delete:qa/two", "err:boom"]);
    assert.deepEqual(seen[0], {
      key: "qa/**",
      params: "x=1",
      payload: "body",
      encoding: "application/json",
      attachment: "att",
      accepts: ReplyKeyExpr.MATCHING_QUERY,
    });
    // Without payload or encoding, neither is sent.
    await collect(await a.get("qa/x"));
    assert.equal(seen[1]!.payload, undefined);
    assert.equal(seen[1]!.encoding, undefined);
    await q.undeclare();
  });

  test("a get with no matching queryable closes at once with no reply", async () => {
    const t = Date.now();
    assert.deepEqual(await collect(await a.get("@nobody/here")), []);
    assert.ok(Date.now() - t < 1000);
  });

  test("_anyke: replies outside the query's key are dropped unless the get accepts any key", async () => {
    const params: string[] = [];
    const q = await b.declareQueryable("ak/in", {
      handler: async (query: Query) => {
        params.push(query.parameters().toString());
        await query.reply("ak/in", "inside");
        await query.reply("ak/elsewhere", "outside");
        await query.finalize();
      },
    });
    assert.deepEqual(await collect(await a.get("ak/in", { consolidation: ConsolidationMode.NONE })), [
      "put:ak/in=inside",
    ]);
    const any = await collect(
      await a.get("ak/in?p=1", { acceptReplies: ReplyKeyExpr.ANY, consolidation: ConsolidationMode.NONE }),
    );
    assert.deepEqual(any, ["put:ak/in=inside", "put:ak/elsewhere=outside"]);
    assert.deepEqual(params, ["", "p=1;_anyke"]);
    await q.undeclare();
  });

  test("consolidation modes on a DELETE then a PUT of one key and an error reply", async () => {
    const q = await b.declareQueryable("cons/k", {
      handler: async (query: Query) => {
        await query.replyDel("cons/k");
        await query.reply("cons/k", "v");
        await query.replyErr("bad");
        await query.finalize();
      },
    });
    const run = async (consolidation: ConsolidationMode): Promise<string[]> =>
      collect(await a.get("cons/k", { consolidation }));
    assert.deepEqual(await run(ConsolidationMode.NONE), ["delete:cons/k", "put:cons/k=v", "err:bad"]);
    assert.deepEqual(await run(ConsolidationMode.LATEST), ["err:bad", "put:cons/k=v"]);
    assert.deepEqual(await run(ConsolidationMode.AUTO), ["err:bad", "put:cons/k=v"]);
    // As zenohd with the remote-api plugin answers zenoh-ts's own suite: neither reply has a
    // timestamp, so the PUT is no older than the DELETE and is forwarded too.
    assert.deepEqual(await run(ConsolidationMode.MONOTONIC), ["delete:cons/k", "put:cons/k=v", "err:bad"]);
    await q.undeclare();
  });

  test("MONOTONIC forwards a newer timestamped reply for the same key, LATEST keeps only the newest", async () => {
    const t1 = await a.newTimestamp();
    const t2 = await a.newTimestamp();
    const q = await b.declareQueryable("mono/k", {
      handler: async (query: Query) => {
        await query.reply("mono/k", "new", { timestamp: t2 });
        await query.reply("mono/k", "old", { timestamp: t1 });
        await query.finalize();
      },
    });
    assert.deepEqual(await collect(await a.get("mono/k", { consolidation: ConsolidationMode.MONOTONIC })), [
      "put:mono/k=new",
    ]);
    assert.deepEqual(await collect(await a.get("mono/k", { consolidation: ConsolidationMode.LATEST })), [
      "put:mono/k=new",
    ]);
    assert.deepEqual(await collect(await a.get("mono/k", { consolidation: ConsolidationMode.NONE })), [
      "put:mono/k=new",
      "put:mono/k=old",
    ]);
    await q.undeclare();
  });

  test("targets: BEST_MATCHING picks a complete queryable, ALL every one, ALL_COMPLETE complete ones only", async () => {
    const complete = await b.declareQueryable("tg/**", {
      complete: true,
      handler: async (query: Query) => {
        await query.reply("tg/a", "complete");
        await query.finalize();
      },
    });
    const partial = await b.declareQueryable("tg/a", {
      handler: async (query: Query) => {
        await query.reply("tg/a", "partial");
        await query.finalize();
      },
    });
    const get = async (target: QueryTarget): Promise<string[]> =>
      (await collect(await a.get("tg/a", { target, consolidation: ConsolidationMode.NONE }))).sort();
    assert.deepEqual(await get(QueryTarget.BEST_MATCHING), ["put:tg/a=complete"]);
    assert.deepEqual(await get(QueryTarget.ALL), ["put:tg/a=complete", "put:tg/a=partial"]);
    assert.deepEqual(await get(QueryTarget.ALL_COMPLETE), ["put:tg/a=complete"]);
    await partial.undeclare();
    // With no complete queryable left that includes the key, BEST_MATCHING takes all matching ones.
    await complete.undeclare();
    const p2 = await b.declareQueryable("tg/*", {
      handler: async (query: Query) => {
        await query.reply("tg/a", "p2");
        await query.finalize();
      },
    });
    assert.deepEqual(await get(QueryTarget.BEST_MATCHING), ["put:tg/a=p2"]);
    assert.deepEqual(await get(QueryTarget.ALL_COMPLETE), []);
    await p2.undeclare();
  });

  test("queryable locality and a get's destination", async () => {
    const localOnly = await a.declareQueryable("ql/k", {
      allowedOrigin: Locality.SESSION_LOCAL,
      handler: async (q: Query) => {
        await q.reply("ql/k", "local");
        await q.finalize();
      },
    });
    const remoteOnly = await a.declareQueryable("ql/k", {
      allowedOrigin: Locality.REMOTE,
      handler: async (q: Query) => {
        await q.reply("ql/k", "remote");
        await q.finalize();
      },
    });
    const opts = { consolidation: ConsolidationMode.NONE, target: QueryTarget.ALL };
    assert.deepEqual(await collect(await a.get("ql/k", opts)), ["put:ql/k=local"]);
    assert.deepEqual(await collect(await b.get("ql/k", opts)), ["put:ql/k=remote"]);
    assert.deepEqual(await collect(await b.get("ql/k", { ...opts, allowedDestination: Locality.SESSION_LOCAL })), []);
    await localOnly.undeclare();
    await remoteOnly.undeclare();
  });

  test("a queryable that never finalizes: the get times out with the replies so far, a timeout error, then the final", async () => {
    const q = await b.declareQueryable("slow/k", {
      handler: async (query: Query) => void (await query.reply("slow/k", "partial")),
    });
    const t = Date.now();
    const replies = await collect(await a.get("slow/k", { timeout: Duration.milliseconds.of(300) }));
    assert.ok(Date.now() - t >= 280);
    assert.equal(replies.length, 2);
    assert.equal(replies[0], "put:slow/k=partial");
    assert.match(replies[1]!, /^err:Timeout/);
    await q.undeclare();
  });

  test("queriers: stored key, target, consolidation and timeout, with each get's own parameters and payload", async () => {
    const seen: string[] = [];
    const q = await b.declareQueryable("qr/**", {
      handler: async (query: Query) => {
        seen.push(`${query.parameters().toString()}|${query.payload()?.toString() ?? "-"}`);
        await query.reply("qr/a", "1");
        await query.reply("qr/a", "2");
        await query.finalize();
      },
    });
    const querier = await a.declareQuerier("qr/**", {
      consolidation: ConsolidationMode.NONE,
      timeout: Duration.milliseconds.of(2000),
    });
    assert.deepEqual(await collect(await querier.get({ parameters: "n=1", payload: "p" })), [
      "put:qr/a=1",
      "put:qr/a=2",
    ]);
    assert.deepEqual(seen, ["n=1|p"]);
    await querier.undeclare();
    await q.undeclare();
  });

  test("liveliness: tokens, a subscriber with history, get, undeclare, and a token dying with its connection", async () => {
    const c = await openClient(z.locator);
    const t1 = await c.liveliness().declareToken("lv/c/1");
    const events: string[] = [];
    const sub = await a
      .liveliness()
      .declareSubscriber("lv/**", { history: true, handler: (s: Sample) => void events.push(showSample(s)) });
    await roundTrip(a);
    assert.deepEqual(events, ["put:lv/c/1="]);
    const t2 = await c.liveliness().declareToken("lv/c/2");
    await eventually(() => events.length === 2, 2000, "token 2 PUT");
    assert.deepEqual(await collect(await b.liveliness().get("lv/**")), ["put:lv/c/1=", "put:lv/c/2="]);
    await t2.undeclare();
    await assert.rejects(t2.undeclare(), /unknown liveliness token/);
    await eventually(() => events.length === 3, 2000, "token 2 DELETE");
    await c.close();
    await eventually(() => events.length === 4, 2000, "token 1 DELETE on close");
    assert.deepEqual(events, ["put:lv/c/1=", "put:lv/c/2=", "delete:lv/c/2", "delete:lv/c/1"]);
    assert.deepEqual(await collect(await b.liveliness().get("lv/**")), []);
    await sub.undeclare();
    void t1;
  });

  test("declaring an id twice or undeclaring an unknown one is an error reply, not a broken connection", async () => {
    const pub = await a.declarePublisher("err/k");
    await pub.undeclare();
    await assert.rejects(pub.undeclare(), /not_found: unknown publisher id/);
    await roundTrip(a);
  });

  test("a connection's subscribers, queryables and tokens are released when it closes", async () => {
    const base = z.router.subscriberCount;
    const c = await openClient(z.locator);
    await c.declareSubscriber("rel/**", { handler: () => undefined });
    await c.declareQueryable("rel/q", { handler: () => undefined });
    await c.liveliness().declareToken("rel/tok");
    assert.equal(z.router.subscriberCount, base + 1);
    const hung = collect(await a.get("rel/q", { timeout: Duration.milliseconds.of(5000) }));
    await roundTrip(a);
    await c.close();
    // The get that waited for c's queryable ends when c goes, well before its timeout.
    const t = Date.now();
    assert.deepEqual(await hung, []);
    assert.ok(Date.now() - t < 2000);
    await eventually(() => z.router.subscriberCount === base, 2000, "subscriber released");
    assert.deepEqual(await collect(await a.liveliness().get("rel/**")), []);
    assert.deepEqual(await collect(await a.get("rel/q")), []);
  });
});
