/**
 * The binary messages routers exchange over NATS. Payloads travel as raw bytes (never JSON or
 * base64): a message is a small header of length-prefixed strings followed by the payload.
 *
 * ```
 * sample : u8 1 | u8 kind | u32 epoch | f64 seq | str8 zid | str16 key | str16 encoding | str8 ts | payload…
 * replies: u8 2 | u8 final | u32 count | reply*
 *   reply: u8 0 (put) / 1 (delete) | str16 key | str16 encoding | str8 ts | u32 len | payload
 *        | u8 2 (error)            | u8 error kind code | str16 encoding | u32 len | payload
 * ack    : u8 3 | str8 zid | u8 error kind code (0 = stored) | str16 message
 * ```
 * Integers are big-endian; `ts` is `Timestamp.encode()` or empty when the sample has none.
 */
import { type ErrorKind, errorKindCode, errorKindOfCode } from "../core/errors.js";
import type { Reply } from "../core/reply.js";
import type { Sample } from "../core/sample.js";
import { Timestamp } from "../core/timestamp.js";

const SAMPLE = 1;
const REPLIES = 2;
const ACK = 3;
const ERR = 2;

/** Who sent a sample, for acknowledgements and duplicate suppression. */
export interface SampleOrigin {
  /** Router id of the publisher. */
  readonly zid: string;
  /** Random per fabric instance: a restarted router with the same id starts a new sequence. */
  readonly epoch: number;
  /** Increasing per publisher. */
  readonly seq: number;
}

/** An acknowledgement of a sample: no `errorKind` means every local subscriber has it. */
export interface Ack {
  readonly zid: string;
  readonly errorKind: ErrorKind | undefined;
  readonly message: string;
}

/** Message type of an envelope (first byte), or 0 for an empty or unknown one. */
export function messageType(data: Uint8Array): number {
  return data.length === 0 ? 0 : data[0]!;
}

/** Encodes a sample with its origin. */
export function encodeSample(sample: Sample, origin: SampleOrigin): Buffer {
  const ts = sample.timestamp?.encode() ?? "";
  const zidLen = Buffer.byteLength(origin.zid);
  const keyLen = Buffer.byteLength(sample.key);
  const encLen = Buffer.byteLength(sample.encoding);
  const tsLen = ts.length;
  checkLengths(zidLen, keyLen, encLen);
  const buf = Buffer.allocUnsafe(14 + 1 + zidLen + 2 + keyLen + 2 + encLen + 1 + tsLen + sample.payload.length);
  let o = buf.writeUInt8(SAMPLE, 0);
  o = buf.writeUInt8(sample.kind === "put" ? 0 : 1, o);
  o = buf.writeUInt32BE(origin.epoch >>> 0, o);
  o = buf.writeDoubleBE(origin.seq, o);
  o = buf.writeUInt8(zidLen, o);
  o += buf.write(origin.zid, o, "latin1");
  o = buf.writeUInt16BE(keyLen, o);
  o += buf.write(sample.key, o, "utf8");
  o = buf.writeUInt16BE(encLen, o);
  o += buf.write(sample.encoding, o, "utf8");
  o = buf.writeUInt8(tsLen, o);
  o += buf.write(ts, o, "latin1");
  sample.payload.copy(buf, o);
  return buf;
}

/** Decodes `encodeSample`; the payload is copied out (the network buffer is not retained). */
export function decodeSample(data: Uint8Array): { sample: Sample; origin: SampleOrigin } {
  const r = new Reader(data);
  if (r.u8() !== SAMPLE) throw new Error("not a sample message");
  const kind = r.u8() === 0 ? "put" : "delete";
  const epoch = r.u32();
  const seq = r.f64();
  const zid = r.str8();
  const key = r.str16();
  const encoding = r.str16();
  const ts = r.str8();
  const payload = r.rest();
  const sample: Sample = ts === "" ? { key, kind, payload, encoding } : { key, kind, payload, encoding, timestamp: Timestamp.decode(ts) };
  return { sample, origin: { zid, epoch, seq } };
}

/** Accumulates replies into one `replies` message; `size` tells when to send a batch. */
export class ReplyBatch {
  private parts: Buffer[] = [];
  private count = 0;
  /** Bytes of the replies gathered so far. */
  size = 0;

  /** Adds a reply encoded by `encodeReply`. */
  addEncoded(part: Buffer): void {
    this.parts.push(part);
    this.count++;
    this.size += part.length;
  }

  /** Adds a reply. */
  add(reply: Reply): void {
    this.addEncoded(encodeReply(reply));
  }

  get length(): number {
    return this.count;
  }

  /** The message holding the gathered replies (then empties the batch). */
  take(final: boolean): Buffer {
    const head = Buffer.allocUnsafe(6);
    head.writeUInt8(REPLIES, 0);
    head.writeUInt8(final ? 1 : 0, 1);
    head.writeUInt32BE(this.count, 2);
    const out = Buffer.concat([head, ...this.parts]);
    this.parts = [];
    this.count = 0;
    this.size = 0;
    return out;
  }
}

/** One reply as it sits in a batch (its length tells whether it fits the NATS payload limit). */
export function encodeReply(reply: Reply): Buffer {
  if (reply.kind === "err") {
    const encLen = Buffer.byteLength(reply.encoding);
    checkLengths(0, 0, encLen);
    const buf = Buffer.allocUnsafe(1 + 1 + 2 + encLen + 4 + reply.payload.length);
    let o = buf.writeUInt8(ERR, 0);
    o = buf.writeUInt8(errorKindCode(reply.errorKind), o);
    o = buf.writeUInt16BE(encLen, o);
    o += buf.write(reply.encoding, o, "utf8");
    o = buf.writeUInt32BE(reply.payload.length, o);
    reply.payload.copy(buf, o);
    return buf;
  }
  const s = reply.sample;
  const ts = s.timestamp?.encode() ?? "";
  const keyLen = Buffer.byteLength(s.key);
  const encLen = Buffer.byteLength(s.encoding);
  checkLengths(0, keyLen, encLen);
  const buf = Buffer.allocUnsafe(1 + 2 + keyLen + 2 + encLen + 1 + ts.length + 4 + s.payload.length);
  let o = buf.writeUInt8(s.kind === "put" ? 0 : 1, 0);
  o = buf.writeUInt16BE(keyLen, o);
  o += buf.write(s.key, o, "utf8");
  o = buf.writeUInt16BE(encLen, o);
  o += buf.write(s.encoding, o, "utf8");
  o = buf.writeUInt8(ts.length, o);
  o += buf.write(ts, o, "latin1");
  o = buf.writeUInt32BE(s.payload.length, o);
  s.payload.copy(buf, o);
  return buf;
}

/** Decodes a `replies` message. */
export function decodeReplies(data: Uint8Array): { replies: Reply[]; final: boolean } {
  const r = new Reader(data);
  if (r.u8() !== REPLIES) throw new Error("not a replies message");
  const final = r.u8() === 1;
  const count = r.u32();
  const replies: Reply[] = [];
  for (let i = 0; i < count; i++) {
    const kind = r.u8();
    if (kind === ERR) {
      const errorKind = errorKindOfCode(r.u8());
      const encoding = r.str16();
      const payload = r.bytes(r.u32());
      replies.push({ kind: "err", errorKind, encoding, payload });
      continue;
    }
    const key = r.str16();
    const encoding = r.str16();
    const ts = r.str8();
    const payload = r.bytes(r.u32());
    const sk = kind === 0 ? "put" : "delete";
    const sample: Sample = ts === "" ? { key, kind: sk, payload, encoding } : { key, kind: sk, payload, encoding, timestamp: Timestamp.decode(ts) };
    replies.push({ kind: "ok", sample });
  }
  return { replies, final };
}

/** Encodes an acknowledgement. */
export function encodeAck(ack: Ack): Buffer {
  const zidLen = Buffer.byteLength(ack.zid);
  const message = ack.message.length > 4000 ? `${ack.message.slice(0, 4000)}…` : ack.message;
  const msgLen = Buffer.byteLength(message);
  const buf = Buffer.allocUnsafe(1 + 1 + zidLen + 1 + 2 + msgLen);
  let o = buf.writeUInt8(ACK, 0);
  o = buf.writeUInt8(zidLen, o);
  o += buf.write(ack.zid, o, "latin1");
  o = buf.writeUInt8(ack.errorKind === undefined ? 0 : errorKindCode(ack.errorKind), o);
  o = buf.writeUInt16BE(msgLen, o);
  buf.write(message, o, "utf8");
  return buf;
}

/** Decodes `encodeAck`. */
export function decodeAck(data: Uint8Array): Ack {
  const r = new Reader(data);
  if (r.u8() !== ACK) throw new Error("not an ack message");
  const zid = r.str8();
  const code = r.u8();
  return { zid, errorKind: code === 0 ? undefined : errorKindOfCode(code), message: r.str16() };
}

function checkLengths(zidLen: number, keyLen: number, encLen: number): void {
  if (zidLen > 255) throw new Error("router id too long for the wire format");
  if (keyLen > 0xffff) throw new Error(`key too long to travel between routers (${keyLen} bytes, at most 65535)`);
  if (encLen > 0xffff) throw new Error("encoding too long to travel between routers");
}

/** Sequential reads over a message, bounds-checked so a truncated message throws. */
class Reader {
  private readonly buf: Buffer;
  private o = 0;

  constructor(data: Uint8Array) {
    this.buf = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  }
  private need(n: number): void {
    if (this.o + n > this.buf.length) throw new Error("truncated message");
  }
  u8(): number {
    this.need(1);
    return this.buf.readUInt8(this.o++);
  }
  u16(): number {
    this.need(2);
    const v = this.buf.readUInt16BE(this.o);
    this.o += 2;
    return v;
  }
  u32(): number {
    this.need(4);
    const v = this.buf.readUInt32BE(this.o);
    this.o += 4;
    return v;
  }
  f64(): number {
    this.need(8);
    const v = this.buf.readDoubleBE(this.o);
    this.o += 8;
    return v;
  }
  str8(): string {
    const n = this.u8();
    this.need(n);
    const s = this.buf.toString("utf8", this.o, this.o + n);
    this.o += n;
    return s;
  }
  str16(): string {
    const n = this.u16();
    this.need(n);
    const s = this.buf.toString("utf8", this.o, this.o + n);
    this.o += n;
    return s;
  }
  /** Copies `n` bytes out. */
  bytes(n: number): Buffer {
    this.need(n);
    const b = Buffer.from(this.buf.subarray(this.o, this.o + n));
    this.o += n;
    return b;
  }
  /** Copies the remaining bytes out. */
  rest(): Buffer {
    return this.bytes(this.buf.length - this.o);
  }
}
