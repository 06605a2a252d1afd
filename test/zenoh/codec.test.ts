/**
 * The zenoh 1.x codec (src/zenoh/codec/): the byte layouts of the spec and of zenoh-pico's
 * encoders, and round trips of every message family.
 */
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { test } from "node:test";
import { BinaryReader, BinaryWriter, DecodeError } from "../../src/core/binary.js";
import { Timestamp } from "../../src/core/timestamp.js";
import {
  MandatoryExtensionError,
  readTimestamp,
  readZid,
  writeTimestamp,
  zidBytes,
} from "../../src/zenoh/codec/core.js";
import { decodeDeclaration, encodeDeclaration, type Declaration } from "../../src/zenoh/codec/declarations.js";
import {
  decodeNetwork,
  encodeDeclare,
  encodeInterest,
  encodePush,
  encodeRequest,
  encodeResponseErr,
  encodeResponseFinal,
  encodeResponseReply,
  encodeSamplePush,
  InterestOption,
  pushScratch,
} from "../../src/zenoh/codec/network.js";
import { makeSample, withSampleExtras } from "../../src/core/sample.js";
import {
  decodeTransport,
  encodeClose,
  encodeFragment,
  encodeFrameHeader,
  encodeInitAck,
  encodeKeepAlive,
  encodeOpen,
} from "../../src/zenoh/codec/transport.js";
import { hex, bytes, write } from "./bytes.js";

test("a ZenohId travels little-endian without its trailing zero bytes", () => {
  assert.equal(hex(zidBytes("AB12")), "12ab");
  assert.equal(hex(zidBytes("01")), "01");
  assert.equal(readZid(new BinaryReader(bytes("12ab")), 2), "AB12");
  assert.throws(() => readZid(new BinaryReader(bytes("00")), 17), DecodeError);
});

test("pico's INIT syn (client, patch 1, default sizes) decodes", () => {
  // header Z|INIT, version 9, zid_len 16 | client, 16 bytes of zid, patch extension = 1
  const zid = "0102030405060708090a0b0c0d0e0f10";
  const input = bytes(`81 09 f2 ${Buffer.from(zid, "hex").reverse().toString("hex")} 27 01`);
  const m = decodeTransport(new BinaryReader(input));
  assert.equal(m.kind, "init");
  if (m.kind !== "init") return;
  assert.equal(m.msg.ack, false);
  assert.equal(m.msg.version, 9);
  assert.equal(m.msg.whatami, "client");
  assert.equal(m.msg.zid, zid.toUpperCase());
  assert.equal(m.msg.batchSize, 65_535);
  assert.equal(m.msg.snRes, 2);
  assert.equal(m.msg.patch, 1);
});

test("INIT ack has the spec's layout: sizes, cookie, patch extension", () => {
  const out = write((w) =>
    encodeInitAck(w, {
      whatami: "router",
      zid: "AB12",
      snRes: 2,
      reqRes: 2,
      batchSize: 65_535,
      cookie: bytes("c0ffee"),
      patch: 1,
      qos: false,
    }),
  );
  // Z|S|A|INIT, version, (zid_len-1)<<4 | router, zid, res byte (fsn=2, rid=2), batch u16 LE, cookie, patch ext
  assert.equal(hex(out), "e1" + "09" + "10" + "12ab" + "0a" + "ffff" + "03c0ffee" + "2701");
  const back = decodeTransport(new BinaryReader(out));
  assert.equal(back.kind, "init");
  if (back.kind === "init") {
    assert.equal(back.msg.ack, true);
    assert.equal(hex(back.msg.cookie ?? Buffer.alloc(0)), "c0ffee");
    assert.equal(back.msg.zid, "AB12");
  }
});

test("OPEN syn and ack round-trip, the lease in seconds when whole", () => {
  const syn = write((w) => encodeOpen(w, { ack: false, leaseMs: 10_000, initialSn: 77, cookie: bytes("0102") }));
  assert.equal(hex(syn), "42" + "0a" + "4d" + "020102");
  const m = decodeTransport(new BinaryReader(syn));
  assert.deepEqual(m, {
    kind: "open",
    msg: { ack: false, leaseMs: 10_000, initialSn: 77, cookie: bytes("0102"), qos: false },
  });
  const ack = write((w) => encodeOpen(w, { ack: true, leaseMs: 1500, initialSn: 3 }));
  assert.equal(hex(ack), "22" + "dc0b" + "03");
  assert.deepEqual(decodeTransport(new BinaryReader(ack)), {
    kind: "open",
    msg: { ack: true, leaseMs: 1500, initialSn: 3, qos: false },
  });
});

test("CLOSE, KEEP_ALIVE, FRAME and FRAGMENT headers", () => {
  assert.equal(hex(write((w) => encodeClose(w, 2))), "2302");
  assert.deepEqual(decodeTransport(new BinaryReader(bytes("2302"))), { kind: "close", reason: 2, session: true });
  assert.equal(hex(write((w) => encodeKeepAlive(w))), "04");
  assert.equal(hex(write((w) => encodeFrameHeader(w, 300, true))), "25ac02");
  assert.deepEqual(decodeTransport(new BinaryReader(bytes("25ac02"))), {
    kind: "frame",
    frame: { sn: 300, reliable: true, priority: 5 },
  });
  const frag = write((w) =>
    encodeFragment(w, { sn: 1, reliable: true, more: true, first: true, payload: bytes("aabb") }),
  );
  assert.equal(hex(frag), "e6" + "01" + "02" + "aabb");
  const f = decodeTransport(new BinaryReader(frag));
  assert.equal(f.kind, "fragment");
  if (f.kind === "fragment") {
    assert.equal(f.fragment.first, true);
    assert.equal(f.fragment.more, true);
    assert.equal(hex(f.fragment.payload), "aabb");
  }
});

test("an unknown mandatory extension is refused; an unknown optional one is skipped", () => {
  // KEEP_ALIVE with Z: an optional unit extension 0x0e, then a mandatory 0x1e.
  assert.deepEqual(decodeTransport(new BinaryReader(bytes("84 0e"))), { kind: "keepalive" });
  assert.throws(() => decodeTransport(new BinaryReader(bytes("84 1e"))), MandatoryExtensionError);
  // A zbuf extension is skipped by its length.
  assert.deepEqual(decodeTransport(new BinaryReader(bytes("84 4e 03 010203"))), { kind: "keepalive" });
});

test("pico's PUSH of a put (key by name, encoding, attachment) decodes", () => {
  // PUSH N, scope 0, suffix "demo/x"; PUT Z|E, encoding zenoh/string (id 1 <<1), attachment ext, payload "hi"
  const input = bytes(`3d 00 06 ${Buffer.from("demo/x").toString("hex")} c1 02 43 02 6162 02 6869`);
  const m = decodeNetwork(new BinaryReader(input));
  assert.equal(m.kind, "push");
  if (m.kind !== "push") return;
  assert.deepEqual(m.key, { scope: 0, suffix: "demo/x", senderMapping: false });
  assert.equal(m.body.kind, "put");
  assert.equal(m.body.encoding, "zenoh/string");
  assert.equal(m.body.attachment?.toString(), "ab");
  assert.equal(m.body.payload.toString(), "hi");
});

/** A PUSH on `a/b` with every field a put can carry: timestamp, encoding, source info, attachment, QoS 0x0b. */
function encodeFullPut(w: BinaryWriter, ts: Timestamp): void {
  encodePush(
    w,
    { scope: 0, suffix: "a/b", senderMapping: false },
    {
      kind: "put",
      timestamp: ts,
      encoding: "application/json",
      hasEncoding: true,
      sourceInfo: { zid: "01", eid: 3, sn: 9 },
      attachment: bytes("ff"),
      payload: Buffer.from("{}"),
    },
    0x0b,
  );
}

test("PUSH round-trips with timestamp, QoS, source info and a DEL", () => {
  const ts = new Timestamp(0x0123_4567_89ab_cdefn, "AB12");
  const out = write((w) => encodeFullPut(w, ts));
  const m = decodeNetwork(new BinaryReader(out));
  assert.equal(m.kind, "push");
  if (m.kind !== "push") return;
  assert.equal(m.qos, 0x0b);
  assert.equal(m.body.timestamp?.compare(ts), 0);
  assert.equal(m.body.encoding, "application/json");
  assert.deepEqual(m.body.sourceInfo, { zid: "01", eid: 3, sn: 9 });
  assert.equal(m.body.payload.toString(), "{}");
  const del = write((w) =>
    encodePush(
      w,
      { scope: 4, suffix: "", senderMapping: true },
      { kind: "delete", encoding: "", hasEncoding: false, payload: Buffer.alloc(0) },
    ),
  );
  assert.equal(hex(del), "5d0402");
  const d = decodeNetwork(new BinaryReader(del));
  assert.equal(d.kind === "push" && d.body.kind, "delete");
});

test("REQUEST with a QUERY round-trips: target, timeout, budget, parameters, payload, attachment", () => {
  const out = write((w) =>
    encodeRequest(w, {
      id: 7,
      key: { scope: 0, suffix: "demo/**", senderMapping: false },
      target: "all",
      timeoutMs: 2500,
      budget: 3,
      query: {
        consolidation: "none",
        parameters: "a=1",
        body: { encoding: "text/plain", payload: Buffer.from("q") },
        attachment: bytes("0102"),
      },
    }),
  );
  const m = decodeNetwork(new BinaryReader(out));
  assert.equal(m.kind, "request");
  if (m.kind !== "request" || m.body.kind !== "query") return assert.fail("not a query");
  assert.equal(m.id, 7);
  assert.equal(m.target, "all");
  assert.equal(m.timeoutMs, 2500);
  assert.equal(m.budget, 3);
  assert.equal(m.body.query.consolidation, "none");
  assert.equal(m.body.query.parameters, "a=1");
  assert.equal(m.body.query.body?.encoding, "text/plain");
  assert.equal(m.body.query.body?.payload.toString(), "q");
  assert.equal(hex(m.body.query.attachment ?? Buffer.alloc(0)), "0102");
});

test("RESPONSE (reply and error) and RESPONSE_FINAL round-trip", () => {
  const key = { scope: 0, suffix: "k", senderMapping: false };
  const reply = write((w) =>
    encodeResponseReply(w, 5, key, {
      kind: "put",
      encoding: "text/plain",
      hasEncoding: true,
      payload: Buffer.from("v"),
    }),
  );
  const r = decodeNetwork(new BinaryReader(reply));
  assert.ok(r.kind === "response" && r.body.kind === "reply");
  if (r.kind === "response" && r.body.kind === "reply") {
    assert.equal(r.id, 5);
    assert.equal(r.body.push.payload.toString(), "v");
  }
  const err = write((w) => encodeResponseErr(w, 6, key, { encoding: "text/plain", payload: Buffer.from("boom") }));
  const e = decodeNetwork(new BinaryReader(err));
  assert.ok(e.kind === "response" && e.body.kind === "err" && e.body.err.payload.toString() === "boom");
  assert.equal(hex(write((w) => encodeResponseFinal(w, 300))), "1aac02");
  assert.deepEqual(decodeNetwork(new BinaryReader(bytes("1aac02"))), { kind: "responseFinal", id: 300 });
});

test("every declaration round-trips, and DECLARE carries an interest id", () => {
  const decls: Declaration[] = [
    { kind: "keyexpr", id: 1, key: { scope: 0, suffix: "demo", senderMapping: true } },
    { kind: "unkeyexpr", id: 1 },
    { kind: "subscriber", id: 2, key: { scope: 1, suffix: "/x", senderMapping: true } },
    { kind: "unsubscriber", id: 2 },
    { kind: "unsubscriber", id: 2, key: { scope: 0, suffix: "demo/x", senderMapping: false } },
    { kind: "queryable", id: 3, key: { scope: 0, suffix: "q/**", senderMapping: false }, complete: true, distance: 2 },
    { kind: "unqueryable", id: 3 },
    { kind: "token", id: 4, key: { scope: 0, suffix: "alive/a", senderMapping: false } },
    { kind: "untoken", id: 4, key: { scope: 0, suffix: "alive/a", senderMapping: false } },
    { kind: "final" },
  ];
  for (const d of decls) {
    const out = write((w) => encodeDeclaration(w, d));
    assert.deepEqual(decodeDeclaration(new BinaryReader(out)), d, d.kind);
  }
  const out = write((w) => encodeDeclare(w, { kind: "final" }, 9));
  assert.equal(hex(out), "3e091a");
  assert.deepEqual(decodeNetwork(new BinaryReader(out)), { kind: "declare", interestId: 9, decl: { kind: "final" } });
});

test("INTEREST: current and future, options, a restricting key expression, and final", () => {
  const out = write((w) =>
    encodeInterest(w, {
      id: 2,
      current: true,
      future: true,
      options: InterestOption.TOKENS | InterestOption.AGGREGATE,
      key: { scope: 0, suffix: "group/**", senderMapping: false },
    }),
  );
  const m = decodeNetwork(new BinaryReader(out));
  assert.deepEqual(m, {
    kind: "interest",
    id: 2,
    current: true,
    future: true,
    options: InterestOption.TOKENS | InterestOption.AGGREGATE | InterestOption.RESTRICTED,
    key: { scope: 0, suffix: "group/**", senderMapping: false },
  });
  assert.deepEqual(decodeNetwork(new BinaryReader(bytes("1902"))), {
    kind: "interest",
    id: 2,
    current: false,
    future: false,
    options: 0,
  });
});

test("truncated messages are DecodeErrors", () => {
  const full = write((w) =>
    encodePush(
      w,
      { scope: 0, suffix: "a/b", senderMapping: false },
      { kind: "put", encoding: "text/plain", hasEncoding: true, payload: Buffer.from("xyz") },
    ),
  );
  for (let n = 0; n < full.length; n++) {
    assert.throws(() => decodeNetwork(new BinaryReader(full.subarray(0, n))), DecodeError, `cut at ${n}`);
  }
});

test("timestamps round-trip across seconds, back in time, and at the edges of 64 bits (the writer splits them into 32-bit halves)", () => {
  const times = [
    0n,
    1n,
    0xffff_ffffn,
    0x1_0000_0000n,
    (1_795_633_727n << 32n) | 0xffff_fffen,
    (1_795_633_727n << 32n) | 0xffff_ffffn,
    1_795_633_728n << 32n,
    (1_795_633_727n << 32n) | 5n,
    (1_795_633_728n << 32n) | 0x8000_0000n,
    0xffff_ffff_ffff_ffffn,
    0x7fn,
  ];
  const w = new BinaryWriter(16);
  for (const t of times) {
    const ts = new Timestamp(t, "AB12");
    w.reset();
    writeTimestamp(w, ts);
    const back = readTimestamp(new BinaryReader(w.finish()));
    assert.equal(back.time, t, `time ${t}`);
    assert.equal(back.id, "AB12");
    // The same bytes as the plain 64-bit writer gives.
    const plain = new BinaryWriter(16);
    plain.vle64(t);
    assert.deepEqual(w.finish().subarray(0, plain.length), plain.finish(), `bytes of ${t}`);
  }
});

test("timestamps read one after another keep their own ids: the id read last is reused only for the same bytes", () => {
  // Same length and a different byte, a prefix of another id, the same again, a 16-byte id.
  const ids = ["AB12", "AB12", "AB13", "12", "AB12", "12", "0102030405060708090A0B0C0D0E0F10", "AB12"];
  const w = new BinaryWriter(64);
  for (const id of ids) writeTimestamp(w, new Timestamp(7n, id));
  const r = new BinaryReader(w.finish());
  assert.deepEqual(
    ids.map(() => readTimestamp(r).id),
    ids,
  );
  // Truncated before its id's last byte: refused, not answered from the id read last.
  const one = new BinaryWriter(16);
  writeTimestamp(one, new Timestamp(7n, "0102030405060708090A0B0C0D0E0F10"));
  const bytes = one.finish();
  assert.throws(() => readTimestamp(new BinaryReader(bytes.subarray(0, bytes.length - 1))), DecodeError);
});

test("a sample's PUSH is the bytes of a PUSH named in full, written again for each subscriber while the first copy is intact", () => {
  const ts = new Timestamp((1_795_633_727n << 32n) | 77n, "AB12");
  const sample = withSampleExtras(makeSample("demo/x", "put", Buffer.from("payload"), "text/plain", ts), {
    attachment: bytes("0102"),
  });
  const other = makeSample("demo/y", "put", Buffer.from("other"), "text/plain", ts);
  const expected = write((w) =>
    encodePush(w, { scope: 0, suffix: "demo/x", senderMapping: false }, { ...sample, hasEncoding: true }, 0x0d),
  );
  const first = new BinaryWriter(8);
  first.u8(0xee);
  encodeSamplePush(first, sample, 0x0d);
  assert.equal(hex(first.view().subarray(1)), hex(expected));
  // The next subscriber's copy, into another writer and into the same one.
  const second = new BinaryWriter(8);
  encodeSamplePush(second, sample, 0x0d);
  assert.equal(hex(second.view()), hex(expected));
  encodeSamplePush(first, sample, 0x0d);
  assert.equal(hex(first.view().subarray(1 + expected.length)), hex(expected));
  // Another QoS is another PUSH.
  const low = write((w) => encodeSamplePush(w, sample, 0x01));
  const m = decodeNetwork(new BinaryReader(low));
  assert.ok(m.kind === "push" && m.qos === 0x01 && m.body.payload.toString() === "payload");
  // Once the first writer forgot those bytes (reset, truncated) and wrote others, it is encoded anew.
  for (const forget of [(w: BinaryWriter) => w.reset(), (w: BinaryWriter) => w.truncate(0)]) {
    const a = new BinaryWriter(8);
    encodeSamplePush(a, sample, 0x0d);
    forget(a);
    encodeSamplePush(a, other, 0x0d);
    encodeSamplePush(a, sample, 0x0d);
    a.reset();
    a.bytes(Buffer.alloc(200, 0xaa));
    const b = new BinaryWriter(8);
    encodeSamplePush(b, sample, 0x0d);
    assert.equal(hex(b.view()), hex(expected));
  }
});

test("PUSHes decoded into one scratch message each carry their own fields, none left from the one before", () => {
  const batch = write((w) => {
    encodeFullPut(w, new Timestamp(5n << 32n, "AB12"));
    encodePush(
      w,
      { scope: 7, suffix: "", senderMapping: true },
      { kind: "put", encoding: "", hasEncoding: false, payload: Buffer.from("x") },
    );
    encodePush(
      w,
      { scope: 0, suffix: "c", senderMapping: false },
      { kind: "delete", encoding: "", hasEncoding: false, payload: Buffer.alloc(0) },
    );
  });
  const r = new BinaryReader(batch);
  const scratch = pushScratch();
  const first = decodeNetwork(r, scratch);
  assert.ok(first === scratch && first.kind === "push");
  const kept = first.body.payload;
  assert.equal(first.qos, 0x0b);
  assert.equal(first.body.attachment?.toString("hex"), "ff");
  const second = decodeNetwork(r, scratch);
  assert.ok(second.kind === "push");
  assert.deepEqual(second.key, { scope: 7, suffix: "", senderMapping: true });
  assert.equal(second.qos, 5);
  assert.equal(second.body.timestamp, undefined);
  assert.equal(second.body.attachment, undefined);
  assert.equal(second.body.sourceInfo, undefined);
  assert.equal(second.body.hasEncoding, false);
  assert.equal(second.body.payload.toString(), "x");
  const third = decodeNetwork(r, scratch);
  assert.ok(third.kind === "push" && third.body.kind === "delete" && third.body.payload.length === 0);
  // A payload taken from an earlier message is its own copy, not overwritten.
  assert.equal(kept.toString(), "{}");
  assert.ok(r.done);
});

test("a sample's common PUSH (any QoS, stamped, no attachment) has the bytes of the generic encoder, for every payload size, time and QoS", () => {
  const times = [(1_795_633_727n << 32n) | 0xffff_ffffn, 1n << 56n, 0xffff_ffff_ffff_ffffn, (1n << 56n) - 1n, 5n];
  const payloads = [0, 1, 8, 64, 65, 127, 128, 300, 20_000].map((n) => Buffer.alloc(n, n & 0xff));
  // 5: the default (no QoS extension); 0x0d: congestion control BLOCK, as zenoh-python's publisher
  // with BLOCK sends; 0x11: express, priority 1.
  for (const qos of [5, 0x0d, 0x11])
    for (const time of times)
      for (const payload of payloads)
        for (const [kind, encoding] of [
          ["put", "text/plain"],
          ["put", ""],
          ["put", "application/x-thing;schema"],
          ["delete", ""],
        ] as const) {
          const ts = new Timestamp(time, "C9682867006DF1BDD18C8F861FDA8004");
          const sample = makeSample("demo/fast/key", kind, kind === "put" ? payload : Buffer.alloc(0), encoding, ts);
          const expected = write((w) =>
            encodePush(
              w,
              { scope: 0, suffix: sample.key, senderMapping: false },
              { ...sample, hasEncoding: encoding !== "" },
              qos,
            ),
          );
          const w = new BinaryWriter(8);
          w.u8(0x77);
          encodeSamplePush(w, sample, qos);
          assert.equal(
            hex(w.view().subarray(1)),
            hex(expected),
            `${kind} ${encoding} ${payload.length} bytes at ${time}, QoS ${qos}`,
          );
          const m = decodeNetwork(new BinaryReader(w.view().subarray(1)));
          assert.ok(m.kind === "push" && m.body.timestamp?.compare(ts) === 0 && m.qos === qos);
        }
});
