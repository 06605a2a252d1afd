/**
 * The remote API's wire primitives (Zenoh's "ZSerializer" format, little-endian): fixed-width
 * integers, LEB128 lengths, length-prefixed strings and bytes, `Option` as a bool flag.
 * See docs/remote-api.md.
 */

import type { Buffer } from "node:buffer";
import { BinaryReader, BinaryWriter } from "../core/binary.js";

/** WebSocket close codes zest uses for a broken connection (RFC 6455 §7.4.1). */
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

/** core/binary's reader, its truncation a `ProtocolError` that closes the connection with 1007. */
class FrameReader extends BinaryReader {
  override need(n: number): void {
    if (n > this.end - this.pos)
      throw new ProtocolError(
        CloseCode.INVALID_PAYLOAD,
        `truncated frame: ${n} byte(s) needed at offset ${this.pos}, the frame has ${this.end}`,
      );
  }
}

/**
 * Reads one frame with core/binary's bounds-checked reader; every read past the end or of an
 * invalid value throws a `ProtocolError`.
 */
export class Reader {
  private readonly r: FrameReader;

  constructor(buf: Buffer) {
    this.r = new FrameReader(buf);
  }

  u8(): number {
    return this.r.u8();
  }
  u16(): number {
    return this.r.u16();
  }
  u32(): number {
    return this.r.u32();
  }
  u64(): bigint {
    return this.r.u64();
  }
  bool(): boolean {
    const v = this.r.u8();
    if (v > 1) throw new ProtocolError(CloseCode.INVALID_PAYLOAD, `invalid bool ${v} at offset ${this.r.pos - 1}`);
    return v === 1;
  }
  /** LEB128, at most 32 bits (lengths and counts). */
  varint(): number {
    let v = 0;
    for (let shift = 0; shift < 35; shift += 7) {
      const b = this.r.u8();
      v += (b & 0x7f) * 2 ** shift;
      if ((b & 0x80) === 0) {
        if (v > 0xffffffff) break;
        return v;
      }
    }
    throw new ProtocolError(CloseCode.INVALID_PAYLOAD, "length prefix too long");
  }
  /** Bytes prefixed by their `varint` length, as a view. */
  bytes(): Buffer {
    return this.r.bytes(this.varint());
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
    if (!this.r.done)
      throw new ProtocolError(CloseCode.INVALID_PAYLOAD, `${this.r.remaining} unexpected trailing byte(s)`);
  }
}

/** Builds one frame with core/binary's growable writer. */
export class Writer {
  private readonly w: BinaryWriter;

  constructor(size = 64) {
    this.w = new BinaryWriter(size);
  }

  u8(v: number): this {
    this.w.u8(v);
    return this;
  }
  u16(v: number): this {
    this.w.u16(v);
    return this;
  }
  u32(v: number): this {
    this.w.u32(v);
    return this;
  }
  u64(v: bigint): this {
    this.w.u64(v);
    return this;
  }
  bool(v: boolean): this {
    return this.u8(v ? 1 : 0);
  }
  /** LEB128 (the same bytes as zenoh's variable-length integers). */
  varint(v: number): this {
    this.w.vle(v);
    return this;
  }
  /** Bytes prefixed by their `varint` length. */
  bytes(b: Uint8Array): this {
    this.w.lenBytes(b);
    return this;
  }
  /** UTF-8 prefixed by its `varint` byte length. */
  string(s: string): this {
    this.w.lenString(s);
    return this;
  }
  /** The frame so far (a view: copy it before writing more if kept). */
  finish(): Buffer {
    return this.w.view();
  }
}
