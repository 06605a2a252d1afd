/**
 * The remote API's wire primitives (Zenoh's "ZSerializer" format, little-endian): fixed-width
 * integers, LEB128 lengths, length-prefixed strings and bytes, `Option` as a bool flag.
 * See docs/remote-api.md.
 */

/** WebSocket close codes zest uses for a broken connection (RFC 6455 §7.4.1). */
import { Buffer } from "node:buffer";
export const CloseCode = {
  NORMAL: 1000,
  GOING_AWAY: 1001,
  PROTOCOL_ERROR: 1002,
  UNSUPPORTED_DATA: 1003,
  INVALID_PAYLOAD: 1007,
  POLICY_VIOLATION: 1008,
  TOO_BIG: 1009,
  INTERNAL_ERROR: 1011,
} as const;

/** A frame the server cannot read: the connection is closed with `code`. */
export class ProtocolError extends Error {
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message);
    this.name = "ProtocolError";
  }
}

const utf8 = new TextDecoder("utf-8", { fatal: true });

/** Reads one frame; every read past the end or of an invalid value throws a `ProtocolError`. */
export class Reader {
  private o = 0;

  constructor(private readonly buf: Buffer) {}

  private need(n: number, what: string): void {
    if (this.o + n > this.buf.length)
      throw new ProtocolError(
        CloseCode.INVALID_PAYLOAD,
        `truncated frame: ${what} needs ${n} byte(s) at offset ${this.o}, the frame has ${this.buf.length}`,
      );
  }

  u8(): number {
    this.need(1, "u8");
    return this.buf[this.o++]!;
  }
  u16(): number {
    this.need(2, "u16");
    const v = this.buf.readUInt16LE(this.o);
    this.o += 2;
    return v;
  }
  u32(): number {
    this.need(4, "u32");
    const v = this.buf.readUInt32LE(this.o);
    this.o += 4;
    return v;
  }
  u64(): bigint {
    this.need(8, "u64");
    const v = this.buf.readBigUInt64LE(this.o);
    this.o += 8;
    return v;
  }
  bool(): boolean {
    const v = this.u8();
    if (v > 1) throw new ProtocolError(CloseCode.INVALID_PAYLOAD, `invalid bool ${v} at offset ${this.o - 1}`);
    return v === 1;
  }
  /** LEB128, at most 32 bits (lengths and counts). */
  varint(): number {
    let v = 0;
    for (let shift = 0; shift < 35; shift += 7) {
      const b = this.u8();
      v += (b & 0x7f) * 2 ** shift;
      if ((b & 0x80) === 0) {
        if (v > 0xffffffff) break;
        return v;
      }
    }
    throw new ProtocolError(CloseCode.INVALID_PAYLOAD, "length prefix too long");
  }
  bytes(): Buffer {
    const n = this.varint();
    this.need(n, "bytes");
    const v = this.buf.subarray(this.o, this.o + n);
    this.o += n;
    return v;
  }
  string(): string {
    const b = this.bytes();
    try {
      return utf8.decode(b);
    } catch {
      throw new ProtocolError(CloseCode.INVALID_PAYLOAD, "a string is not valid UTF-8");
    }
  }
  optional<T>(read: () => T): T | undefined {
    return this.bool() ? read() : undefined;
  }
  /** Every byte must be used: trailing bytes mean the frame is not what its id says. */
  end(): void {
    if (this.o !== this.buf.length)
      throw new ProtocolError(CloseCode.INVALID_PAYLOAD, `${this.buf.length - this.o} unexpected trailing byte(s)`);
  }
}

/** Builds one frame in a growing buffer. */
export class Writer {
  private buf: Buffer;
  private o = 0;

  constructor(size = 64) {
    this.buf = Buffer.allocUnsafe(size);
  }

  private room(n: number): void {
    if (this.o + n <= this.buf.length) return;
    const next = Buffer.allocUnsafe(Math.max(this.buf.length * 2, this.o + n));
    this.buf.copy(next, 0, 0, this.o);
    this.buf = next;
  }

  u8(v: number): this {
    this.room(1);
    this.buf[this.o++] = v;
    return this;
  }
  u16(v: number): this {
    this.room(2);
    this.o = this.buf.writeUInt16LE(v, this.o);
    return this;
  }
  u32(v: number): this {
    this.room(4);
    this.o = this.buf.writeUInt32LE(v >>> 0, this.o);
    return this;
  }
  u64(v: bigint): this {
    this.room(8);
    this.o = this.buf.writeBigUInt64LE(v, this.o);
    return this;
  }
  bool(v: boolean): this {
    return this.u8(v ? 1 : 0);
  }
  varint(v: number): this {
    this.room(5);
    while (v > 0x7f) {
      this.buf[this.o++] = (v & 0x7f) | 0x80;
      v = Math.floor(v / 128);
    }
    this.buf[this.o++] = v;
    return this;
  }
  bytes(b: Uint8Array): this {
    this.varint(b.length);
    this.room(b.length);
    this.buf.set(b, this.o);
    this.o += b.length;
    return this;
  }
  string(s: string): this {
    const n = Buffer.byteLength(s);
    this.varint(n);
    this.room(n);
    this.o += this.buf.write(s, this.o, "utf8");
    return this;
  }
  /** The frame so far (a view: copy it before writing more if kept). */
  finish(): Buffer {
    return this.buf.subarray(0, this.o);
  }
}
