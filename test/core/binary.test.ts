/**
 * `BinaryReader`/`BinaryWriter` (src/core/binary.ts): round trips, zenoh's variable-length
 * integer layout, and the one typed error for every malformed or truncated input.
 */
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { test } from "node:test";
import { BinaryReader, BinaryWriter, DecodeError, VLE_MAX_BYTES, vleLength } from "../../src/core/binary.js";
import { ZestError } from "../../src/core/errors.js";

function hex(b: Uint8Array): string {
  return Buffer.from(b).toString("hex");
}

test("variable-length integers have zenoh's byte layout", () => {
  const cases: Array<[number, string]> = [
    [0, "00"],
    [1, "01"],
    [0x7f, "7f"],
    [0x80, "8001"],
    [300, "ac02"],
    [0x3fff, "ff7f"],
    [0x4000, "808001"],
    [0xffff_ffff, "ffffffff0f"],
    [Number.MAX_SAFE_INTEGER, "ffffffffffffff0f"],
  ];
  for (const [v, layout] of cases) {
    const w = new BinaryWriter(1);
    w.vle(v);
    assert.equal(hex(w.view()), layout, `encode ${v}`);
    assert.equal(vleLength(v), layout.length / 2, `length of ${v}`);
    const r = new BinaryReader(w.finish());
    assert.equal(r.vle(), v, `decode ${v}`);
    assert.ok(r.done);
  }
});

test("a 64-bit variable-length integer takes 9 bytes at most, the 9th carrying 8 bits", () => {
  const max = (1n << 64n) - 1n;
  const w = new BinaryWriter();
  w.vle64(max);
  assert.equal(hex(w.view()), "ffffffffffffffffff");
  assert.equal(w.length, VLE_MAX_BYTES);
  assert.equal(new BinaryReader(w.view()).vle64(), max);
  for (const v of [0n, 127n, 128n, 1n << 56n, (1n << 63n) + 5n, 1n << 62n]) {
    const x = new BinaryWriter();
    x.vle64(v);
    assert.equal(new BinaryReader(x.view()).vle64(), v, String(v));
  }
  // A reader stops after 9 bytes even when the 9th has its high bit set.
  const r = new BinaryReader(Buffer.from("ffffffffffffffffff01", "hex"));
  assert.equal(r.vle64(), max);
  assert.equal(r.remaining, 1);
});

test("an integer above its limit is a DecodeError", () => {
  const w = new BinaryWriter();
  w.vle64(1n << 60n);
  assert.throws(() => new BinaryReader(w.view()).vle(), DecodeError);
  assert.throws(() => new BinaryReader(Buffer.from([200, 1])).vle(100), DecodeError);
  assert.throws(() => new BinaryReader(Buffer.from([101])).vle(100), DecodeError);
});

test("fixed-width integers round-trip little- and big-endian", () => {
  const w = new BinaryWriter(1);
  w.u8(0xab).u16(0x1234).u16be(0x1234).u32(0xdeadbeef).u32be(0xdeadbeef).u64(0x0102030405060708n).u64be(7n);
  assert.equal(hex(w.view().subarray(0, 5)), "ab34121234");
  const r = new BinaryReader(w.finish());
  assert.equal(r.u8(), 0xab);
  assert.equal(r.u16(), 0x1234);
  assert.equal(r.u16be(), 0x1234);
  assert.equal(r.u32(), 0xdeadbeef);
  assert.equal(r.u32be(), 0xdeadbeef);
  assert.equal(r.u64(), 0x0102030405060708n);
  assert.equal(r.u64be(), 7n);
  assert.ok(r.done);
});

test("length-prefixed bytes and strings round-trip, and their limits hold", () => {
  const w = new BinaryWriter(2);
  w.lenBytes(Buffer.from("abc")).lenString("héllo").string("x").lenBytes(Buffer.alloc(0));
  const r = new BinaryReader(w.finish());
  assert.equal(r.lenBytes().toString(), "abc");
  assert.equal(r.lenString(), "héllo");
  assert.equal(r.string(1), "x");
  assert.equal(r.lenBytes().length, 0);
  assert.ok(r.done);
  const big = new BinaryWriter().lenString("0123456789").finish();
  assert.throws(() => new BinaryReader(big).lenString(9), DecodeError);
  assert.throws(() => new BinaryReader(big).lenBytes(9), DecodeError);
  assert.equal(new BinaryReader(big).lenString(10), "0123456789");
});

test("reading past the end is a DecodeError (a ZestError of kind bad_input), never a RangeError", () => {
  const reads: Array<(r: BinaryReader) => unknown> = [
    (r) => r.u8(),
    (r) => r.peekU8(),
    (r) => r.u16(),
    (r) => r.u16be(),
    (r) => r.u32(),
    (r) => r.u32be(),
    (r) => r.u64(),
    (r) => r.u64be(),
    (r) => r.vle(),
    (r) => r.vle64(),
    (r) => r.bytes(2),
    (r) => r.skip(2),
    (r) => r.lenBytes(),
    (r) => r.lenString(),
    (r) => r.string(2),
    (r) => r.sub(2),
  ];
  for (const input of [Buffer.alloc(0), Buffer.from([0x80]), Buffer.from([0x05])]) {
    for (const read of reads) {
      // A read that fits this input is fine; one that does not must fail with the typed error.
      try {
        const r = new BinaryReader(input);
        read(r);
        read(r);
        read(r);
      } catch (err) {
        assert.ok(err instanceof DecodeError, `${read} on ${hex(input)}: ${String(err)}`);
        assert.ok(err instanceof ZestError);
        assert.equal(err.kind, "bad_input");
      }
    }
  }
  const r = new BinaryReader(Buffer.from([1, 2, 3]));
  assert.throws(() => r.bytes(4), /truncated input: 4 bytes needed at offset 0, 3 left/);
});

test("a sub-reader is bounded by its length, not by its parent's buffer", () => {
  const r = new BinaryReader(Buffer.from([2, 0xaa, 0xbb, 0xcc]));
  const sub = r.sub(r.u8());
  assert.equal(sub.u8(), 0xaa);
  assert.equal(sub.u8(), 0xbb);
  assert.throws(() => sub.u8(), DecodeError);
  assert.equal(r.u8(), 0xcc);
  assert.throws(() => new BinaryReader(Buffer.alloc(2), 1, 3), DecodeError);
});

test("the writer grows, patches a length, and can be reset for reuse", () => {
  const w = new BinaryWriter(16);
  w.u16(0);
  const payload = Buffer.alloc(1000, 7);
  w.bytes(payload);
  w.patchU16(0, payload.length);
  const out = w.finish();
  assert.equal(out.length, 1002);
  assert.equal(out.readUInt16LE(0), 1000);
  assert.throws(() => w.patchU16(1001, 1), RangeError);
  w.reset();
  assert.equal(w.length, 0);
  w.u8(9);
  assert.equal(hex(w.view()), "09");
  assert.throws(() => new BinaryWriter().vle(-1), RangeError);
  assert.throws(() => new BinaryWriter().vle(1.5), RangeError);
});

test("64-bit variable-length integers round-trip across every bit length, byte for byte as LEB128", () => {
  const naive = (v: bigint): string => {
    const out: number[] = [];
    for (let i = 0; i < 8 && v >= 0x80n; i++) {
      out.push(Number(v & 0x7fn) | 0x80);
      v >>= 7n;
    }
    out.push(Number(v));
    return Buffer.from(out).toString("hex");
  };
  let seed = 12345n;
  for (let bits = 0n; bits <= 64n; bits++) {
    for (let k = 0; k < 20; k++) {
      seed = (seed * 6364136223846793005n + 1442695040888963407n) & ((1n << 64n) - 1n);
      const v = bits === 0n ? 0n : (seed & ((1n << bits) - 1n)) | (1n << (bits - 1n));
      const w = new BinaryWriter(1);
      w.vle64(v);
      assert.equal(hex(w.view()), naive(v), `encode ${v}`);
      assert.equal(new BinaryReader(w.view()).vle64(), v, `decode ${v}`);
    }
  }
});
