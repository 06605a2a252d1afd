/**
 * The fabric's binary messages: every message round-trips, and the decoders refuse anything
 * malformed with `MalformedMessage` (never another exception, never a hang), checked on random
 * bytes and on mutations of valid messages from a seeded generator.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { Encoding } from "../../src/core/encoding.js";
import type { Reply } from "../../src/core/reply.js";
import { makeSample } from "../../src/core/sample.js";
import { Timestamp } from "../../src/core/timestamp.js";
import {
  decodeAcks,
  decodeAnnouncement,
  decodeControl,
  decodeDeclarations,
  decodePong,
  decodeReplies,
  decodeSample,
  decodeSamples,
  type DeclarationsMessage,
  encodeAcks,
  encodeControl,
  encodeDeclarations,
  encodeGoodbye,
  encodeHeartbeat,
  encodePong,
  encodeQuery,
  encodeReply,
  encodeSample,
  encodeSamples,
  MalformedMessage,
  markResend,
  ReplyBatch,
} from "../../src/fabric/envelope.js";
import { Inbox, inboxOwner } from "../../src/fabric/inbox.js";
import { ManualClock } from "../../src/fabric/clock.js";
import { PeerTable } from "../../src/fabric/peer-table.js";
import { silentLogger } from "../../src/core/log.js";
import { isValid, keyExprLimits } from "../../src/keyexpr/index.js";
import { rngUnit } from "../support/rng.js";

const ts = new Timestamp(0x1234_5678_9abc_def0n, "A1B2");
const put = makeSample("demo/é/x", "put", Buffer.from([0, 1, 2, 255]), Encoding.TEXT_PLAIN, ts);
const del = makeSample("demo/y", "delete", "", "application/json");

test("a sample round-trips with its origin, kind, timestamp and raw payload; a resend is flagged", () => {
  const data = encodeSample(put, { zid: "AB", epoch: 0xfffffffe, seq: 42 });
  const m = decodeSample(data);
  assert.equal(m.sample.key, put.key);
  assert.equal(m.sample.kind, "put");
  assert.deepEqual(m.sample.payload, put.payload);
  assert.equal(m.sample.encoding, "text/plain");
  assert.equal(m.sample.timestamp?.encode(), ts.encode());
  assert.deepEqual(m.origin, { zid: "AB", epoch: 0xfffffffe, seq: 42 });
  assert.equal(m.resend, false);
  const again = decodeSample(markResend(data));
  assert.equal(again.resend, true);
  assert.equal(decodeSample(data).resend, false, "markResend copies: the original is untouched");
  const many = decodeSamples(encodeSamples([data, encodeSample(del, { zid: "AB", epoch: 0xfffffffe, seq: 43 })]));
  assert.deepEqual(
    many.map((x) => [x.origin.seq, x.sample.kind]),
    [
      [42, "put"],
      [43, "delete"],
    ],
  );
  assert.deepEqual(
    decodeSamples(data).map((x) => x.origin.seq),
    [42],
    "a single sample reads as a batch of one",
  );
  const d = decodeSample(encodeSample(del, { zid: "CD", epoch: 1, seq: 1 }));
  assert.equal(d.sample.kind, "delete");
  assert.equal(d.sample.timestamp, undefined);
  assert.equal(d.network, false);
});

test("a sample names the shared stores holding it; malformed or oversized lists are refused", () => {
  const held = { ...put, attachment: Buffer.of(7), heldIn: ["jetstream/zest_a", "jetstream/é"] };
  const m = decodeSample(encodeSample(held, { zid: "AB", epoch: 1, seq: 9 }, true, true));
  assert.deepEqual(m.sample.heldIn, ["jetstream/zest_a", "jetstream/é"]);
  assert.deepEqual(
    [m.sample.payload, m.sample.attachment, m.resend, m.network],
    [put.payload, Buffer.of(7), true, true],
  );
  assert.equal(decodeSample(encodeSample(put, { zid: "AB", epoch: 1, seq: 9 })).sample.heldIn, undefined);
  const one = encodeSample({ ...del, heldIn: ["s"] }, { zid: "AB", epoch: 1, seq: 1 });
  // `del` has no timestamp, encoding "application/json": the list is the three bytes before the (empty) payload.
  assert.deepEqual([...one.subarray(one.length - 3)], [1, 1, 0x73]);
  const bad = (count: number, name: string): Buffer =>
    Buffer.concat([one.subarray(0, one.length - 3), Buffer.of(count, Buffer.byteLength(name)), Buffer.from(name)]);
  assert.throws(() => decodeSample(bad(0, "s")), /0 shared stores/);
  assert.throws(() => decodeSample(bad(17, "s")), /17 shared stores/);
  assert.throws(() => decodeSample(bad(1, "")), /empty store name/);
  assert.throws(() => decodeSample(bad(2, "s")), /truncated/);
  const origin = { zid: "AB", epoch: 1, seq: 1 };
  assert.throws(() => encodeSample({ ...put, heldIn: [] }, origin), /1 to 16 shared stores/);
  assert.throws(() => encodeSample({ ...put, heldIn: Array.from({ length: 17 }, (_, i) => `s${i}`) }, origin));
  assert.throws(() => encodeSample({ ...put, heldIn: ["x".repeat(256)] }, origin), /1 to 255 bytes/);
});

test("a storage of a shared store is declared with its store; an empty or oversized name is refused", () => {
  const m: DeclarationsMessage = {
    zid: "C1",
    epoch: 3,
    ver: 4,
    decls: [
      { kind: "subscriber", key: "a/**", complete: false },
      { kind: "store", key: "js/**", complete: false, store: "jetstream/zest_js" },
      { kind: "queryable", key: "js/**", complete: true },
    ],
  };
  assert.deepEqual(decodeDeclarations(encodeDeclarations(m)), m);
  const store = (name: string): DeclarationsMessage => ({
    ...m,
    decls: [{ kind: "store", key: "js/**", complete: false, store: name }],
  });
  assert.throws(() => encodeDeclarations(store("")), /1 to 255 bytes/);
  assert.throws(() => encodeDeclarations(store("x".repeat(256))), /1 to 255 bytes/);
  const data = encodeDeclarations(store("s"));
  // The store name is the message's last two bytes: a zero length makes it empty.
  assert.throws(
    () => decodeDeclarations(Buffer.concat([data.subarray(0, data.length - 2), Buffer.of(0)])),
    /empty store name/,
  );
  assert.throws(() => decodeDeclarations(data.subarray(0, data.length - 1)), /truncated/);
});

test("a write its shared stores hold waits only for the routers with another subscriber on its key", () => {
  const table = new PeerTable(new ManualClock(), 1000, { alive() {}, changed() {}, forgotten() {} }, silentLogger);
  const decl = (zid: string, decls: DeclarationsMessage["decls"]): void => {
    table.ingest({ zid, epoch: 1, ver: 1, decls });
  };
  const js = (key: string, store = "jetstream/b"): DeclarationsMessage["decls"][number] => ({
    kind: "store",
    key,
    complete: false,
    store,
  });
  decl("B1", [js("js/**")]);
  decl("C1", [js("js/**"), { kind: "subscriber", key: "js/sse/**", complete: false }]);
  decl("D1", [js("js/**", "jetstream/other")]);
  // Every question but "who waits" sees a storage of a shared store as a subscriber.
  assert.deepEqual(table.interest("js/k", "subscriber"), ["B1", "C1", "D1"]);
  assert.deepEqual(table.ackTargets("js/k", ["jetstream/b"]), ["D1"], "another bucket is no help");
  assert.deepEqual(table.ackTargets("js/sse/x", ["jetstream/b"]), ["C1", "D1"], "an SSE stream on C1 is waited for");
  assert.deepEqual(table.ackTargets("js/k", ["jetstream/b", "jetstream/other"]), []);
  assert.deepEqual(table.ackTargets("js/k", ["jetstream/x"]), ["B1", "C1", "D1"]);
  // Replaced declarations and forgotten routers leave no trace.
  table.ingest({ zid: "B1", epoch: 1, ver: 2, decls: [{ kind: "subscriber", key: "js/**", complete: false }] });
  table.forget("D1", "left");
  assert.deepEqual(table.ackTargets("js/k", ["jetstream/b", "jetstream/other"]), ["B1"]);
  table.forget("B1", "left");
  table.forget("C1", "left");
  assert.deepEqual(table.ackTargets("js/k", ["jetstream/b"]), []);
  assert.deepEqual(table.interest("js/k", "subscriber"), []);
});

test("a sample from a joined zenoh network says so, beside its other flags", () => {
  const m = decodeSample(
    encodeSample({ ...del, attachment: Buffer.of(1) }, { zid: "CD", epoch: 1, seq: 2 }, true, true),
  );
  assert.deepEqual([m.network, m.resend, m.sample.kind, m.sample.attachment], [true, true, "delete", Buffer.of(1)]);
  assert.equal(decodeSample(markResend(encodeSample(put, { zid: "CD", epoch: 1, seq: 3 }, false, true))).network, true);
});

test("attachments and QoS travel with samples and replies; a query carries its target, payload, encoding and attachment", () => {
  const qos = { priority: 2, congestionControl: "block" as const, express: true };
  const rich = { ...put, attachment: Buffer.from([9, 0, 9]), qos };
  const m = decodeSample(encodeSample(rich, { zid: "AB", epoch: 1, seq: 7 }, true));
  assert.deepEqual(m.sample.attachment, rich.attachment);
  assert.deepEqual(m.sample.qos, qos);
  assert.deepEqual(m.sample.payload, put.payload);
  assert.equal(m.resend, true);
  assert.equal(m.sample.kind, "put");
  const onlyQos = decodeSample(
    encodeSample(
      { ...del, qos: { priority: 7, congestionControl: "drop", express: false } },
      { zid: "AB", epoch: 1, seq: 8 },
    ),
  ).sample;
  assert.deepEqual(
    [onlyQos.kind, onlyQos.attachment, onlyQos.qos],
    ["delete", undefined, { priority: 7, congestionControl: "drop", express: false }],
  );
  const onlyAtt = decodeSample(
    markResend(encodeSample({ ...put, attachment: Buffer.alloc(0) }, { zid: "AB", epoch: 1, seq: 9 })),
  );
  assert.deepEqual([onlyAtt.sample.attachment, onlyAtt.sample.qos, onlyAtt.resend], [Buffer.alloc(0), undefined, true]);
  assert.equal(
    decodeSample(encodeSample({ ...put, qos: { ...qos, priority: 0 } }, { zid: "AB", epoch: 1, seq: 1 })).sample.qos,
    undefined,
    "a priority zenoh does not know is not carried",
  );
  assert.equal(decodeSample(encodeSample(put, { zid: "AB", epoch: 1, seq: 1 })).sample.attachment, undefined);

  const batch = new ReplyBatch();
  batch.addEncoded(encodeReply({ kind: "ok", sample: rich }));
  batch.addEncoded(encodeReply({ kind: "ok", sample: { ...del, attachment: Buffer.from("z") } }));
  const [r1, r2] = decodeReplies(batch.take(true)).replies;
  assert.ok(r1?.kind === "ok" && r2?.kind === "ok");
  assert.deepEqual([r1.sample.attachment, r1.sample.qos, r1.sample.payload], [rich.attachment, qos, put.payload]);
  assert.deepEqual([r2.sample.kind, r2.sample.attachment, r2.sample.qos], ["delete", Buffer.from("z"), undefined]);

  const content = { payload: Buffer.from('{"n":3}'), encoding: "application/json", attachment: Buffer.from([1, 2]) };
  assert.deepEqual(
    decodeControl(encodeQuery({ key: "q/x", parameters: "a=1", timeoutMs: 9, target: "all_complete", content })),
    {
      type: "query",
      query: { key: "q/x", parameters: "a=1", timeoutMs: 9, target: "all_complete", content },
    },
  );
  assert.deepEqual(decodeControl(encodeQuery({ key: "q", parameters: "", timeoutMs: 9, target: "best_matching" })), {
    type: "query",
    query: { key: "q", parameters: "", timeoutMs: 9, target: "best_matching" },
  });
  assert.deepEqual(
    decodeControl(encodeQuery({ key: "q", parameters: "", timeoutMs: 9, content: { encoding: "text/plain" } })),
    {
      type: "query",
      query: { key: "q", parameters: "", timeoutMs: 9, target: "all", content: { encoding: "text/plain" } },
    },
  );
  const plain = encodeQuery({ key: "q", parameters: "", timeoutMs: 9, target: "all", content: {} });
  assert.equal(plain.length, 1 + 4 + 2 + 1 + 2, "a query with nothing more keeps the short layout");
});

test("replies, acknowledgements, declarations, heartbeats, goodbyes, queries and pings round-trip", () => {
  const batch = new ReplyBatch();
  const replies: Reply[] = [
    { kind: "ok", sample: put },
    { kind: "ok", sample: del },
    { kind: "err", errorKind: "timeout", encoding: Encoding.TEXT_PLAIN, payload: Buffer.from("late") },
  ];
  for (const r of replies) batch.addEncoded(encodeReply(r));
  const decoded = decodeReplies(batch.take(true));
  assert.equal(decoded.final, true);
  assert.equal(decoded.replies.length, 3);
  assert.deepEqual(decoded.replies[2], replies[2]);
  assert.equal(decoded.replies[0]!.kind === "ok" && decoded.replies[0].sample.key, put.key);

  const acks = {
    zid: "B1",
    acks: [
      { seq: 1, errorKind: undefined, message: "" },
      { seq: 2, errorKind: "conflict" as const, message: "nope" },
    ],
  };
  assert.deepEqual(decodeAcks(encodeAcks(acks)), acks);

  const decls = {
    zid: "C1",
    epoch: 7,
    ver: 3,
    decls: [
      { kind: "subscriber" as const, key: "a/**", complete: false },
      { kind: "queryable" as const, key: "q/*", complete: true },
      { kind: "token" as const, key: "alive/c", complete: false },
    ],
  };
  assert.deepEqual(decodeDeclarations(encodeDeclarations(decls)), decls);
  assert.deepEqual(decodeAnnouncement(encodeDeclarations(decls)), { type: "declarations", m: decls });
  assert.deepEqual(decodeAnnouncement(encodeHeartbeat({ zid: "C1", epoch: 7, ver: 3 })), {
    type: "heartbeat",
    m: { zid: "C1", epoch: 7, ver: 3 },
  });
  assert.deepEqual(decodeAnnouncement(encodeGoodbye({ zid: "C1", epoch: 7 })), {
    type: "goodbye",
    m: { zid: "C1", epoch: 7 },
  });
  assert.deepEqual(decodeControl(encodeQuery({ key: "q/x", parameters: "a=1;b=é", timeoutMs: 1500 })), {
    type: "query",
    query: { key: "q/x", parameters: "a=1;b=é", timeoutMs: 1500 },
  });
  assert.deepEqual(decodeControl(encodeControl("ping")), { type: "ping" });
  assert.deepEqual(decodeControl(encodeControl("declarations_request")), { type: "declarations_request" });
  assert.equal(decodePong(encodePong("D1")), "D1");
});

test("the decoders refuse what a peer could get wrong, with a reason", () => {
  const sample = encodeSample(put, { zid: "AB", epoch: 1, seq: 5 });
  const cases: Array<[string, () => unknown, RegExp]> = [
    ["empty", () => decodeSample(Buffer.alloc(0)), /not a sample message/],
    ["wrong type", () => decodeSample(encodePong("AB")), /not a sample message/],
    ["truncated", () => decodeSample(sample.subarray(0, 20)), /truncated/],
    ["unknown flags", () => decodeSample(Buffer.concat([Buffer.of(1, 128), sample.subarray(2)])), /unknown flags/],
    [
      "priority 0",
      () =>
        decodeSample(
          encodeSample(
            { ...put, qos: { priority: 5, congestionControl: "drop", express: false } },
            { zid: "AB", epoch: 1, seq: 1 },
          ).map((b, i, all) => (i === all.length - 6 ? 0 : b)),
        ),
      /priority 0 is not 1 to 7/,
    ],
    [
      "unknown QoS flags",
      () =>
        decodeSample(
          encodeSample(
            { ...put, qos: { priority: 5, congestionControl: "drop", express: false } },
            { zid: "AB", epoch: 1, seq: 1 },
          ).map((b, i, all) => (i === all.length - 5 ? 4 : b)),
        ),
      /unknown QoS flags 4/,
    ],
    [
      "lying attachment length",
      () =>
        decodeSample(
          encodeSample({ ...put, attachment: Buffer.from("ab") }, { zid: "AB", epoch: 1, seq: 1 }).map((b, i, all) =>
            i === all.length - 10 ? 0xff : b,
          ),
        ),
      /truncated/,
    ],
    [
      "error reply with extras",
      () => decodeReplies(Buffer.of(2, 1, 0, 0, 0, 1, 6, 1, 0, 0, 0, 0, 0, 0)),
      /unknown reply kind 6/,
    ],
    [
      "unknown query target",
      () => decodeControl(Buffer.concat([encodeQuery({ key: "q", parameters: "", timeoutMs: 1 }), Buffer.of(3, 0)])),
      /unknown target 3/,
    ],
    [
      "unknown query flags",
      () => decodeControl(Buffer.concat([encodeQuery({ key: "q", parameters: "", timeoutMs: 1 }), Buffer.of(0, 8)])),
      /unknown flags 8/,
    ],
    [
      "query tail cut",
      () => decodeControl(Buffer.concat([encodeQuery({ key: "q", parameters: "", timeoutMs: 1 }), Buffer.of(1)])),
      /truncated/,
    ],
    ["bad seq", () => decodeSample(encodeSample(put, { zid: "AB", epoch: 1, seq: 0.5 })), /sequence number/],
    ["bad zid", () => decodeSample(encodeSample(put, { zid: "zz", epoch: 1, seq: 1 })), /malformed router id/],
    [
      "bad utf-8",
      () => decodeSample(encodeSample({ ...put, key: "a" }, { zid: "AB", epoch: 1, seq: 1 }).fill(0xff, 26, 27)),
      /UTF-8/,
    ],
    [
      "bad timestamp",
      () =>
        decodeSample(encodeSample({ ...put, timestamp: new Timestamp(1n, "xyz") }, { zid: "AB", epoch: 1, seq: 1 })),
      /malformed timestamp/,
    ],
    [
      "lying count",
      () => decodeAcks(Buffer.of(3, 2, 0x41, 0x42, 0xff, 0xff, 0xff, 0xff)),
      /count 4294967295 exceeds the message/,
    ],
    [
      "trailing bytes",
      () => decodeAnnouncement(Buffer.concat([encodeHeartbeat({ zid: "C1", epoch: 1, ver: 1 }), Buffer.of(0)])),
      /trailing bytes/,
    ],
    [
      "unknown declaration kind",
      () => decodeDeclarations(Buffer.of(4, 0, 0, 0, 1, 0, 0, 0, 1, 2, 0x43, 0x31, 0, 0, 0, 1, 9, 0, 0, 1, 0x61)),
      /unknown declaration kind 9/,
    ],
    ["flag not 0/1", () => decodeReplies(Buffer.of(2, 7, 0, 0, 0, 0)), /neither 0 nor 1/],
    ["unknown message on the query subject", () => decodeControl(Buffer.of(42)), /not a query message/],
    ["JSON of the old protocol", () => decodeAnnouncement(Buffer.from('{"t":"hb","zid":"A1"}')), /not an announcement/],
  ];
  for (const [what, fn, re] of cases) {
    assert.throws(fn, (e: unknown) => e instanceof MalformedMessage && re.test(e.message), what);
  }
});

test("inbox subjects are built and read back by type; foreign subjects read as nothing", () => {
  const inbox = new Inbox("A1");
  const addresses = [
    { kind: "sample", seq: 12 },
    { kind: "sample", seq: 13, zid: "B1" },
    { kind: "acks" },
    { kind: "replies", qid: 4, zid: "C1" },
    { kind: "hello" },
    { kind: "declarations", zid: "B1" },
    { kind: "pong", zid: "B1" },
  ] as const;
  for (const a of addresses) assert.deepEqual(inbox.parse(inbox.subject(a)), a);
  assert.equal(inbox.acksSubjectOf("B1"), "zest.in.B1.k");
  for (const s of [
    "zest.in.A1",
    "zest.in.A1x.k",
    "zest.in.A1.a",
    "zest.in.A1.a.01",
    "zest.in.A1.a.1.b1",
    "zest.in.A1.r.1",
    "zest.in.A1.r",
    "zest.in.A1.r.",
    "zest.in.A1.r..C1",
    "zest.in.A1.r.01.C1",
    "zest.in.A1.r.1.c1",
    "zest.in.A1.r.1.C1.x",
    "zest.in.A1.r.-1.C1",
    "zest.in.A1.r.12345678901234567.C1",
    "zest.in.A1.k.1",
    "zest.in.A1.q",
    "zest.in.B1.k",
    "zest.in.A1.a.1e3",
  ]) {
    assert.equal(inbox.parse(s), undefined, s);
  }
});

test("a query's sender is read off its reply subject; anything else names nobody", () => {
  assert.equal(inboxOwner(new Inbox("A1").subject({ kind: "replies", qid: 4, zid: "C1" })), "A1");
  for (const s of [
    "",
    "zest.in",
    "zest.in.",
    "zest.in.A1",
    "zest.in.a1.r.1.C1",
    "zest.in..r",
    "zest.inA1.r",
    "_INBOX.A1.r",
  ])
    assert.equal(inboxOwner(s), undefined, s);
  assert.equal(inboxOwner(`zest.in.${"A".repeat(34)}.r.1.C1`), undefined);
});

test("fuzz: 100,000 random and mutated messages decode or throw MalformedMessage, nothing else", () => {
  const seed = Number(process.env.FUZZ_SEED ?? 0x5eed);
  const rand = rngUnit(seed);
  const int = (n: number): number => Math.floor(rand() * n);
  const batch = new ReplyBatch();
  batch.addEncoded(encodeReply({ kind: "ok", sample: put }));
  batch.addEncoded(
    encodeReply({
      kind: "ok",
      sample: { ...put, attachment: Buffer.from("r"), qos: { priority: 3, congestionControl: "drop", express: false } },
    }),
  );
  batch.addEncoded(
    encodeReply({ kind: "err", errorKind: "internal", encoding: Encoding.TEXT_PLAIN, payload: Buffer.from("x") }),
  );
  const valid: Buffer[] = [
    encodeSample(put, { zid: "AB", epoch: 3, seq: 9 }),
    encodeSample(
      { ...put, attachment: Buffer.from("att"), qos: { priority: 1, congestionControl: "block", express: true } },
      { zid: "AB", epoch: 3, seq: 12 },
    ),
    encodeSample({ ...del, attachment: Buffer.from("a") }, { zid: "AB", epoch: 3, seq: 13 }),
    encodeSample(del, { zid: "ABCD", epoch: 0, seq: 1 }, true),
    batch.take(false),
    encodeAcks({
      zid: "B1",
      acks: [
        { seq: 1, errorKind: undefined, message: "" },
        { seq: 3, errorKind: "forbidden", message: "no" },
      ],
    }),
    encodeDeclarations({
      zid: "C1",
      epoch: 1,
      ver: 2,
      decls: [
        { kind: "subscriber", key: "a/**", complete: false },
        { kind: "queryable", key: "b", complete: true },
      ],
    }),
    encodeHeartbeat({ zid: "C1", epoch: 1, ver: 2 }),
    encodeGoodbye({ zid: "C1", epoch: 1 }),
    encodeQuery({ key: "q/*", parameters: "x=1", timeoutMs: 10 }),
    encodeQuery({
      key: "q/*",
      parameters: "",
      timeoutMs: 10,
      target: "best_matching",
      content: { payload: Buffer.from("body"), encoding: "text/plain", attachment: Buffer.from("a") },
    }),
    encodeControl("ping"),
    encodePong("D1"),
    encodeSamples([
      encodeSample(put, { zid: "AB", epoch: 3, seq: 10 }),
      encodeSample(del, { zid: "AB", epoch: 3, seq: 11 }),
    ]),
  ];
  const decoders = [
    decodeSample,
    decodeSamples,
    decodeReplies,
    decodeAcks,
    decodeDeclarations,
    decodeAnnouncement,
    decodeControl,
    decodePong,
  ];
  const mutate = (b: Buffer): Buffer => {
    const m = Buffer.from(b);
    switch (int(5)) {
      case 0: // flip bytes
        for (let i = 1 + int(4); i > 0; i--) m[int(m.length)] = int(256);
        return m;
      case 1: // truncate
        return m.subarray(0, int(m.length));
      case 2: // append junk
        return Buffer.concat([m, randomBytes(1 + int(16))]);
      case 3: // a length or count set large
        if (m.length > 3) m.writeUInt16BE(int(0x10000), 1 + int(m.length - 3));
        return m;
      default: // splice two messages
        return Buffer.concat([m.subarray(0, int(m.length)), valid[int(valid.length)]!.subarray(int(8))]);
    }
  };
  const byType = new Map<number, (d: Uint8Array) => unknown>([
    [1, decodeSample],
    [2, decodeReplies],
    [3, decodeAcks],
    [4, decodeDeclarations],
    [5, decodeAnnouncement],
    [6, decodeAnnouncement],
    [7, decodeControl],
    [8, decodeControl],
    [9, decodePong],
    [10, decodeControl],
    [11, decodeSamples],
  ]);
  const randomBytes = (n: number): Buffer => {
    const b = Buffer.allocUnsafe(n);
    for (let i = 0; i < n; i++) b[i] = int(256);
    return b;
  };
  // What decodes as declarations goes on to a peer table, as the fabric does: its keys are not
  // checked by the decoder, and the table must drop the bad ones without throwing.
  const table = new PeerTable(new ManualClock(), 1000, { alive() {}, changed() {}, forgotten() {} }, silentLogger, {
    keyExpr: keyExprLimits({ maxLength: 16, maxChunks: 3 }),
    maxPerPeer: 2,
  });
  let ingested = 0;
  let decoded = 0;
  let refused = 0;
  const N = 100_000;
  for (let i = 0; i < N; i++) {
    const data = i % 4 === 0 ? randomBytes(int(64)) : mutate(valid[int(valid.length)]!);
    // Mostly the decoder for the message's type (it gets past the type byte), at times another.
    const own = byType.get(data[0] ?? 0);
    for (const decode of [own && int(8) > 0 ? own : decoders[int(decoders.length)]!]) {
      let out: unknown;
      try {
        out = decode(data);
        decoded++;
      } catch (e) {
        if (!(e instanceof MalformedMessage))
          assert.fail(`seed ${seed}, case ${i}, ${decode.name}(${data.toString("hex")}) threw ${String(e)}`);
        refused++;
        continue;
      }
      if (decode === decodeDeclarations) {
        const m = out as DeclarationsMessage;
        // A new version each time, so every message is indexed, not taken as a repeat.
        table.ingest({ ...m, ver: ++ingested });
        for (const d of table.get(m.zid)!.decls)
          assert.ok(isValid(d.key) && Buffer.byteLength(d.key) <= 16, `seed ${seed}, case ${i}: kept ${d.key}`);
      }
    }
  }
  assert.ok(decoded > 1_000 && refused > 30_000, `decoded ${decoded}, refused ${refused}`);
  assert.ok(ingested > 100, `${ingested} declarations messages ingested`);
});

test("a deadline travels with samples and replies; a sample without one encodes as before deadlines existed", () => {
  const ts = new Timestamp(0x1234n << 32n, "AB");
  const origin = { zid: "AB", epoch: 7, seq: 1 };
  const plain = makeSample("k/a", "put", "v", Encoding.TEXT_PLAIN, ts);
  const bytes = encodeSample(plain, origin);
  assert.ok(bytes[1]! <= 15, "no new flag on a sample without a deadline");
  assert.equal(decodeSample(bytes).sample.deadline, undefined);
  const timed = { ...plain, deadline: 1_800_000_000_123, attachment: Buffer.from("a") };
  const back = decodeSample(encodeSample(timed, origin)).sample;
  assert.equal(back.deadline, 1_800_000_000_123);
  assert.equal(back.attachment?.toString(), "a");
  const batch = new ReplyBatch();
  batch.addEncoded(encodeReply({ kind: "ok", sample: timed }));
  const [reply] = decodeReplies(batch.take(true)).replies;
  assert.equal(reply?.kind === "ok" ? reply.sample.deadline : undefined, 1_800_000_000_123);
  // A deadline that is no time (NaN, negative, past year 9999) is refused.
  for (const bad of [Number.NaN, -1, 1e20]) {
    const b = encodeSample({ ...plain, deadline: bad }, origin);
    assert.throws(() => decodeSample(b), MalformedMessage);
  }
});
