/**
 * Extensions the router carries unchanged, as zenoh's router does (docs/zenoh-protocol.md,
 * "Extensions carried"): source info, the timestamp stack (0x7) and network timestamp (0x2) of
 * PUSH, REQUEST and RESPONSE, a RESPONSE's responder id, and unknown extensions of the zenoh
 * messages inside them; decoded from zenoh's bytes and written out again byte for byte.
 */
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { test } from "node:test";
import { BinaryReader } from "../../src/core/binary.js";
import { makeSample } from "../../src/core/sample.js";
import { Timestamp } from "../../src/core/timestamp.js";
import { MAX_CARRIED_EXTS, MandatoryExtensionError, writeTimestamp } from "../../src/zenoh/codec/core.js";
import {
  carriedExtensions,
  decodeNetwork,
  encodeRequest,
  encodeSamplePush,
  encodeSampleResponse,
  type NetworkMsg,
} from "../../src/zenoh/codec/network.js";
import { withRouteRecord } from "../../src/zenoh/codec/timestamp-stack.js";
import { bytes, hex, write } from "./bytes.js";

const decode = (b: Buffer): NetworkMsg => decodeNetwork(new BinaryReader(b));
const name = (s: string): string => `${Buffer.from([s.length]).toString("hex")}${Buffer.from(s).toString("hex")}`;

/** A timestamp stack (0x7, zbuf), last of its chain: conf SEND, one SEND interception of 2 bytes. */
const TS_STACK = "47 05 01 01 01 abcd";
/** A stack instrumented for SEND only: the router adds no record, so nothing stamps it. */
const noStamp = (): Timestamp => assert.fail("a stack not instrumented for ROUTE was stamped");

/** A network timestamp (0x2, zbuf), more to follow: time 0x01, zid of one byte 0x0a. */
const NET_TS_MORE = "c2 03 01 00 0a";
/** Source info (0x1, zbuf): zid of 2 bytes (len-1 in the high nibble) 0x0102, eid 3, sn 300. */
const SOURCE_INFO = "06 10 0102 03 ac02";

test("a PUSH's timestamp stack and network timestamp, and its PUT's source info and unknown extension, are written out again byte for byte", () => {
  // PUSH N|Z, scope 0, "k/a"; network timestamp (more), timestamp stack; PUT Z: source info
  // (more), unknown optional extension 0x0e (zbuf, last), payload "v".
  const exts = `${NET_TS_MORE} ${TS_STACK}`;
  const putExts = `c1 ${SOURCE_INFO} 4e 02 beef`;
  const input = bytes(`bd 00 ${name("k/a")} ${exts} 81 ${putExts} 01 76`);
  const m = decode(input);
  assert.ok(m.kind === "push");
  assert.deepEqual(m.body.sourceInfo, { zid: "0201", eid: 3, sn: 300 });
  assert.deepEqual(m.exts?.map(hex), [hex(bytes("42 03 01 00 0a")), hex(bytes(TS_STACK))]);
  assert.deepEqual(m.body.unknownExts?.map(hex), ["4e02beef"]);

  // The router's sample of it, as a subscriber receives it: the same bytes, the same extensions.
  const sample = makeSample("k/a", "put", m.body.payload, "", undefined, {
    sourceInfo: m.body.sourceInfo,
    extensions: carriedExtensions(m.exts, m.body.unknownExts, noStamp),
  });
  const out = write((w) => encodeSamplePush(w, sample, 5));
  assert.equal(hex(out), hex(input));
});

test("a DEL carries its source info and timestamp stack too", () => {
  const input = bytes(`bd 00 ${name("k/d")} ${TS_STACK} 82 41 ${SOURCE_INFO}`);
  const m = decode(input);
  assert.ok(m.kind === "push" && m.body.kind === "delete");
  const sample = makeSample("k/d", "delete", Buffer.alloc(0), "", undefined, {
    sourceInfo: m.body.sourceInfo,
    extensions: carriedExtensions(m.exts, m.body.unknownExts, noStamp),
  });
  assert.equal(hex(write((w) => encodeSamplePush(w, sample, 5))), hex(input));
});

test("a REQUEST's timestamp stack and its QUERY's source info and unknown extension are forwarded", () => {
  // REQUEST N|Z, id 7, "q/*"; target all (more), timestamp stack; QUERY C|P|Z consolidation none,
  // parameters "_anyke", source info (more), unknown optional 0x0e.
  const input = bytes(`bc 07 00 ${name("q/*")} b4 01 ${TS_STACK} e3 01 ${name("_anyke")} c1 ${SOURCE_INFO} 4e 01 aa`);
  const m = decode(input);
  assert.ok(m.kind === "request" && m.body.kind === "query");
  assert.equal(m.target, "all");
  assert.deepEqual(m.exts?.map(hex), [hex(bytes(TS_STACK))]);
  const q = m.body.query;
  assert.deepEqual(q.sourceInfo, { zid: "0201", eid: 3, sn: 300 });
  assert.deepEqual(q.unknownExts?.map(hex), ["4e01aa"]);
  const out = write((w) => encodeRequest(w, { id: 7, key: m.key, target: m.target, exts: m.exts, query: q }));
  assert.equal(hex(out), hex(input));
});

test("a RESPONSE's responder id and timestamp stack, and its reply's source info, are forwarded", () => {
  // RESPONSE N|Z, id 9, "r/x"; responder (0x3 zbuf, more): zid 0x0a, eid 4; timestamp stack;
  // REPLY; PUT Z: source info; payload "ok".
  const input = bytes(`bb 09 00 ${name("r/x")} c3 03 00 0a 04 ${TS_STACK} 04 81 41 ${SOURCE_INFO} 02 6f6b`);
  const m = decode(input);
  assert.ok(m.kind === "response" && m.body.kind === "reply");
  assert.deepEqual(m.responder, { zid: "0A", eid: 4 });
  const b = m.body.push;
  const sample = makeSample("r/x", "put", b.payload, "", b.timestamp, {
    sourceInfo: b.sourceInfo,
    extensions: carriedExtensions(m.exts, b.unknownExts, noStamp),
  });
  assert.equal(hex(write((w) => encodeSampleResponse(w, 9, sample))), hex(input));
});

test("a PUSH's node id (mandatory, meaningful between routers only) is read and dropped", () => {
  const input = bytes(`bd 00 ${name("k/n")} 33 05 01 01 76`);
  const m = decode(input);
  assert.ok(m.kind === "push");
  assert.equal(m.exts, undefined);
  assert.equal(m.body.payload.toString(), "v");
});

test("an unknown mandatory extension of a PUT is still refused; at most MAX_CARRIED_EXTS are carried", () => {
  assert.throws(() => decode(bytes(`3d 00 ${name("k/m")} 81 5e 01 aa 01 76`)), MandatoryExtensionError);
  const many = Array.from(
    { length: MAX_CARRIED_EXTS + 4 },
    (_, i) => `${i === MAX_CARRIED_EXTS + 3 ? "4e" : "ce"} 01 aa`,
  );
  const m = decode(bytes(`3d 00 ${name("k/m")} 81 ${many.join(" ")} 01 76`));
  assert.ok(m.kind === "push");
  assert.equal(m.body.unknownExts?.length, MAX_CARRIED_EXTS);
  assert.equal(m.body.payload.toString(), "v");
});

test("a consolidation value zenoh does not know is read as auto, as zenoh reads it", () => {
  // QUERY C with consolidation 9.
  const m = decode(bytes(`3c 01 00 ${name("q/c")} 23 09`));
  assert.ok(m.kind === "request" && m.body.kind === "query");
  assert.equal(m.body.query.consolidation, "auto");
});

test("a timestamp stack instrumented for ROUTE gets this router's record, as zenohd adds its own; others are carried as they came", () => {
  // conf SEND|ROUTE|RECEIVE; one SEND record: flags 01, a timestamp of 3 bytes (aa bb cc).
  const stack = bytes("47 07 07 01 01 03 aabbcc");
  const other = bytes("02 03 01 00 0a");
  const ts = new Timestamp(0x1234n, "AB01");
  const stampBytes = write((w) => writeTimestamp(w, ts));
  const out = withRouteRecord([other, stack], () => ts);
  assert.deepEqual(out?.map(hex), [
    hex(other),
    // conf 07, 2 records: the SEND one as it was, then ROUTE (02) with the router's timestamp.
    hex(
      Buffer.concat([
        bytes(`47 ${(9 + stampBytes.length).toString(16).padStart(2, "0")} 07 02 01 03 aabbcc 02`),
        Buffer.from([stampBytes.length]),
        stampBytes,
      ]),
    ),
  ]);
  // Not instrumented for ROUTE: the same array back.
  const sendOnly = [bytes("47 07 01 01 01 03 aabbcc")];
  assert.equal(withRouteRecord(sendOnly, noStamp), sendOnly);
  // Malformed (a length past the end) or full (255 records, the most zenoh reads): as they came.
  const malformed = [bytes("47 09 07 01 01 03 aabbcc")];
  assert.equal(withRouteRecord(malformed, noStamp), malformed);
  const body = write((w) => {
    w.u8(0x07).vle(255);
    for (let i = 0; i < 255; i++) w.u8(0x01).vle(0);
  });
  const full = [write((w) => w.u8(0x47).vle(body.length).bytes(body))];
  assert.equal(withRouteRecord(full, noStamp), full);
  assert.equal(withRouteRecord(undefined, noStamp), undefined);
});
