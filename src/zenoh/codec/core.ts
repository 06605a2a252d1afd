/**
 * The zenoh 1.x wire primitives every message family shares (docs/zenoh-protocol.md): message
 * headers, extensions, ZenohIds, wire expressions, timestamps, encodings, source info and QoS.
 * Every decoder reads through a bounds-checked `BinaryReader` and throws `DecodeError` on
 * malformed input; `MandatoryExtensionError` says a peer asked for an extension zest does not know.
 */
import { Buffer } from "node:buffer";
import { endianness } from "node:os";
import { type BinaryReader, BinaryWriter, DecodeError, putVle64Nine, vleLength } from "../../core/binary.js";
import { type Encoding, fromZenohEncoding, toZenohEncoding } from "../../core/encoding.js";
import type { Qos } from "../../core/qos.js";
import type { SourceInfo } from "../../core/sample.js";
import { idFromZenohId, idToZenohId, Timestamp } from "../../core/timestamp.js";

/** The protocol version zest speaks: zenoh 1.x. */
export const PROTOCOL_VERSION = 0x09;

/** The message id: the low five bits of a header. */
export const MID_MASK = 0x1f;
/** Header flag: extensions follow. */
export const FLAG_Z = 0x80;

/** Extension header: another extension follows. */
export const EXT_MORE = 0x80;
/** Extension header: the receiver must understand it or refuse the message. */
export const EXT_MANDATORY = 0x10;
/** Extension header bits 5-6: the body's encoding. */
export const EXT_ENC_MASK = 0x60;
export const EXT_UNIT = 0x00;
export const EXT_ZINT = 0x20;
export const EXT_ZBUF = 0x40;
/** The id, encoding and mandatory bit of an extension (without the "more" bit). */
export const EXT_FULL_ID = 0x7f;

/** An unknown extension was marked mandatory: the message (and the session) must be refused. */
export class MandatoryExtensionError extends DecodeError {
  constructor(readonly extHeader: number) {
    super(`unknown mandatory extension 0x${extHeader.toString(16)}`);
    this.name = "MandatoryExtensionError";
  }
}

/** One decoded extension: its full id (id | encoding | mandatory), and its body by encoding. */
export interface Ext {
  /** `header & EXT_FULL_ID`. */
  id: number;
  more: boolean;
  /** The body of a zint extension (0 otherwise); exact up to 2^53. */
  zint: number;
  /** The body of a zbuf extension (a view; empty otherwise). */
  zbuf: Buffer;
}

const EMPTY = Buffer.alloc(0);

/** Reads one extension (any encoding); a reserved encoding is malformed. */
export function readExt(r: BinaryReader, maxZbuf = 1 << 20): Ext {
  const h = r.u8();
  const enc = h & EXT_ENC_MASK;
  const ext: Ext = { id: h & EXT_FULL_ID, more: (h & EXT_MORE) !== 0, zint: 0, zbuf: EMPTY };
  if (enc === EXT_ZINT) ext.zint = Number(r.vle64());
  else if (enc === EXT_ZBUF) ext.zbuf = r.lenBytes(maxZbuf);
  else if (enc !== EXT_UNIT) throw new DecodeError(`extension 0x${h.toString(16)} has a reserved encoding`);
  return ext;
}

/**
 * The bytes of the extension read last, from `start` (where its header was) to the reader's
 * position, copied, with the "more" flag cleared: an extension the router carries unchanged
 * (docs/zenoh-protocol.md, "Extensions carried"), written out again by `writeCarriedExts`.
 */
export function rawExt(r: BinaryReader, start: number): Buffer {
  const out = Buffer.from(r.buf.subarray(start, r.pos));
  out[0] = (out[0] as number) & EXT_FULL_ID;
  return out;
}

/** At most this many extensions are carried per message part; more are dropped (zenoh sends one or two). */
export const MAX_CARRIED_EXTS = 16;

/**
 * Writes carried extensions (each whole, from `rawExt`), the last one marked as the end of the
 * chain unless `more` says other extensions follow.
 */
export function writeCarriedExts(w: BinaryWriter, exts: readonly Buffer[], more: boolean): void {
  for (let i = 0; i < exts.length; i++) {
    const e = exts[i] as Buffer;
    w.u8((e[0] as number) | (more || i < exts.length - 1 ? EXT_MORE : 0));
    w.bytes(e.subarray(1));
  }
}

/** Throws when an extension nobody understood is mandatory; otherwise it is skipped. */
export function unknownExt(ext: Ext): void {
  if ((ext.id & EXT_MANDATORY) !== 0) throw new MandatoryExtensionError(ext.id);
}

/** Skips a chain of extensions, refusing an unknown mandatory one. */
export function skipExts(r: BinaryReader): void {
  let ext: Ext;
  do {
    ext = readExt(r);
    unknownExt(ext);
  } while (ext.more);
}

/** Writes an extension header; `more` says another follows. */
export function extHeader(w: BinaryWriter, id: number, more: boolean): void {
  w.u8((id & EXT_FULL_ID) | (more ? EXT_MORE : 0));
}

/** A zenoh role; on the wire, 0 router, 1 peer, 2 client. */
export type WhatAmI = "router" | "peer" | "client";
const WHATAMI: readonly WhatAmI[] = ["router", "peer", "client"];

export function whatAmIOf(code: number): WhatAmI {
  const w = WHATAMI[code & 0x03];
  if (w === undefined) throw new DecodeError(`reserved whatami ${code & 0x03}`);
  return w;
}

export function whatAmICode(w: WhatAmI): number {
  return WHATAMI.indexOf(w);
}

/** The wire bytes of a zest id (a ZenohId, little-endian, trailing zero bytes dropped; at least one byte). */
export function zidBytes(id: string): Buffer {
  const full = idToZenohId(id);
  let n = full.length;
  while (n > 1 && full[n - 1] === 0) n--;
  return Buffer.from(full.subarray(0, n));
}

/**
 * The ZenohId read last and its zest id: a stream of samples mostly carries one stamp (a joined
 * zenoh router stamps every sample it routes), so a timestamp's id is not made again per sample.
 */
const lastRead = { raw: new Uint8Array(16), len: 0, id: "" };

/** Reads `len` bytes of ZenohId as a zest id (uppercase hex). */
export function readZid(r: BinaryReader, len: number): string {
  if (len < 1 || len > 16) throw new DecodeError(`a ZenohId has 1 to 16 bytes, not ${len}`);
  r.need(len);
  const buf = r.buf;
  const at = r.pos;
  r.pos += len;
  let same = len === lastRead.len;
  for (let i = 0; same && i < len; i++) same = buf[at + i] === lastRead.raw[i];
  if (same) return lastRead.id;
  const full = new Uint8Array(16);
  full.set(buf.subarray(at, at + len));
  const id = idFromZenohId(full);
  lastRead.raw.set(full);
  lastRead.len = len;
  lastRead.id = id;
  return id;
}

/**
 * A wire expression: a key-expression id declared by one side (0: none) and a suffix. `mapping`
 * says whose declaration the id is: the sender's (`M` flag set) or the receiver's.
 */
export interface WireExpr {
  scope: number;
  suffix: string;
  /** True when the id is one the sender declared. */
  senderMapping: boolean;
}

/** The largest key-expression suffix a message may carry (bytes). */
export const MAX_SUFFIX_BYTES = 65_535;

export function readWireExpr(r: BinaryReader, named: boolean, senderMapping: boolean): WireExpr {
  const scope = r.vle(0xffff_ffff);
  const suffix = named ? r.lenString(MAX_SUFFIX_BYTES) : "";
  return { scope, suffix, senderMapping };
}

/** Writes the scope and, when named, the suffix (the N and M flags are the caller's header bits). */
export function writeWireExpr(w: BinaryWriter, ke: WireExpr): void {
  w.vle(ke.scope);
  if (ke.suffix !== "") w.lenString(ke.suffix);
}

/** Reads a timestamp: NTP64 time, then the ZenohId as length-prefixed bytes. */
export function readTimestamp(r: BinaryReader): Timestamp {
  const time = r.vle64();
  const len = r.u8();
  return new Timestamp(time, readZid(r, len));
}

/** A ZenohId as a timestamp ends with it: its length, then its bytes, cached per zest id (`cachedZid`). */
const zidCache = new Map<string, Buffer>();
/** The last id asked for: the router's own, on every sample it stamped (no hash lookup then). */
let lastZid = "";
let lastZidBytes: Buffer = EMPTY;
export function cachedZid(id: string): Buffer {
  if (id === lastZid) return lastZidBytes;
  let b = zidCache.get(id);
  if (b === undefined) {
    if (zidCache.size > 1024) zidCache.clear();
    const raw = zidBytes(id);
    b = Buffer.allocUnsafe(raw.length + 1);
    b[0] = raw.length;
    b.set(raw, 1);
    zidCache.set(id, b);
  }
  lastZid = id;
  lastZidBytes = b;
  return b;
}

/**
 * Where an NTP64 time is split into its two 32-bit halves as numbers: one store and two loads,
 * no BigInt made or compared (a router stamps and writes a timestamp on every sample it sends).
 */
const split64 = new BigUint64Array(1);
const split32 = new Uint32Array(split64.buffer);
const [HIGH, LOW] = endianness() === "LE" ? [1, 0] : [0, 1];

/** An NTP64 time as a zenoh variable-length integer. */
function writeNtp64(w: BinaryWriter, t: bigint): void {
  // The store wraps a value outside 64 bits; such a time is written as vle64 writes it.
  split64[0] = t;
  w.vle64Words(split32[HIGH] as number, split32[LOW] as number);
}

/**
 * Writes an NTP64 time at or above 2^56 (every time of this era) as its nine VLE bytes into
 * `buf` at `at`, and returns where it ends; returns -1, writing nothing, for an earlier time.
 */
export function putNtp64(buf: Buffer, at: number, t: bigint): number {
  split64[0] = t;
  const hi = split32[HIGH] as number;
  const lo = split32[LOW] as number;
  if (hi < 0x100_0000) return -1;
  return putVle64Nine(buf, at, hi, lo);
}

export function writeTimestamp(w: BinaryWriter, ts: Timestamp): void {
  writeNtp64(w, ts.time);
  w.bytes(cachedZid(ts.id));
}

/** A timestamp as an extension body: its length, then the timestamp. */
export function writeTimestampExt(w: BinaryWriter, ts: Timestamp): void {
  // NTP64 times of this century take 9 bytes as VLE; measure to be exact.
  const start = w.pos;
  w.u8(0);
  writeNtp64(w, ts.time);
  w.bytes(cachedZid(ts.id));
  const len = w.pos - start - 1;
  if (len > 0x7f) throw new RangeError("timestamp extension too long");
  w.view()[start] = len;
}

/** Encodings by wire id, for the common case of no schema (one lookup instead of a string built per sample). */
const encodingOfId = new Map<number, Encoding>();

/** Reads an encoding: id and schema flag as one integer, then the schema when flagged. */
export function readEncoding(r: BinaryReader): Encoding {
  const v = r.vle(0xffff_ffff);
  if ((v & 1) === 0) {
    let e = encodingOfId.get(v);
    if (e === undefined) {
      e = fromZenohEncoding(v / 2, "");
      if (encodingOfId.size >= 1024) encodingOfId.clear();
      encodingOfId.set(v, e);
    }
    return e;
  }
  return fromZenohEncoding(Math.floor(v / 2), r.lenString(MAX_SUFFIX_BYTES));
}

/** Wire bytes per encoding, cached: a router writes the same few encodings on every sample. */
const encodingBytes = new Map<Encoding, Buffer>();

/** The encoding written last and its bytes: most samples carry the one before them's. */
let lastEncoding: Encoding | undefined;
let lastEncodingBytes: Buffer = EMPTY;

export function writeEncoding(w: BinaryWriter, encoding: Encoding): void {
  w.bytes(encodingBytesOf(encoding));
}

/** An encoding's wire bytes (its id and schema flag, then the schema when it has one), cached. */
export function encodingBytesOf(encoding: Encoding): Buffer {
  if (encoding === lastEncoding) return lastEncodingBytes;
  let b = encodingBytes.get(encoding);
  if (b === undefined) {
    const { id, schema } = toZenohEncoding(encoding);
    const t = new BinaryWriter(16 + schema.length * 3);
    t.vle(id * 2 + (schema === "" ? 0 : 1));
    if (schema !== "") t.lenString(schema);
    b = t.finish();
    // Bounded: a stream of distinct encodings must not grow it without end.
    if (encodingBytes.size >= 1024) encodingBytes.clear();
    encodingBytes.set(encoding, b);
  }
  lastEncoding = encoding;
  lastEncodingBytes = b;
  return b;
}

/** Who sent a message first: the source's ZenohId, entity id and sequence number (core's `SourceInfo`). */
export type { SourceInfo };

export function readSourceInfo(r: BinaryReader): SourceInfo {
  // |zid_len|X|X|X|X| then the zid, the entity id (z32) and the sequence number (z32).
  const h = r.u8();
  const zid = readZid(r, (h >> 4) + 1);
  const eid = r.vle(0xffff_ffff);
  const sn = r.vle(0xffff_ffff);
  return { zid, eid, sn };
}

/** A source info as an extension body (length-prefixed). */
export function writeSourceInfoExt(w: BinaryWriter, info: SourceInfo): void {
  const id = zidBytes(info.zid);
  w.vle(1 + id.length + vleLength(info.eid) + vleLength(info.sn));
  w.u8((id.length - 1) << 4)
    .bytes(id)
    .vle(info.eid)
    .vle(info.sn);
}

/** The QoS byte of network messages: priority (bits 0-2), no-drop (bit 3), express (bit 4). */
export const DEFAULT_QOS_BYTE = 5;

/** The 32 QoS values a byte can say, made once (every PUSH asks for one). */
const QOS_OF_BYTE: readonly Qos[] = Array.from({ length: 32 }, (_, b) => ({
  priority: b & 0x07,
  congestionControl: (b & 0x08) !== 0 ? "block" : "drop",
  express: (b & 0x10) !== 0,
}));

export function qosOfByte(b: number): Qos {
  return QOS_OF_BYTE[b & 0x1f] as Qos;
}

export function qosByte(q: Qos | undefined): number {
  if (q === undefined) return DEFAULT_QOS_BYTE;
  return (q.priority & 0x07) | (q.congestionControl === "block" ? 0x08 : 0) | (q.express ? 0x10 : 0);
}
