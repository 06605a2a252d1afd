/**
 * zenoh semantics as zenohd has them, between raw clients of one zest router
 * (docs/zenoh-protocol.md): what a router carries unchanged (source info, the timestamp stack,
 * a responder id, unknown body extensions), replies forwarded unconsolidated, and the
 * declarations an INTEREST in queryables is answered with (completeness, re-declaration under
 * the same id, cleanup when the queryable's client goes).
 */
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { after, test } from "node:test";
import type { Declaration } from "../../src/zenoh/codec/declarations.js";
import {
  encodeDeclare,
  encodeInterest,
  encodePush,
  encodeRequest,
  encodeResponseErr,
  encodeResponseFinal,
  encodeResponseReply,
  InterestOption,
  type NetworkMsg,
} from "../../src/zenoh/codec/network.js";
import { RawClient, wireKey } from "./raw-client.js";
import { type TestZenohDoor, zenohDoor } from "../support/zenoh-door.js";
import { hex, bytes } from "./bytes.js";

const opened: Array<{ close(): unknown }> = [];
after(async () => {
  for (const o of opened.reverse()) await o.close();
});

function door(): Promise<TestZenohDoor> {
  return zenohDoor(opened);
}

async function client(port: number, zid: string): Promise<RawClient> {
  const c = await RawClient.open(port, { zid });
  opened.push(c);
  return c;
}

const key = wireKey;
/** A timestamp stack extension (0x7) as zenoh 1.10 sends it, whole: conf SEND, one interception. */
const TS_STACK = bytes("47 05 01 01 01 abcd");
/** An extension of a PUT no zenoh version here knows (0x0e, zbuf, optional). */
const UNKNOWN_BODY_EXT = bytes("4e 02 beef");

test("a put's and a delete's source info, timestamp stack and unknown body extension reach another client's subscriber unchanged", async () => {
  const { port, session } = await door();
  const pub = await client(port, "A1");
  const sub = await client(port, "B2");
  sub.sendFrame((w) => encodeDeclare(w, { kind: "subscriber", id: 1, key: key("si/**") }));
  await sub.until(() => session.matchingStatus("si/x", "subscribers") || undefined);
  const sourceInfo = { zid: "0102030405060708", eid: 7, sn: 4_000_000_000 };
  pub.sendFrame(
    (w) =>
      encodePush(
        w,
        key("si/x"),
        {
          kind: "put",
          encoding: "text/plain",
          hasEncoding: true,
          sourceInfo,
          unknownExts: [UNKNOWN_BODY_EXT],
          payload: Buffer.from("v"),
        },
        undefined,
        [TS_STACK],
      ),
    (w) =>
      encodePush(
        w,
        key("si/x"),
        {
          kind: "delete",
          encoding: "",
          hasEncoding: false,
          sourceInfo: { ...sourceInfo, sn: 1 },
          payload: Buffer.alloc(0),
        },
        undefined,
        [TS_STACK],
      ),
  );
  const pushes = await sub.until(() => {
    const p = sub.network.filter((m) => m.kind === "push");
    return p.length === 2 ? p : undefined;
  });
  const [put, del] = pushes;
  assert.ok(put?.kind === "push" && del?.kind === "push");
  assert.equal(put.body.payload.toString(), "v");
  assert.deepEqual(put.body.sourceInfo, { ...sourceInfo, zid: "0102030405060708".toUpperCase() });
  assert.deepEqual(put.exts?.map(hex), [hex(TS_STACK)]);
  assert.deepEqual(put.body.unknownExts?.map(hex), [hex(UNKNOWN_BODY_EXT)]);
  assert.equal(del.body.kind, "delete");
  assert.equal(del.body.sourceInfo?.sn, 1);
  assert.deepEqual(del.exts?.map(hex), [hex(TS_STACK)]);
});

/** The REQUEST the router forwards to `c`'s queryable. */
async function forwarded(c: RawClient): Promise<NetworkMsg & { kind: "request" }> {
  const m = await c.waitNetwork((n) => n.kind === "request");
  assert.ok(m.kind === "request");
  return m;
}

test("a get's source info and timestamp stack reach the queryable; its reply's source info, responder id, timestamp stack and QoS reach the getter", async () => {
  const { port, session } = await door();
  const getter = await client(port, "A1");
  const qbl = await client(port, "B2");
  qbl.sendFrame((w) => encodeDeclare(w, { kind: "queryable", id: 1, key: key("sq/**"), complete: false, distance: 0 }));
  await qbl.until(() => session.matchingStatus("sq/x", "queryables") || undefined);
  const querier = { zid: "0A0B", eid: 3, sn: 12 };
  getter.sendFrame((w) =>
    encodeRequest(w, {
      id: 5,
      key: key("sq/x"),
      exts: [TS_STACK],
      query: { consolidation: "auto", parameters: "", sourceInfo: querier },
    }),
  );
  const req = await forwarded(qbl);
  assert.ok(req.body.kind === "query");
  assert.deepEqual(req.body.query.sourceInfo, querier);
  assert.deepEqual(req.exts?.map(hex), [hex(TS_STACK)]);

  const replier = { zid: "0C", eid: 9, sn: 77 };
  // The responder id (0x3): zid 0x0c, entity 9.
  const responder = bytes("43 03 00 0c 09");
  qbl.sendFrame(
    (w) =>
      encodeResponseReply(
        w,
        req.id,
        key("sq/x"),
        { kind: "put", encoding: "", hasEncoding: false, sourceInfo: replier, payload: Buffer.from("r") },
        // Priority 2 (interactive high), express.
        0x12,
        [responder, TS_STACK],
      ),
    (w) => encodeResponseFinal(w, req.id),
  );
  const res = await getter.waitNetwork((n) => n.kind === "response");
  assert.ok(res.kind === "response" && res.body.kind === "reply");
  assert.equal(res.id, 5);
  assert.equal(res.body.push.payload.toString(), "r");
  assert.deepEqual(res.body.push.sourceInfo, { ...replier, zid: "0C" });
  assert.deepEqual(res.responder, { zid: "0C", eid: 9 });
  assert.deepEqual(res.exts?.map(hex), [hex(responder), hex(TS_STACK)]);
  assert.equal(res.qos, 0x12);
  await getter.waitNetwork((n) => n.kind === "responseFinal" && n.id === 5);
});

test("a get reaches a client once however many of its queryables match, with the get's target, by which the client picks among its own as zenohd has it: ALL_COMPLETE, ALL, and BEST_MATCHING (the default, left off the wire)", async () => {
  const { port, session } = await door();
  const getter = await client(port, "A3");
  const qbl = await client(port, "B4");
  // One client with a complete queryable on the key and an incomplete one around it, as a
  // zenoh-python session holds them: the router sends it one REQUEST, the session dispatches.
  qbl.sendFrame(
    (w) => encodeDeclare(w, { kind: "queryable", id: 1, key: key("tg/*"), complete: false, distance: 0 }),
    (w) => encodeDeclare(w, { kind: "queryable", id: 2, key: key("tg/x"), complete: true, distance: 0 }),
  );
  await qbl.until(() => session.matchingStatus("tg/x", "queryables") || undefined);
  const targets = ["all_complete", "all", "best_matching"] as const;
  for (const [i, target] of targets.entries()) {
    getter.sendFrame((w) =>
      encodeRequest(w, { id: 10 + i, key: key("tg/x"), target, query: { consolidation: "auto", parameters: "" } }),
    );
    // The (i+1)th REQUEST this client got: one per get, whatever ids the router gives them.
    const req = await qbl.until(() => qbl.network.filter((n) => n.kind === "request")[i]);
    assert.ok(req.kind === "request");
    assert.equal(req.target, target);
    qbl.sendFrame((w) => encodeResponseFinal(w, req.id));
    await getter.waitNetwork((n) => n.kind === "responseFinal" && n.id === 10 + i);
  }
  assert.equal(qbl.network.filter((n) => n.kind === "request").length, targets.length);
});

test("every reply reaches the getter unconsolidated, as zenohd forwards them: three replies on one key to a get with consolidation auto", async () => {
  const { port, session } = await door();
  const getter = await client(port, "A1");
  const qbl = await client(port, "B2");
  qbl.sendFrame((w) =>
    encodeDeclare(w, { kind: "queryable", id: 1, key: key("hist/**"), complete: false, distance: 0 }),
  );
  await qbl.until(() => session.matchingStatus("hist/k", "queryables") || undefined);
  getter.sendFrame((w) =>
    encodeRequest(w, { id: 1, key: key("hist/**"), query: { consolidation: "auto", parameters: "" } }),
  );
  const req = await forwarded(qbl);
  qbl.sendFrame(
    ...["2", "3", "4"].map(
      (v) => (w: Parameters<typeof encodeResponseFinal>[0]) =>
        encodeResponseReply(w, req.id, key("hist/k"), {
          kind: "put",
          encoding: "",
          hasEncoding: false,
          payload: Buffer.from(v),
        }),
    ),
    (w) => encodeResponseFinal(w, req.id),
  );
  await getter.waitNetwork((n) => n.kind === "responseFinal");
  const values = getter.network.flatMap((m) =>
    m.kind === "response" && m.body.kind === "reply" ? [m.body.push.payload.toString()] : [],
  );
  assert.deepEqual(values, ["2", "3", "4"]);
});

test("an error reply's source info reaches the getter", async () => {
  const { port, session } = await door();
  const getter = await client(port, "A1");
  const qbl = await client(port, "B2");
  qbl.sendFrame((w) => encodeDeclare(w, { kind: "queryable", id: 1, key: key("se/**"), complete: false, distance: 0 }));
  await qbl.until(() => session.matchingStatus("se/x", "queryables") || undefined);
  getter.sendFrame((w) =>
    encodeRequest(w, { id: 2, key: key("se/x"), query: { consolidation: "auto", parameters: "" } }),
  );
  const req = await forwarded(qbl);
  const replier = { zid: "0D", eid: 1, sn: 5 };
  qbl.sendFrame(
    (w) =>
      encodeResponseErr(w, req.id, key(""), {
        encoding: "text/plain",
        payload: Buffer.from("no"),
        sourceInfo: replier,
      }),
    (w) => encodeResponseFinal(w, req.id),
  );
  const res = await getter.waitNetwork((n) => n.kind === "response");
  assert.ok(res.kind === "response" && res.body.kind === "err");
  assert.equal(res.body.err.payload.toString(), "no");
  assert.deepEqual(res.body.err.sourceInfo, replier);
});

/** The DECLAREs of queryables and their undeclarations the router sent `c`, in order. */
function qablDecls(c: RawClient): string[] {
  return c.network.flatMap((m) => {
    if (m.kind !== "declare") return [];
    const d: Declaration = m.decl;
    if (d.kind === "queryable") return [`declare ${d.id} ${d.key.suffix} ${d.complete ? "complete" : "incomplete"}`];
    if (d.kind === "unqueryable") return [`undeclare ${d.id}`];
    return [];
  });
}

test("an aggregated INTEREST in queryables is answered with the interest's key, complete when a complete queryable includes it, declared again under the same id as that changes, undeclared when the queryable's client goes", async () => {
  const { port } = await door();
  const querier = await client(port, "A1");
  const qbl = await client(port, "B2");
  querier.sendFrame((w) =>
    encodeInterest(w, {
      id: 3,
      current: true,
      future: true,
      options: InterestOption.QUERYABLES | InterestOption.AGGREGATE,
      key: key("mq/*"),
    }),
  );
  await querier.waitNetwork((m) => m.kind === "declare" && m.decl.kind === "final");
  assert.deepEqual(qablDecls(querier), []);
  const declare = (id: number, k: string, complete: boolean) =>
    qbl.sendFrame((w) => encodeDeclare(w, { kind: "queryable", id, key: key(k), complete, distance: 0 }));
  const wait = (n: number) => querier.until(() => (qablDecls(querier).length >= n ? qablDecls(querier) : undefined));

  declare(1, "mq/val", false);
  const [first] = await wait(1);
  const id = Number(first?.split(" ")[1]);
  assert.equal(first, `declare ${id} mq/* incomplete`);
  // Complete, but not including mq/*: nothing changes.
  declare(2, "mq/val2", true);
  // Incomplete and including: nothing changes either.
  declare(3, "mq/**", false);
  declare(4, "mq/**", true);
  assert.deepEqual(await wait(2), [first, `declare ${id} mq/* complete`]);
  qbl.sendFrame((w) => encodeDeclare(w, { kind: "unqueryable", id: 4 }));
  assert.deepEqual((await wait(3)).slice(2), [`declare ${id} mq/* incomplete`]);
  qbl.close();
  assert.deepEqual((await wait(4)).slice(3), [`undeclare ${id}`]);
});

test("an INTEREST in queryables that is not aggregated is answered with each key and its own completeness", async () => {
  const { port, session } = await door();
  const querier = await client(port, "A1");
  const qbl = await client(port, "B2");
  qbl.sendFrame(
    (w) => encodeDeclare(w, { kind: "queryable", id: 1, key: key("nq/a"), complete: true, distance: 0 }),
    (w) => encodeDeclare(w, { kind: "queryable", id: 2, key: key("nq/b"), complete: false, distance: 0 }),
  );
  await qbl.until(() => session.matchingKeys("nq/*", "queryables").length === 2 || undefined);
  querier.sendFrame((w) =>
    encodeInterest(w, { id: 4, current: true, future: true, options: InterestOption.QUERYABLES, key: key("nq/*") }),
  );
  await querier.waitNetwork((m) => m.kind === "declare" && m.decl.kind === "final");
  const got = qablDecls(querier).map((d) => d.replace(/^declare \d+ /, ""));
  assert.deepEqual(got.sort(), ["nq/a complete", "nq/b incomplete"]);
  // nq/b becomes complete: declared again under its id.
  const idOf = (k: string) =>
    qablDecls(querier)
      .find((d) => d.includes(` ${k} `))
      ?.split(" ")[1];
  const bId = idOf("nq/b");
  qbl.sendFrame((w) => encodeDeclare(w, { kind: "queryable", id: 3, key: key("nq/b"), complete: true, distance: 0 }));
  await querier.until(() => qablDecls(querier).includes(`declare ${bId} nq/b complete`) || undefined);
});

test("a future-only INTEREST in tokens hears a token older than it go: U_TOKEN under the one-shot id 0 with the token's key, as zenohd sends it", async () => {
  const { port, session } = await door();
  const owner = await client(port, "A5");
  const watcher = await client(port, "B6");
  owner.sendFrame((w) => encodeDeclare(w, { kind: "token", id: 7, key: key("older/a") }));
  await owner.until(() => session.livelinessGet("older/*").length === 1 || undefined);
  watcher.sendFrame((w) =>
    encodeInterest(w, { id: 4, current: false, future: true, options: InterestOption.TOKENS, key: key("older/*") }),
  );
  // The interest is followed before the token goes (it reaches the router first, one socket each).
  await new Promise((r) => setTimeout(r, 100));
  owner.sendFrame((w) => encodeDeclare(w, { kind: "untoken", id: 7 }));
  const m = await watcher.waitNetwork((n) => n.kind === "declare" && n.decl.kind === "untoken");
  assert.ok(m.kind === "declare" && m.decl.kind === "untoken");
  assert.equal(m.decl.id, 0);
  assert.equal(m.decl.key?.suffix, "older/a");
  // It was never declared to the watcher: no D_TOKEN came before.
  assert.equal(watcher.network.filter((n) => n.kind === "declare" && n.decl.kind === "token").length, 0);
});

test("a queryable's replies and finals to two gets, sent in one frame, reach the getter in that order (a final is not overtaken by the next get's reply)", async () => {
  const { port, session } = await door();
  const getter = await client(port, "A7");
  const qbl = await client(port, "B8");
  qbl.sendFrame((w) => encodeDeclare(w, { kind: "queryable", id: 1, key: key("fo/**"), complete: false, distance: 0 }));
  await qbl.until(() => session.matchingStatus("fo/x", "queryables") || undefined);
  const get = (id: number) => (w: Parameters<typeof encodeRequest>[0]) =>
    encodeRequest(w, { id, key: key("fo/x"), query: { consolidation: "none", parameters: "" } });
  getter.sendFrame(get(1), get(2));
  const reqs = await qbl.until(() => {
    const r = qbl.network.filter((n) => n.kind === "request");
    return r.length === 2 ? r : undefined;
  });
  const put = (payload: string) => ({
    kind: "put" as const,
    encoding: "",
    hasEncoding: false,
    payload: Buffer.from(payload),
  });
  // As zenoh's advanced publisher answers its history gets: the first whole, then the second.
  qbl.sendFrame(
    (w) => encodeResponseReply(w, reqs[0]!.id, key("fo/x"), put("a")),
    (w) => encodeResponseFinal(w, reqs[0]!.id),
    (w) => encodeResponseReply(w, reqs[1]!.id, key("fo/x"), put("b")),
    (w) => encodeResponseFinal(w, reqs[1]!.id),
  );
  await getter.waitNetwork((n) => n.kind === "responseFinal" && n.id === 2);
  await getter.until(() => (getter.network.some((n) => n.kind === "responseFinal" && n.id === 1) ? true : undefined));
  const order = getter.network
    .filter((n) => n.kind === "response" || n.kind === "responseFinal")
    .map((n) => `${n.kind}:${n.id}`);
  assert.deepEqual(order, ["response:1", "responseFinal:1", "response:2", "responseFinal:2"]);
});

/** A get of `fo/x`-like keys as a lean client sends it. */
const getOf = (id: number, k: string) => (w: Parameters<typeof encodeRequest>[0]) =>
  encodeRequest(w, { id, key: key(k), query: { consolidation: "none", parameters: "" } });
const putOf = (payload: string) => ({
  kind: "put" as const,
  encoding: "",
  hasEncoding: false,
  payload: Buffer.from(payload),
});
/** The getter's answers in the order they came: `response:<id>:<payload>` and `final:<id>`. */
const answers = (c: RawClient): string[] =>
  c.network.flatMap((n) =>
    n.kind === "response"
      ? [
          `response:${n.id}:${n.body.kind === "reply" ? Buffer.from(n.body.push.kind === "put" ? n.body.push.payload : []).toString() : "err"}`,
        ]
      : n.kind === "responseFinal"
        ? [`final:${n.id}`]
        : [],
  );

test("a queryable that answers 40 gets whole, one after the other, in one frame: each get's final reaches the getter before the next get's reply", async () => {
  const { port, session } = await door();
  const getter = await client(port, "A9");
  const qbl = await client(port, "B9");
  qbl.sendFrame((w) => encodeDeclare(w, { kind: "queryable", id: 1, key: key("fm/**"), complete: false, distance: 0 }));
  await qbl.until(() => session.matchingStatus("fm/x", "queryables") || undefined);
  const n = 40;
  getter.sendFrame(...Array.from({ length: n }, (_, i) => getOf(i + 1, "fm/x")));
  const reqs = await qbl.until(() => {
    const r = qbl.network.filter((m) => m.kind === "request");
    return r.length === n ? r : undefined;
  });
  qbl.sendFrame(
    ...reqs.flatMap((r, i) => [
      (w: Parameters<typeof encodeRequest>[0]) => encodeResponseReply(w, r.id, key("fm/x"), putOf(`v${i + 1}`)),
      (w: Parameters<typeof encodeRequest>[0]) => encodeResponseFinal(w, r.id),
    ]),
  );
  await getter.until(() => (answers(getter).filter((a) => a.startsWith("final:")).length === n ? true : undefined));
  // The getter's ids are its own (1..n); the queryable's answers came in the getter's order.
  const expected = Array.from({ length: n }, (_, i) => [`response:${i + 1}:v${i + 1}`, `final:${i + 1}`]).flat();
  assert.deepEqual(answers(getter), expected);
});

test("a get two queryable clients answer ends as the last one's final is read: that client's later reply to the next get comes after it", async () => {
  const { port, session } = await door();
  const getter = await client(port, "AA");
  const q1 = await client(port, "BA");
  const q2 = await client(port, "CA");
  // Two key expressions, so the router's session can tell when both are declared.
  q1.sendFrame((w) => encodeDeclare(w, { kind: "queryable", id: 1, key: key("f2/**"), complete: false, distance: 0 }));
  q2.sendFrame((w) => encodeDeclare(w, { kind: "queryable", id: 1, key: key("f2/*"), complete: false, distance: 0 }));
  await q1.until(() => session.matchingKeys("f2/x", "queryables").length === 2 || undefined);
  getter.sendFrame(getOf(1, "f2/x"), getOf(2, "f2/x"));
  const requests = (q: RawClient) =>
    q.until(() => {
      const r = q.network.filter((m) => m.kind === "request");
      return r.length === 2 ? r : undefined;
    });
  const [r1, r2] = [await requests(q1), await requests(q2)];
  // q1 answers both gets; get 1 still waits for q2.
  q1.sendFrame(
    (w) => encodeResponseReply(w, r1[0]!.id, key("f2/x"), putOf("q1-1")),
    (w) => encodeResponseFinal(w, r1[0]!.id),
    (w) => encodeResponseReply(w, r1[1]!.id, key("f2/x"), putOf("q1-2")),
    (w) => encodeResponseFinal(w, r1[1]!.id),
  );
  await getter.until(() => (answers(getter).includes("response:2:q1-2") ? true : undefined));
  assert.ok(!answers(getter).includes("final:1"), JSON.stringify(answers(getter)));
  // q2's final ends get 1; its reply to get 2, read after it, comes after get 1's final.
  q2.sendFrame(
    (w) => encodeResponseFinal(w, r2[0]!.id),
    (w) => encodeResponseReply(w, r2[1]!.id, key("f2/x"), putOf("q2-2")),
    (w) => encodeResponseFinal(w, r2[1]!.id),
  );
  await getter.until(() => (answers(getter).includes("final:2") ? true : undefined));
  assert.deepEqual(answers(getter), ["response:1:q1-1", "response:2:q1-2", "final:1", "response:2:q2-2", "final:2"]);
});

test("a get its queryable client never answers ends at the get's timeout with an error reply and a final; the client's late answers are dropped", async () => {
  const { port, session } = await door();
  const getter = await client(port, "AB");
  const qbl = await client(port, "BB");
  qbl.sendFrame((w) => encodeDeclare(w, { kind: "queryable", id: 1, key: key("ft/**"), complete: false, distance: 0 }));
  await qbl.until(() => session.matchingStatus("ft/x", "queryables") || undefined);
  getter.sendFrame((w) =>
    encodeRequest(w, { id: 5, key: key("ft/x"), timeoutMs: 300, query: { consolidation: "none", parameters: "" } }),
  );
  const req = await qbl.waitNetwork((m) => m.kind === "request");
  assert.ok(req.kind === "request");
  await getter.waitNetwork((m) => m.kind === "responseFinal" && m.id === 5, 5_000);
  const got = answers(getter);
  assert.equal(got.length, 2, JSON.stringify(got));
  assert.deepEqual(got, ["response:5:err", "final:5"]);
  const err = getter.network.find((m) => m.kind === "response");
  assert.ok(err?.kind === "response" && err.body.kind === "err");
  assert.match(
    Buffer.from(err.body.err.payload).toString(),
    /^Timeout: queryable on ft\/\*\* did not answer within 300 ms/,
  );
  // Too late: the query is over; nothing more reaches the getter.
  qbl.sendFrame(
    (w) => encodeResponseReply(w, req.id, key("ft/x"), putOf("late")),
    (w) => encodeResponseFinal(w, req.id),
  );
  await new Promise((r) => setTimeout(r, 200));
  assert.deepEqual(answers(getter), ["response:5:err", "final:5"]);
});

test("a PUSH names its key by the subscriber's own key-expression id, as zenohd does: the longest declared prefix ending at a chunk, the rest as suffix; in full to a client that declared none, and once the id is undeclared", async () => {
  const { port, session } = await door();
  const pub = await client(port, "C1");
  const mapped = await client(port, "D2");
  const plain = await client(port, "E3");
  mapped.sendFrame(
    (w) => encodeDeclare(w, { kind: "keyexpr", id: 5, key: { scope: 0, suffix: "wk", senderMapping: true } }),
    (w) => encodeDeclare(w, { kind: "keyexpr", id: 6, key: { scope: 5, suffix: "/a", senderMapping: true } }),
    (w) => encodeDeclare(w, { kind: "subscriber", id: 1, key: { scope: 5, suffix: "/**", senderMapping: true } }),
  );
  plain.sendFrame((w) => encodeDeclare(w, { kind: "subscriber", id: 1, key: key("wk/**") }));
  await pub.until(() => session.matchingStatus("wk/a", "subscribers") || undefined);
  await new Promise((r) => setTimeout(r, 100)); // both subscribers declared
  const put = (k: string, payload: string, attachment?: Buffer) => (w: Parameters<typeof encodePush>[0]) =>
    encodePush(w, key(k), {
      kind: "put",
      encoding: "",
      hasEncoding: false,
      payload: Buffer.from(payload),
      ...(attachment ? { attachment } : {}),
    });
  // One frame: each sample reaches both clients, the second encoded after the first.
  pub.sendFrame(put("wk/a/b", "1"), put("wk/a", "2"), put("wk/ab", "3"), put("wk/a/b", "4", bytes("01")));
  const pushesOf = (c: RawClient, n: number) =>
    c.until(() => {
      const p = c.network.filter((m) => m.kind === "push");
      return p.length === n ? p : undefined;
    });
  const named = (m: NetworkMsg) => {
    assert.ok(m.kind === "push");
    return [m.key.scope, m.key.suffix, m.key.senderMapping, m.body.payload.toString()];
  };
  assert.deepEqual((await pushesOf(mapped, 4)).map(named), [
    [6, "/b", false, "1"],
    [6, "", false, "2"],
    [5, "/ab", false, "3"],
    [6, "/b", false, "4"],
  ]);
  assert.deepEqual((await pushesOf(plain, 4)).map(named), [
    [0, "wk/a/b", false, "1"],
    [0, "wk/a", false, "2"],
    [0, "wk/ab", false, "3"],
    [0, "wk/a/b", false, "4"],
  ]);
  mapped.sendFrame((w) => encodeDeclare(w, { kind: "unkeyexpr", id: 6 }));
  await new Promise((r) => setTimeout(r, 100));
  pub.sendFrame(put("wk/a/b", "5"));
  assert.deepEqual((await pushesOf(mapped, 5)).slice(4).map(named), [[5, "/a/b", false, "5"]]);
});
