/**
 * Bounds-checked binary reading and writing, shared by every binary codec (the zenoh wire
 * protocol, the fabric envelope, stored values). Reading past the end, or a length or integer
 * larger than its limit, throws one typed error, a `DecodeError` (a `ZestError` of kind
 * `bad_input`), never a `RangeError` from `Buffer`: a codec can catch one class and close the
 * offending connection.
 *
 * Integers: fixed-width little-endian (the zenoh wire) and big-endian (the fabric envelope),
 * and zenoh's variable-length integers (docs/zenoh-protocol.md): LEB128, seven bits per byte
 * with the high bit saying "more", at most 9 bytes, the 9th byte carrying 8 full bits so that
 * any 64-bit value fits (zenoh-pico's `_z_zint64_decode`, zenoh-rust's `VLE_LEN_MAX`).
 */
import { Buffer } from "node:buffer";
import { ZestError } from "./errors.js";

/** Input that does not decode: truncated, oversized, or not of the expected shape. */
export class DecodeError extends ZestError {
  constructor(message: string) {
    super("bad_input", message);
    this.name = "DecodeError";
  }
}

/** The most bytes a zenoh variable-length integer takes. */
export const VLE_MAX_BYTES = 9;

const TWO_32 = 0x1_0000_0000;
/** Up to this many bytes, a loop copies faster than `TypedArray.prototype.set` (a builtin call). */
const SMALL_COPY = 32;
const EMPTY = Buffer.alloc(0);

/** The number of bytes `v` takes as a zenoh variable-length integer (`v` a safe non-negative integer). */
export function vleLength(v: number): number {
  let n = 1;
  while (v >= 0x80 && n < VLE_MAX_BYTES) {
    v = Math.floor(v / 128);
    n++;
  }
  return n;
}

/** Reads a byte range front to back; every read checks its bounds first. */
export class BinaryReader {
  /** The buffer read from (a view: slices share its memory). */
  readonly buf: Buffer;
  /** The next byte to read. */
  pos: number;
  /** One past the last readable byte. */
  readonly end: number;

  constructor(buf: Uint8Array, start = 0, end = buf.length) {
    this.buf = Buffer.isBuffer(buf) ? buf : Buffer.from(buf.buffer, buf.byteOffset, buf.byteLength);
    if (start < 0 || end > buf.length || start > end) throw new DecodeError(`bad range ${start}..${end}`);
    this.pos = start;
    this.end = end;
  }

  /** Bytes left to read. */
  get remaining(): number {
    return this.end - this.pos;
  }

  /** True when every byte has been read. */
  get done(): boolean {
    return this.pos >= this.end;
  }

  /** Throws unless `n` more bytes can be read. */
  need(n: number): void {
    if (n > this.end - this.pos) {
      throw new DecodeError(`truncated input: ${n} bytes needed at offset ${this.pos}, ${this.end - this.pos} left`);
    }
  }

  u8(): number {
    if (this.pos >= this.end) this.need(1);
    return this.buf[this.pos++] as number;
  }

  /** The next byte, without consuming it. */
  peekU8(): number {
    if (this.pos >= this.end) this.need(1);
    return this.buf[this.pos] as number;
  }

  u16(): number {
    this.need(2);
    const v = this.buf.readUInt16LE(this.pos);
    this.pos += 2;
    return v;
  }

  u16be(): number {
    this.need(2);
    const v = this.buf.readUInt16BE(this.pos);
    this.pos += 2;
    return v;
  }

  u32(): number {
    this.need(4);
    const v = this.buf.readUInt32LE(this.pos);
    this.pos += 4;
    return v;
  }

  u32be(): number {
    this.need(4);
    const v = this.buf.readUInt32BE(this.pos);
    this.pos += 4;
    return v;
  }

  /** A big-endian IEEE 754 double (Unix milliseconds on zest's own wires). */
  f64be(): number {
    this.need(8);
    const v = this.buf.readDoubleBE(this.pos);
    this.pos += 8;
    return v;
  }

  u64(): bigint {
    this.need(8);
    const v = this.buf.readBigUInt64LE(this.pos);
    this.pos += 8;
    return v;
  }

  u64be(): bigint {
    this.need(8);
    const v = this.buf.readBigUInt64BE(this.pos);
    this.pos += 8;
    return v;
  }

  /**
   * A zenoh variable-length integer as a number; throws when it is above `max` (by default
   * `Number.MAX_SAFE_INTEGER`). Use `vle64` for values that may need all 64 bits.
   */
  vle(max = Number.MAX_SAFE_INTEGER): number {
    // Fast path: most integers on the wire (flags, ids, lengths under 16 KiB) take one or two bytes.
    const b0 = this.u8();
    if (b0 < 0x80) {
      if (b0 > max) throw new DecodeError(`integer ${b0} above its limit ${max}`);
      return b0;
    }
    let v = b0 & 0x7f;
    let mul = 128;
    for (let i = 1; i < VLE_MAX_BYTES; i++) {
      const b = this.u8();
      if (i === VLE_MAX_BYTES - 1) {
        v += b * mul; // the 9th byte carries 8 full bits
        break;
      }
      v += (b & 0x7f) * mul;
      if (b < 0x80) break;
      mul *= 128;
    }
    if (v > max || !Number.isSafeInteger(v)) throw new DecodeError(`integer ${v} above its limit ${max}`);
    return v;
  }

  /** A zenoh variable-length integer, all 64 bits. */
  vle64(): bigint {
    // Accumulated in two 32-bit halves as numbers, one BigInt at the end (see the writer's vle64).
    let lo = 0;
    let hi = 0;
    let shift = 0;
    for (let i = 0; i < VLE_MAX_BYTES; i++) {
      const b = this.u8();
      const bits = i === VLE_MAX_BYTES - 1 ? b : b & 0x7f;
      if (shift < 32) {
        lo = (lo | (bits << shift)) >>> 0;
        if (shift + 8 > 32) hi = (hi | (bits >>> (32 - shift))) >>> 0;
      } else hi = (hi | (bits << (shift - 32))) >>> 0;
      if (i === VLE_MAX_BYTES - 1 || b < 0x80) break;
      shift += 7;
    }
    return hi === 0 ? BigInt(lo) : (BigInt(hi) << 32n) | BigInt(lo);
  }

  /** The next `n` bytes, as a view (no copy). */
  bytes(n: number): Buffer {
    this.need(n);
    const v = this.buf.subarray(this.pos, this.pos + n);
    this.pos += n;
    return v;
  }

  /**
   * Bytes prefixed by their length, at most `max` of them, as a copy of their own: a value kept
   * past the batch it came in (a stored payload) must not hold the whole batch alive. Small ones
   * are copied byte by byte into Node's shared pool, the cost of one view.
   */
  lenBytesCopy(max = Number.MAX_SAFE_INTEGER): Buffer {
    const n = this.vle();
    if (n > max) throw new DecodeError(`length ${n} above its limit ${max}`);
    this.need(n);
    const src = this.buf;
    const at = this.pos;
    this.pos += n;
    if (n === 0) return EMPTY;
    const out = Buffer.allocUnsafe(n);
    if (n <= SMALL_COPY) for (let i = 0; i < n; i++) out[i] = src[at + i] as number;
    else src.copy(out, 0, at, at + n);
    return out;
  }

  /** Skips `n` bytes. */
  skip(n: number): void {
    this.need(n);
    this.pos += n;
  }

  /** Bytes prefixed by their length as a variable-length integer, at most `max` of them (a view). */
  lenBytes(max = Number.MAX_SAFE_INTEGER): Buffer {
    const n = this.vle();
    if (n > max) throw new DecodeError(`length ${n} above its limit ${max}`);
    return this.bytes(n);
  }

  /** `n` bytes of UTF-8. */
  string(n: number): string {
    this.need(n);
    const s = this.buf.toString("utf8", this.pos, this.pos + n);
    this.pos += n;
    return s;
  }

  /** UTF-8 prefixed by its byte length as a variable-length integer, at most `max` bytes. */
  lenString(max = Number.MAX_SAFE_INTEGER): string {
    const n = this.vle();
    if (n > max) throw new DecodeError(`string length ${n} above its limit ${max}`);
    return this.string(n);
  }

  /** A reader over the next `n` bytes (consumed here), for a length-delimited part. */
  sub(n: number): BinaryReader {
    this.need(n);
    const r = new BinaryReader(this.buf, this.pos, this.pos + n);
    this.pos += n;
    return r;
  }
}

/** Writes into a growable buffer; `finish()` returns the bytes written. */
export class BinaryWriter {
  private buf: Buffer;
  /** The next byte to write. */
  pos = 0;
  /**
   * Counts `reset` and `truncate` calls: bytes written at a generation stay as written (at the
   * same offsets, in whatever buffer the writer holds) while it is unchanged.
   */
  generation = 0;

  constructor(initialSize = 256) {
    this.buf = Buffer.allocUnsafe(Math.max(16, initialSize));
  }

  /** Bytes written so far. */
  get length(): number {
    return this.pos;
  }

  /** Makes room for `n` more bytes. */
  ensure(n: number): void {
    const want = this.pos + n;
    if (want <= this.buf.length) return;
    let size = this.buf.length * 2;
    while (size < want) size *= 2;
    const next = Buffer.allocUnsafe(size);
    this.buf.copy(next, 0, 0, this.pos);
    this.buf = next;
  }

  /**
   * Makes room for `n` more bytes and returns the buffer to write them into, from `pos` on; the
   * caller moves `pos` past what it wrote. For an encoder that writes a whole message at once.
   */
  room(n: number): Buffer {
    this.ensure(n);
    return this.buf;
  }

  u8(v: number): this {
    this.ensure(1);
    this.buf[this.pos++] = v & 0xff;
    return this;
  }

  u16(v: number): this {
    this.ensure(2);
    this.buf.writeUInt16LE(v, this.pos);
    this.pos += 2;
    return this;
  }

  u16be(v: number): this {
    this.ensure(2);
    this.buf.writeUInt16BE(v, this.pos);
    this.pos += 2;
    return this;
  }

  u32(v: number): this {
    this.ensure(4);
    this.buf.writeUInt32LE(v >>> 0, this.pos);
    this.pos += 4;
    return this;
  }

  u32be(v: number): this {
    this.ensure(4);
    this.buf.writeUInt32BE(v >>> 0, this.pos);
    this.pos += 4;
    return this;
  }

  /** A big-endian IEEE 754 double. */
  f64be(v: number): this {
    this.ensure(8);
    this.buf.writeDoubleBE(v, this.pos);
    this.pos += 8;
    return this;
  }

  u64(v: bigint): this {
    this.ensure(8);
    this.buf.writeBigUInt64LE(BigInt.asUintN(64, v), this.pos);
    this.pos += 8;
    return this;
  }

  u64be(v: bigint): this {
    this.ensure(8);
    this.buf.writeBigUInt64BE(BigInt.asUintN(64, v), this.pos);
    this.pos += 8;
    return this;
  }

  /** A non-negative safe integer as a zenoh variable-length integer. */
  vle(v: number): this {
    if (!(v >= 0 && Number.isSafeInteger(v))) throw new RangeError(`not a non-negative safe integer: ${v}`);
    this.ensure(VLE_MAX_BYTES);
    const buf = this.buf;
    while (v >= 0x80) {
      if (v < TWO_32) {
        buf[this.pos++] = (v & 0x7f) | 0x80;
        v >>>= 7;
      } else {
        buf[this.pos++] = (v % 128) | 0x80;
        v = Math.floor(v / 128);
      }
    }
    buf[this.pos++] = v;
    return this;
  }

  /** A 64-bit unsigned integer as a zenoh variable-length integer (9 bytes at most). */
  vle64(v: bigint): this {
    v = BigInt.asUintN(64, v);
    // Two 32-bit halves as numbers: BigInt shifts per byte cost a tenth of a router's time per
    // timestamped sample (zenoh's NTP64 times use all 64 bits).
    return this.vle64Words(Number(v >> 32n), Number(v & 0xffff_ffffn));
  }

  /**
   * A 64-bit unsigned integer given as its high and low 32-bit halves (numbers), as a zenoh
   * variable-length integer: for a caller that has the halves without BigInt operations.
   */
  vle64Words(hi: number, lo: number): this {
    this.ensure(VLE_MAX_BYTES);
    const buf = this.buf;
    if (hi >= 0x100_0000) {
      // At or above 2^56 (every NTP64 time of this era): all nine bytes, without a loop.
      this.pos = putVle64Nine(buf, this.pos, hi, lo);
      return this;
    }
    for (let i = 0; i < VLE_MAX_BYTES - 1; i++) {
      if (hi === 0 && lo < 0x80) {
        buf[this.pos++] = lo;
        return this;
      }
      buf[this.pos++] = (lo & 0x7f) | 0x80;
      lo = ((lo >>> 7) | ((hi & 0x7f) << 25)) >>> 0;
      hi >>>= 7;
    }
    buf[this.pos++] = lo & 0xff; // 9th byte: the 8 bits left
    return this;
  }

  bytes(b: Uint8Array): this {
    const n = b.length;
    this.ensure(n);
    if (n <= SMALL_COPY) {
      const buf = this.buf;
      let at = this.pos;
      for (let i = 0; i < n; i++) buf[at++] = b[i] as number;
    } else this.buf.set(b, this.pos);
    this.pos += n;
    return this;
  }

  /** Bytes prefixed by their length as a variable-length integer. */
  lenBytes(b: Uint8Array): this {
    return this.vle(b.length).bytes(b);
  }

  /** A string as UTF-8 (no length prefix). */
  string(s: string): this {
    this.ensure(s.length * 3);
    this.pos += this.buf.write(s, this.pos, "utf8");
    return this;
  }

  /** A string as UTF-8 prefixed by its byte length as a variable-length integer. */
  lenString(s: string): this {
    const n = Buffer.byteLength(s, "utf8");
    this.vle(n);
    this.ensure(n);
    this.pos += this.buf.write(s, this.pos, "utf8");
    return this;
  }

  /** Overwrites a little-endian u16 at `at` (a length written after its content). */
  patchU16(at: number, v: number): void {
    if (at < 0 || at + 2 > this.pos) throw new RangeError(`patch at ${at} outside the ${this.pos} bytes written`);
    this.buf.writeUInt16LE(v, at);
  }

  /** The bytes written, as a view into the writer's buffer (valid until the next write or `reset`). */
  view(): Buffer {
    return this.buf.subarray(0, this.pos);
  }

  /** The bytes written, as a copy of their own. */
  finish(): Buffer {
    return Buffer.from(this.buf.subarray(0, this.pos));
  }

  /** Forgets what was written, keeping the buffer for reuse. */
  reset(): void {
    this.pos = 0;
    this.generation++;
  }

  /** Forgets what was written from `at` on (`at` at most `pos`). */
  truncate(at: number): void {
    if (at < 0 || at > this.pos) throw new RangeError(`truncate at ${at} outside the ${this.pos} bytes written`);
    this.pos = at;
    this.generation++;
  }

  /**
   * Appends bytes `start..end` that `from` wrote (this writer or another), without a view made:
   * what a router wrote for one subscriber, written again for the next.
   */
  append(from: BinaryWriter, start: number, end: number): this {
    if (start < 0 || end > from.pos || start > end)
      throw new RangeError(`append of ${start}..${end} outside the ${from.pos} bytes written`);
    const n = end - start;
    this.ensure(n);
    from.buf.copy(this.buf, this.pos, start, end);
    this.pos += n;
    return this;
  }
}

/**
 * Writes a 64-bit value at or above 2^56, given as its high and low 32-bit words, as the nine
 * bytes of its variable-length integer into `buf` at `at` (no loop); returns where it ends.
 */
export function putVle64Nine(buf: Uint8Array, at: number, hi: number, lo: number): number {
  buf[at++] = (lo & 0x7f) | 0x80;
  buf[at++] = ((lo >>> 7) & 0x7f) | 0x80;
  buf[at++] = ((lo >>> 14) & 0x7f) | 0x80;
  buf[at++] = ((lo >>> 21) & 0x7f) | 0x80;
  buf[at++] = (lo >>> 28) | ((hi & 0x07) << 4) | 0x80;
  buf[at++] = ((hi >>> 3) & 0x7f) | 0x80;
  buf[at++] = ((hi >>> 10) & 0x7f) | 0x80;
  buf[at++] = ((hi >>> 17) & 0x7f) | 0x80;
  buf[at++] = (hi >>> 24) & 0xff;
  return at;
}
