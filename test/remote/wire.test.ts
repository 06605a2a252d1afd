/** The remote API's wire values: primitives, encodings, ZenohIds and the spec's test vectors. */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { Encoding as ZEncoding, ZenohId } from "@eclipse-zenoh/zenoh-ts";
import { fromZenohEncoding, toZenohEncoding } from "../../src/core/encoding.js";
import { idFromZenohId, idToZenohId } from "../../src/core/timestamp.js";
import { decodeQos, decodeQuerySettings, encodeQos } from "../../src/remote/protocol.js";
import { ProtocolError, Reader, Writer } from "../../src/remote/wire.js";

describe("remote API wire format", () => {
  test("a zenoh-ts put frame decodes field by field", () => {
    const frame = Buffer.concat([
      Buffer.from([0x0e, 6]),
      Buffer.from("demo/a"),
      Buffer.from([5]),
      Buffer.from("hello"),
      Buffer.from([0, 0, 0, 0, 0, 0xa5]),
    ]);
    const r = new Reader(frame);
    assert.equal(r.u8(), 14);
    assert.equal(r.string(), "demo/a");
    assert.equal(r.bytes().toString(), "hello");
    assert.deepEqual([r.u16(), r.string()], [0, ""]);
    assert.equal(r.bool(), false);
    assert.equal(r.bool(), false);
    assert.deepEqual(decodeQos(r.u8()), { priority: 5, congestionControl: "drop", express: false, locality: "any" });
    r.end();
  });

  test("LEB128 lengths round-trip across the one-byte boundary; truncation and bad bools are protocol errors", () => {
    for (const n of [0, 127, 128, 300, 70_000]) {
      const w = new Writer(2).bytes(Buffer.alloc(n, 7));
      const r = new Reader(Buffer.from(w.finish()));
      assert.equal(r.bytes().length, n);
      r.end();
    }
    assert.throws(
      () => new Reader(Buffer.from([5, 1, 2])).bytes(),
      (e: unknown) => e instanceof ProtocolError && e.code === 1007,
    );
    assert.throws(() => new Reader(Buffer.from([2])).bool(), ProtocolError);
    assert.throws(() => new Reader(Buffer.from([0xff, 0xff, 0xff, 0xff, 0xff, 0x01])).varint(), ProtocolError);
    assert.throws(() => new Reader(Buffer.from([1, 0xff])).string(), /UTF-8/);
  });

  test("QoS and query-settings bytes", () => {
    assert.equal(encodeQos(undefined), 0xa5);
    assert.equal(
      encodeQos({ priority: 2, congestionControl: "block", express: true }),
      0x02 | 0x08 | 0x10 | 0x20 | 0x80,
    );
    assert.deepEqual(decodeQuerySettings(0b10000), {
      target: "best_matching",
      consolidation: "auto",
      matchingReplies: true,
    });
    assert.deepEqual(decodeQuerySettings(0b01010), {
      target: "all_complete",
      consolidation: "monotonic",
      matchingReplies: false,
    });
    assert.throws(() => decodeQuerySettings(3), ProtocolError);
    assert.throws(() => decodeQos(0), ProtocolError);
  });

  test("encodings map both ways between zenoh ids and MIME types, as the client prints them", () => {
    for (const mime of [
      "text/plain",
      "application/json",
      "zenoh/bytes",
      "image/png",
      "application/x-www-form-urlencoded",
      "video/vp9",
      "text/json5",
    ]) {
      const { id, schema } = toZenohEncoding(mime);
      assert.equal(new ZEncoding(id, schema === "" ? undefined : schema).toString(), mime);
      assert.equal(fromZenohEncoding(id, schema), mime);
      assert.equal(ZEncoding.fromString(mime).toIdSchema()[0], id);
    }
    assert.deepEqual(toZenohEncoding("application/json;v2"), { id: 5, schema: "v2" });
    assert.deepEqual(toZenohEncoding("application/x-mine;v1"), { id: 0xffff, schema: "application/x-mine;v1" });
    assert.equal(fromZenohEncoding(0xffff, "application/x-mine"), "application/x-mine");
    assert.deepEqual(toZenohEncoding(""), { id: 0, schema: "" });
    assert.equal(fromZenohEncoding(999, ""), "zenoh/999");
  });

  test("zest ids become 16-byte ZenohIds read as little-endian numbers, and back", () => {
    assert.equal(new ZenohId(idToZenohId("AB12")).toString(), "0000000000000000000000000000ab12");
    const full = "0123456789ABCDEF0123456789ABCDEF";
    assert.equal(new ZenohId(idToZenohId(full)).toString(), full.toLowerCase());
    assert.equal(idFromZenohId(idToZenohId(full)), full);
    assert.equal(idFromZenohId(idToZenohId("AB12")), "AB12");
    assert.equal(idFromZenohId(new Uint8Array(16)), "00");
  });
});
