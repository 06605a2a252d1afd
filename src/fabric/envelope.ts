/**
 * The binary messages routers exchange over NATS (layouts in docs/fabric-protocol.md). Every
 * message starts with a one-byte type; strings are length-prefixed UTF-8, integers big-endian,
 * payloads raw bytes (never JSON or base64).
 *
 * Decoding validates everything a peer controls: the type, every length against what is left,
 * counts against the bytes they need, flags and kinds against the known values, UTF-8, router
 * ids and timestamps against their forms, and that nothing trails the message. A malformed
 * message throws `MalformedMessage`; the fabric logs and drops it.
 */
import { Buffer, isUtf8 } from "node:buffer";
import { BinaryReader } from "../core/binary.js";
import { type ErrorKind, errorKindCode, errorKindOfCode } from "../core/errors.js";
import type { DeclarationKind } from "../core/fabric.js";
import type { Qos } from "../core/qos.js";
import type { QueryContent } from "../core/query.js";
import type { QueryTarget } from "../core/query-target.js";
import type { Reply } from "../core/reply.js";
import type { Sample } from "../core/sample.js";
import { Timestamp } from "../core/timestamp.js";
import { validDeadline } from "../core/lifetime.js";

/** Message types (first byte). */
export const MessageType = {
  SAMPLE: 1,
  REPLIES: 2,
  ACKS: 3,
  DECLARATIONS: 4,
  HEARTBEAT: 5,
  GOODBYE: 6,
  QUERY: 7,
  PING: 8,
  PONG: 9,
  DECLARATIONS_REQUEST: 10,
  SAMPLES: 11,
} as const;

/**
 * What a declaration declares. Codes on the wire: 1, 2, 3, and 4 for `store`: a storage of a
 * shared store (a subscriber that a write already held by its store needs not wait for).
 */
export type { DeclarationKind };
export type WireDeclarationKind = DeclarationKind | "store";
const DECL_KINDS: readonly WireDeclarationKind[] = ["subscriber", "queryable", "token", "store"];
/** Most shared stores a sample names (`Sample.heldIn`), and the longest store name (bytes). */
export const MAX_HELD_IN = 16;
const MAX_STORE_NAME = 255;

/**
 * A message that does not decode: logged and dropped, never a crash. It carries no stack trace:
 * capturing one costs tens of microseconds, and a flood of bad messages must stay cheap to drop.
 */
export class MalformedMessage extends Error {
  constructor(reason: string) {
    const limit = Error.stackTraceLimit;
    Error.stackTraceLimit = 0;
    super(reason);
    Error.stackTraceLimit = limit;
    this.name = "MalformedMessage";
  }
}

/** Who sent a sample, for acknowledgements and duplicate suppression. */
export interface SampleOrigin {
  /** Router id of the publisher. */
  readonly zid: string;
  /** Random per fabric instance: a restarted router with the same id starts a new sequence. */
  readonly epoch: number;
  /** Increasing per publisher (a safe integer). */
  readonly seq: number;
}

/** A sample as it travels: `resend` marks a copy sent again to a router that may have missed it. */
export interface SampleMessage {
  readonly sample: Sample;
  readonly origin: SampleOrigin;
  readonly resend: boolean;
  /**
   * The publisher received it from a zenoh network it joined (docs/zenoh-network.md, "Clusters"):
   * a router joined to the same network got it from there directly.
   */
  readonly network: boolean;
}

/** The acknowledgement of one sample: no `errorKind` means every local subscriber has it. */
export interface Ack {
  readonly seq: number;
  readonly errorKind: ErrorKind | undefined;
  readonly message: string;
}

/** Acknowledgements one router sends one publisher in one event-loop turn. */
export interface AckBatch {
  /** The acknowledging router. */
  readonly zid: string;
  readonly acks: readonly Ack[];
}

/** One declared key expression. */
export interface Declaration {
  readonly kind: WireDeclarationKind;
  readonly key: string;
  /** Queryables only: the queryable answers for every key it covers. */
  readonly complete: boolean;
  /** `store` only: the shared store (1 to 255 bytes). */
  readonly store?: string;
}

/** A router's declarations, versioned: a heartbeat with another `ver` tells they changed. */
export interface DeclarationsMessage {
  readonly zid: string;
  readonly epoch: number;
  readonly ver: number;
  readonly decls: readonly Declaration[];
}

/** Liveness: the sender's epoch and declarations version. */
export interface HeartbeatMessage {
  readonly zid: string;
  readonly epoch: number;
  readonly ver: number;
}

/** A clean shutdown. */
export interface GoodbyeMessage {
  readonly zid: string;
  readonly epoch: number;
}

/** A query for the target's local queryables. */
export interface QueryMessage {
  readonly key: string;
  readonly parameters: string;
  readonly timeoutMs: number;
  /** Which of the target's queryables answer (absent: `all`). */
  readonly target?: QueryTarget;
  /** Payload, encoding and attachment for the target's queryables (absent: none). */
  readonly content?: QueryContent;
}

/** What arrives on a router's query subject. */
export type ControlMessage =
  | { readonly type: "query"; readonly query: QueryMessage }
  | { readonly type: "ping" }
  | { readonly type: "declarations_request" };

/** Longest router id on the wire (16 bytes of hex). */
const MAX_ZID = 32;
const ZID = /^[0-9A-F]{2,32}$/;
/** `Timestamp.encode()`: 16 hex digits of NTP64, a slash, the router id. */
const TS = /^[0-9a-f]{16}\/[0-9A-F]{2,32}$/;
const MAX_MESSAGE_TEXT = 4000;

/** The type byte of a message, or 0 when empty. */
function typeOf(data: Uint8Array): number {
  return data.length === 0 ? 0 : data[0]!;
}

// ---- samples --------------------------------------------------------------------------------

/** Sample flag: the publisher received the sample from a zenoh network it joined. */
const SAMPLE_NETWORK = 32;
/** Sample flag: the shared stores holding it follow the extras (`Sample.heldIn`). */
const SAMPLE_HELD_IN = 64;

/** Encodes a sample with its origin (`network`: it came from a zenoh network the publisher joined). */
export function encodeSample(sample: Sample, origin: SampleOrigin, resend = false, network = false): Buffer {
  const ts = sample.timestamp?.encode() ?? "";
  const zidLen = Buffer.byteLength(origin.zid);
  const keyLen = Buffer.byteLength(sample.key);
  const encLen = Buffer.byteLength(sample.encoding);
  checkLengths(zidLen, keyLen, encLen);
  const held = sample.heldIn;
  const heldSize = held === undefined ? 0 : heldInSize(held);
  const buf = Buffer.allocUnsafe(
    14 + 1 + zidLen + 2 + keyLen + 2 + encLen + 1 + ts.length + extrasSize(sample) + heldSize + sample.payload.length,
  );
  let o = buf.writeUInt8(MessageType.SAMPLE, 0);
  o = buf.writeUInt8(
    (sample.kind === "put" ? 0 : 1) |
      (resend ? 2 : 0) |
      (extrasFlags(sample) << 2) |
      (network ? SAMPLE_NETWORK : 0) |
      (held === undefined ? 0 : SAMPLE_HELD_IN),
    o,
  );
  o = buf.writeUInt32BE(origin.epoch >>> 0, o);
  o = buf.writeDoubleBE(origin.seq, o);
  o = buf.writeUInt8(zidLen, o);
  o += buf.write(origin.zid, o, "latin1");
  o = buf.writeUInt16BE(keyLen, o);
  o += buf.write(sample.key, o, "utf8");
  o = buf.writeUInt16BE(encLen, o);
  o += buf.write(sample.encoding, o, "utf8");
  o = buf.writeUInt8(ts.length, o);
  o += buf.write(ts, o, "latin1");
  o = writeExtras(buf, o, sample);
  if (held !== undefined) {
    o = buf.writeUInt8(held.length, o);
    for (const store of held) {
      o = buf.writeUInt8(Buffer.byteLength(store), o);
      o += buf.write(store, o, "utf8");
    }
  }
  sample.payload.copy(buf, o);
  return buf;
}

/** Bytes `heldIn` takes in a sample; throws when it is beyond the wire's limits. */
function heldInSize(held: readonly string[]): number {
  if (held.length < 1 || held.length > MAX_HELD_IN)
    throw new MalformedMessage(`a sample names 1 to ${MAX_HELD_IN} shared stores, not ${held.length}`);
  let size = 1;
  for (const store of held) {
    const n = Buffer.byteLength(store);
    if (n < 1 || n > MAX_STORE_NAME) throw new MalformedMessage("a shared store's name is 1 to 255 bytes");
    size += 1 + n;
  }
  return size;
}

/** The same sample message with the resend flag set (a copy: `data` may still be in flight). */
export function markResend(data: Buffer): Buffer {
  const copy = Buffer.from(data);
  copy[1] = copy[1]! | 2;
  return copy;
}

/** Decodes `encodeSample`; the payload is copied out (the network buffer is not retained). */
export function decodeSample(data: Uint8Array): SampleMessage {
  const r = new Reader(data, MessageType.SAMPLE, "sample");
  const flags = r.u8();
  if (flags > 127) throw new MalformedMessage(`sample: unknown flags ${flags}`);
  const kind = flags & 1 ? "delete" : "put";
  const epoch = r.u32be();
  const seq = r.f64();
  if (!Number.isSafeInteger(seq) || seq < 1)
    throw new MalformedMessage("sample: sequence number is not a positive integer");
  const zid = r.zid();
  const key = r.str16();
  if (key === "") throw new MalformedMessage("sample: empty key");
  const encoding = r.str16();
  const timestamp = r.timestamp();
  const extras = r.extras((flags >> 2) & 7);
  const heldIn = flags & SAMPLE_HELD_IN ? r.heldIn() : undefined;
  const payload = r.rest();
  const plain: Sample = withExtras(
    timestamp === undefined ? { key, kind, payload, encoding } : { key, kind, payload, encoding, timestamp },
    extras,
  );
  const sample = heldIn === undefined ? plain : { ...plain, heldIn };
  return { sample, origin: { zid, epoch, seq }, resend: (flags & 2) !== 0, network: (flags & SAMPLE_NETWORK) !== 0 };
}

/** Samples published on one subject in one event-loop turn, in order, as one message. */
export function encodeSamples(messages: readonly Buffer[]): Buffer {
  const head = Buffer.allocUnsafe(5);
  head.writeUInt8(MessageType.SAMPLES, 0);
  head.writeUInt32BE(messages.length, 1);
  const parts: Buffer[] = [head];
  for (const m of messages) {
    const len = Buffer.allocUnsafe(4);
    len.writeUInt32BE(m.length, 0);
    parts.push(len, m);
  }
  return Buffer.concat(parts);
}

/** Bytes `encodeSamples` adds per sample. */
export const SAMPLES_OVERHEAD = 4;

/** Decodes a SAMPLE or a SAMPLES message into its samples (each validated as `decodeSample`). */
export function decodeSamples(data: Uint8Array): SampleMessage[] {
  if (typeOf(data) === MessageType.SAMPLE) return [decodeSample(data)];
  const r = new Reader(data, MessageType.SAMPLES, "samples");
  // The smallest sample message is 20 bytes, plus its length.
  const count = r.count(24);
  const out: SampleMessage[] = [];
  for (let i = 0; i < count; i++) out.push(decodeSample(r.bytes(r.u32be())));
  r.expectEnd();
  return out;
}

// ---- query replies --------------------------------------------------------------------------

const REPLY_PUT = 0;
const REPLY_DELETE = 1;
const REPLY_ERR = 2;

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

  get length(): number {
    return this.count;
  }

  /** The message holding the gathered replies (then empties the batch). */
  take(final: boolean): Buffer {
    const head = Buffer.allocUnsafe(6);
    head.writeUInt8(MessageType.REPLIES, 0);
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
    let o = buf.writeUInt8(REPLY_ERR, 0);
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
  const buf = Buffer.allocUnsafe(1 + 2 + keyLen + 2 + encLen + 1 + ts.length + extrasSize(s) + 4 + s.payload.length);
  let o = buf.writeUInt8((s.kind === "put" ? REPLY_PUT : REPLY_DELETE) | (extrasFlags(s) << 2), 0);
  o = buf.writeUInt16BE(keyLen, o);
  o += buf.write(s.key, o, "utf8");
  o = buf.writeUInt16BE(encLen, o);
  o += buf.write(s.encoding, o, "utf8");
  o = buf.writeUInt8(ts.length, o);
  o += buf.write(ts, o, "latin1");
  o = writeExtras(buf, o, s);
  o = buf.writeUInt32BE(s.payload.length, o);
  s.payload.copy(buf, o);
  return buf;
}

/** Decodes a `replies` message. */
export function decodeReplies(data: Uint8Array): { replies: Reply[]; final: boolean } {
  const r = new Reader(data, MessageType.REPLIES, "replies");
  const final = r.flag();
  // The smallest reply takes 8 bytes: a count beyond what is left is a lie, refused up front.
  const count = r.count(8);
  const replies: Reply[] = [];
  for (let i = 0; i < count; i++) {
    const head = r.u8();
    const kind = head & 3;
    if (head > 31 || (kind === REPLY_ERR && head !== REPLY_ERR))
      throw new MalformedMessage(`replies: unknown reply kind ${head}`);
    if (kind === REPLY_ERR) {
      const code = r.u8();
      // An unknown code (a newer peer's kind) reads as `internal`; 0 is not an error.
      if (code === 0) throw new MalformedMessage("replies: error reply without an error kind");
      const errorKind = errorKindOfCode(code);
      const encoding = r.str16();
      const payload = r.copy(r.u32be());
      replies.push({ kind: "err", errorKind, encoding, payload });
      continue;
    }
    if (kind !== REPLY_PUT && kind !== REPLY_DELETE) throw new MalformedMessage(`replies: unknown reply kind ${kind}`);
    const key = r.str16();
    if (key === "") throw new MalformedMessage("replies: empty key");
    const encoding = r.str16();
    const timestamp = r.timestamp();
    const extras = r.extras(head >> 2);
    const payload = r.copy(r.u32be());
    const sk = kind === REPLY_PUT ? "put" : "delete";
    const sample: Sample = withExtras(
      timestamp === undefined ? { key, kind: sk, payload, encoding } : { key, kind: sk, payload, encoding, timestamp },
      extras,
    );
    replies.push({ kind: "ok", sample });
  }
  r.expectEnd();
  return { replies, final };
}

// ---- acknowledgements -----------------------------------------------------------------------

/** Encodes the acknowledgements `zid` sends one publisher. */
export function encodeAcks(batch: AckBatch): Buffer {
  const zidLen = Buffer.byteLength(batch.zid);
  checkLengths(zidLen, 0, 0);
  const messages = batch.acks.map((a) =>
    a.message.length > MAX_MESSAGE_TEXT ? `${a.message.slice(0, MAX_MESSAGE_TEXT)}…` : a.message,
  );
  let size = 1 + 1 + zidLen + 4;
  for (const m of messages) size += 8 + 1 + 2 + Buffer.byteLength(m);
  const buf = Buffer.allocUnsafe(size);
  let o = buf.writeUInt8(MessageType.ACKS, 0);
  o = buf.writeUInt8(zidLen, o);
  o += buf.write(batch.zid, o, "latin1");
  o = buf.writeUInt32BE(batch.acks.length, o);
  batch.acks.forEach((a, i) => {
    o = buf.writeDoubleBE(a.seq, o);
    o = buf.writeUInt8(a.errorKind === undefined ? 0 : errorKindCode(a.errorKind), o);
    const m = messages[i]!;
    o = buf.writeUInt16BE(Buffer.byteLength(m), o);
    o += buf.write(m, o, "utf8");
  });
  return buf;
}

/** Decodes `encodeAcks`. */
export function decodeAcks(data: Uint8Array): AckBatch {
  const r = new Reader(data, MessageType.ACKS, "acks");
  const zid = r.zid();
  const count = r.count(11);
  const acks: Ack[] = [];
  for (let i = 0; i < count; i++) {
    const seq = r.f64();
    if (!Number.isSafeInteger(seq) || seq < 1)
      throw new MalformedMessage("acks: sequence number is not a positive integer");
    const code = r.u8();
    const message = r.str16();
    acks.push({ seq, errorKind: code === 0 ? undefined : errorKindOfCode(code), message });
  }
  r.expectEnd();
  return { zid, acks };
}

// ---- declarations, heartbeats, goodbyes -----------------------------------------------------

/** Encodes a router's declarations (also the body of a hello). */
export function encodeDeclarations(m: DeclarationsMessage): Buffer {
  const zidLen = Buffer.byteLength(m.zid);
  checkLengths(zidLen, 0, 0);
  let size = 1 + 4 + 4 + 1 + zidLen + 4;
  const keyLens = m.decls.map((d) => {
    const n = Buffer.byteLength(d.key);
    checkLengths(0, n, 0);
    size += 1 + 1 + 2 + n;
    if (d.kind === "store") {
      const s = Buffer.byteLength(d.store ?? "");
      if (s < 1 || s > MAX_STORE_NAME) throw new MalformedMessage("a shared store's name is 1 to 255 bytes");
      size += 1 + s;
    }
    return n;
  });
  const buf = Buffer.allocUnsafe(size);
  let o = buf.writeUInt8(MessageType.DECLARATIONS, 0);
  o = buf.writeUInt32BE(m.epoch >>> 0, o);
  o = buf.writeUInt32BE(m.ver >>> 0, o);
  o = buf.writeUInt8(zidLen, o);
  o += buf.write(m.zid, o, "latin1");
  o = buf.writeUInt32BE(m.decls.length, o);
  m.decls.forEach((d, i) => {
    o = buf.writeUInt8(DECL_KINDS.indexOf(d.kind) + 1, o);
    o = buf.writeUInt8(d.complete ? 1 : 0, o);
    o = buf.writeUInt16BE(keyLens[i]!, o);
    o += buf.write(d.key, o, "utf8");
    if (d.kind === "store") {
      o = buf.writeUInt8(Buffer.byteLength(d.store!), o);
      o += buf.write(d.store!, o, "utf8");
    }
  });
  return buf;
}

/** Decodes `encodeDeclarations`. Keys are checked as UTF-8 here, as key expressions by the peer table. */
export function decodeDeclarations(data: Uint8Array): DeclarationsMessage {
  const r = new Reader(data, MessageType.DECLARATIONS, "declarations");
  const epoch = r.u32be();
  const ver = r.u32be();
  const zid = r.zid();
  const count = r.count(4);
  const decls: Declaration[] = [];
  for (let i = 0; i < count; i++) {
    const code = r.u8();
    const kind = DECL_KINDS[code - 1];
    if (kind === undefined) throw new MalformedMessage(`declarations: unknown declaration kind ${code}`);
    const complete = r.flag();
    const key = r.str16();
    if (key === "") throw new MalformedMessage("declarations: empty key");
    if (kind !== "store") decls.push({ kind, key, complete });
    else {
      const store = r.str8();
      if (store === "") throw new MalformedMessage("declarations: empty store name");
      decls.push({ kind, key, complete, store });
    }
  }
  r.expectEnd();
  return { zid, epoch, ver, decls };
}

/** Encodes a heartbeat. */
export function encodeHeartbeat(m: HeartbeatMessage): Buffer {
  const zidLen = Buffer.byteLength(m.zid);
  checkLengths(zidLen, 0, 0);
  const buf = Buffer.allocUnsafe(1 + 4 + 4 + 1 + zidLen);
  let o = buf.writeUInt8(MessageType.HEARTBEAT, 0);
  o = buf.writeUInt32BE(m.epoch >>> 0, o);
  o = buf.writeUInt32BE(m.ver >>> 0, o);
  o = buf.writeUInt8(zidLen, o);
  buf.write(m.zid, o, "latin1");
  return buf;
}

/** Encodes a goodbye. */
export function encodeGoodbye(m: GoodbyeMessage): Buffer {
  const zidLen = Buffer.byteLength(m.zid);
  checkLengths(zidLen, 0, 0);
  const buf = Buffer.allocUnsafe(1 + 4 + 1 + zidLen);
  let o = buf.writeUInt8(MessageType.GOODBYE, 0);
  o = buf.writeUInt32BE(m.epoch >>> 0, o);
  o = buf.writeUInt8(zidLen, o);
  buf.write(m.zid, o, "latin1");
  return buf;
}

/** What travels on `zest.d.<zid>`. */
export type AnnouncementMessage =
  | { readonly type: "declarations"; readonly m: DeclarationsMessage }
  | { readonly type: "heartbeat"; readonly m: HeartbeatMessage }
  | { readonly type: "goodbye"; readonly m: GoodbyeMessage };

/** Decodes a declarations, heartbeat or goodbye message. */
export function decodeAnnouncement(data: Uint8Array): AnnouncementMessage {
  const type = typeOf(data);
  if (type === MessageType.DECLARATIONS) return { type: "declarations", m: decodeDeclarations(data) };
  if (type === MessageType.HEARTBEAT) {
    const r = new Reader(data, type, "heartbeat");
    const epoch = r.u32be();
    const ver = r.u32be();
    const zid = r.zid();
    r.expectEnd();
    return { type: "heartbeat", m: { zid, epoch, ver } };
  }
  if (type === MessageType.GOODBYE) {
    const r = new Reader(data, type, "goodbye");
    const epoch = r.u32be();
    const zid = r.zid();
    r.expectEnd();
    return { type: "goodbye", m: { zid, epoch } };
  }
  throw new MalformedMessage(`not an announcement (type ${type})`);
}

// ---- queries and control --------------------------------------------------------------------

const QUERY_TARGETS: readonly QueryTarget[] = ["all", "best_matching", "all_complete"];
const QUERY_PAYLOAD = 1;
const QUERY_ENCODING = 2;
const QUERY_ATTACHMENT = 4;

/**
 * Encodes a query. The tail (target, content) is left out when the query has neither, so a
 * plain query stays the 0.1 layout.
 */
export function encodeQuery(q: QueryMessage): Buffer {
  const keyLen = Buffer.byteLength(q.key);
  const parLen = Buffer.byteLength(q.parameters);
  checkLengths(0, keyLen, 0);
  if (parLen > 0xffff)
    throw new MalformedMessage(
      `selector parameters too long to travel between routers (${parLen} bytes, at most 65535)`,
    );
  const c = q.content;
  const target = q.target ?? "all";
  const flags =
    (c?.payload ? QUERY_PAYLOAD : 0) |
    (c?.encoding !== undefined ? QUERY_ENCODING : 0) |
    (c?.attachment ? QUERY_ATTACHMENT : 0);
  const encLen = c?.encoding === undefined ? 0 : Buffer.byteLength(c.encoding);
  checkLengths(0, 0, encLen);
  const tail =
    flags === 0 && target === "all"
      ? 0
      : 2 +
        (c?.payload ? 4 + c.payload.length : 0) +
        (flags & QUERY_ENCODING ? 2 + encLen : 0) +
        (c?.attachment ? 4 + c.attachment.length : 0);
  const buf = Buffer.allocUnsafe(1 + 4 + 2 + keyLen + 2 + parLen + tail);
  let o = buf.writeUInt8(MessageType.QUERY, 0);
  o = buf.writeUInt32BE(Math.max(1, Math.min(0xffffffff, Math.round(q.timeoutMs))), o);
  o = buf.writeUInt16BE(keyLen, o);
  o += buf.write(q.key, o, "utf8");
  o = buf.writeUInt16BE(parLen, o);
  o += buf.write(q.parameters, o, "utf8");
  if (tail === 0) return buf;
  o = buf.writeUInt8(QUERY_TARGETS.indexOf(target), o);
  o = buf.writeUInt8(flags, o);
  if (c?.payload) o = writeBytes32(buf, o, c.payload);
  if (c?.encoding !== undefined) {
    o = buf.writeUInt16BE(encLen, o);
    o += buf.write(c.encoding, o, "utf8");
  }
  if (c?.attachment) writeBytes32(buf, o, c.attachment);
  return buf;
}

/** A ping, or a request for the target's declarations (both one byte). */
export function encodeControl(type: "ping" | "declarations_request"): Buffer {
  return Buffer.of(type === "ping" ? MessageType.PING : MessageType.DECLARATIONS_REQUEST);
}

/** Decodes what arrives on a router's query subject. */
export function decodeControl(data: Uint8Array): ControlMessage {
  const type = typeOf(data);
  if (type === MessageType.PING || type === MessageType.DECLARATIONS_REQUEST) {
    if (data.length !== 1) throw new MalformedMessage("control message: trailing bytes");
    return type === MessageType.PING ? { type: "ping" } : { type: "declarations_request" };
  }
  const r = new Reader(data, MessageType.QUERY, "query");
  const timeoutMs = r.u32be();
  if (timeoutMs === 0) throw new MalformedMessage("query: zero timeout");
  const key = r.str16();
  if (key === "") throw new MalformedMessage("query: empty key");
  const parameters = r.str16();
  if (r.done) return { type: "query", query: { key, parameters, timeoutMs } };
  const code = r.u8();
  const target = QUERY_TARGETS[code];
  if (target === undefined) throw new MalformedMessage(`query: unknown target ${code}`);
  const flags = r.u8();
  if (flags > 7) throw new MalformedMessage(`query: unknown flags ${flags}`);
  const payload = flags & QUERY_PAYLOAD ? r.copy(r.u32be()) : undefined;
  const encoding = flags & QUERY_ENCODING ? r.str16() : undefined;
  const attachment = flags & QUERY_ATTACHMENT ? r.copy(r.u32be()) : undefined;
  r.expectEnd();
  const content: QueryContent = {
    ...(payload ? { payload } : {}),
    ...(encoding !== undefined ? { encoding } : {}),
    ...(attachment ? { attachment } : {}),
  };
  return { type: "query", query: { key, parameters, timeoutMs, target, ...(flags === 0 ? {} : { content }) } };
}

/** Encodes the answer to a ping. */
export function encodePong(zid: string): Buffer {
  const zidLen = Buffer.byteLength(zid);
  checkLengths(zidLen, 0, 0);
  const buf = Buffer.allocUnsafe(2 + zidLen);
  buf.writeUInt8(MessageType.PONG, 0);
  buf.writeUInt8(zidLen, 1);
  buf.write(zid, 2, "latin1");
  return buf;
}

/** Decodes `encodePong`. */
export function decodePong(data: Uint8Array): string {
  const r = new Reader(data, MessageType.PONG, "pong");
  const zid = r.zid();
  r.expectEnd();
  return zid;
}

// ---- helpers --------------------------------------------------------------------------------

/**
 * A sample's optional parts, flagged on the wire by three bits: attachment (1), QoS (2),
 * deadline (4: a value with a lifetime, docs/ttl-and-leases.md). A sample without a deadline
 * encodes as it did before deadlines existed.
 */
interface SampleExtras {
  readonly attachment?: Buffer;
  readonly qos?: Qos;
  readonly deadline?: number;
}
const EXTRA_ATTACHMENT = 1;
const EXTRA_QOS = 2;
const EXTRA_DEADLINE = 4;
const QOS_BLOCK = 1;
const QOS_EXPRESS = 2;

/** A QoS travels when its priority is one of Zenoh's (1 to 7); only the library API could give another. */
function carriesQos(s: SampleExtras): s is SampleExtras & { qos: Qos } {
  return s.qos !== undefined && Number.isInteger(s.qos.priority) && s.qos.priority >= 1 && s.qos.priority <= 7;
}

function extrasFlags(s: SampleExtras): number {
  return (
    (s.attachment ? EXTRA_ATTACHMENT : 0) |
    (carriesQos(s) ? EXTRA_QOS : 0) |
    (s.deadline !== undefined ? EXTRA_DEADLINE : 0)
  );
}

function extrasSize(s: SampleExtras): number {
  return (s.attachment ? 4 + s.attachment.length : 0) + (carriesQos(s) ? 2 : 0) + (s.deadline !== undefined ? 8 : 0);
}

/**
 * `[u32 len | attachment] [u8 priority | u8 qos flags] [f64 deadline, Unix ms]`, each only when
 * its flag is set.
 */
function writeExtras(buf: Buffer, o: number, s: SampleExtras): number {
  if (s.attachment) o = writeBytes32(buf, o, s.attachment);
  if (carriesQos(s)) {
    o = buf.writeUInt8(s.qos.priority, o);
    o = buf.writeUInt8((s.qos.congestionControl === "block" ? QOS_BLOCK : 0) | (s.qos.express ? QOS_EXPRESS : 0), o);
  }
  if (s.deadline !== undefined) o = buf.writeDoubleBE(s.deadline, o);
  return o;
}

function withExtras(sample: Sample, extras: SampleExtras | undefined): Sample {
  return extras === undefined ? sample : { ...sample, ...extras };
}

function writeBytes32(buf: Buffer, o: number, bytes: Buffer): number {
  o = buf.writeUInt32BE(bytes.length, o);
  return o + bytes.copy(buf, o);
}

function checkLengths(zidLen: number, keyLen: number, encLen: number): void {
  if (zidLen > MAX_ZID) throw new MalformedMessage("router id too long for the wire format");
  if (keyLen > 0xffff)
    throw new MalformedMessage(`key too long to travel between routers (${keyLen} bytes, at most 65535)`);
  if (encLen > 0xffff) throw new MalformedMessage("encoding too long to travel between routers");
}

/**
 * Sequential reads over a message: core/binary's bounds-checked primitives (this wire is
 * big-endian), plus this wire's own shapes. A truncated or malformed message throws
 * `MalformedMessage`.
 */
class Reader extends BinaryReader {
  private readonly what: string;

  constructor(data: Uint8Array, type: number, what: string) {
    if (typeOf(data) !== type) throw new MalformedMessage(`not a ${what} message (type ${typeOf(data)})`);
    super(data, 1);
    this.what = what;
  }
  override need(n: number): void {
    if (n > this.end - this.pos) throw new MalformedMessage(`${this.what}: truncated message`);
  }
  /** A byte that must be 0 or 1. */
  flag(): boolean {
    const v = this.u8();
    if (v > 1) throw new MalformedMessage(`${this.what}: flag byte ${v} is neither 0 nor 1`);
    return v === 1;
  }
  f64(): number {
    this.need(8);
    const v = this.buf.readDoubleBE(this.pos);
    this.pos += 8;
    return v;
  }
  /** A u32 count of items taking at least `minBytes` each, checked against what is left. */
  count(minBytes: number): number {
    const n = this.u32be();
    if (n * minBytes > this.end - this.pos) throw new MalformedMessage(`${this.what}: count ${n} exceeds the message`);
    return n;
  }
  private text(n: number): string {
    this.need(n);
    const start = this.pos;
    const end = start + n;
    // Read in place: a subarray per string (four per sample) was a measurable part of decoding.
    if (!isAscii(this.buf, start, end) && !isUtf8(this.buf.subarray(start, end)))
      throw new MalformedMessage(`${this.what}: a string is not valid UTF-8`);
    this.pos = end;
    return this.buf.toString("utf8", start, end);
  }
  str8(): string {
    return this.text(this.u8());
  }
  str16(): string {
    return this.text(this.u16be());
  }
  zid(): string {
    const zid = this.str8();
    if (!ZID.test(zid)) throw new MalformedMessage(`${this.what}: malformed router id`);
    return zid;
  }
  /** `str8` holding `Timestamp.encode()`, or empty for none. */
  timestamp(): Timestamp | undefined {
    const ts = this.str8();
    if (ts === "") return undefined;
    if (!TS.test(ts)) throw new MalformedMessage(`${this.what}: malformed timestamp`);
    return Timestamp.decode(ts);
  }
  /** Copies `n` bytes out (`bytes(n)` is a view). */
  copy(n: number): Buffer {
    return Buffer.from(this.bytes(n));
  }
  /** Copies the remaining bytes out. */
  rest(): Buffer {
    return this.copy(this.end - this.pos);
  }
  /** A sample's attachment and QoS, as `flags` (two bits) says they follow; undefined when none. */
  extras(flags: number): SampleExtras | undefined {
    if (flags === 0) return undefined;
    const attachment = flags & EXTRA_ATTACHMENT ? this.copy(this.u32be()) : undefined;
    let qos: Qos | undefined;
    if (flags & EXTRA_QOS) {
      const priority = this.u8();
      if (priority < 1 || priority > 7) throw new MalformedMessage(`${this.what}: priority ${priority} is not 1 to 7`);
      const q = this.u8();
      if (q > 3) throw new MalformedMessage(`${this.what}: unknown QoS flags ${q}`);
      qos = { priority, congestionControl: q & QOS_BLOCK ? "block" : "drop", express: (q & QOS_EXPRESS) !== 0 };
    }
    if (!(flags & EXTRA_DEADLINE)) return attachment ? (qos ? { attachment, qos } : { attachment }) : { qos };
    const deadline = this.f64();
    if (!validDeadline(deadline))
      throw new MalformedMessage(`${this.what}: deadline is not a time in Unix milliseconds`);
    const out: { attachment?: Buffer; qos?: Qos; deadline: number } = { deadline };
    if (attachment) out.attachment = attachment;
    if (qos) out.qos = qos;
    return out;
  }
  /** A sample's `heldIn`: u8 count (1 to `MAX_HELD_IN`), then that many non-empty `str8` store names. */
  heldIn(): string[] {
    const n = this.u8();
    if (n < 1 || n > MAX_HELD_IN) throw new MalformedMessage(`${this.what}: ${n} shared stores`);
    const out: string[] = [];
    for (let i = 0; i < n; i++) {
      const store = this.str8();
      if (store === "") throw new MalformedMessage(`${this.what}: empty store name`);
      out.push(store);
    }
    return out;
  }
  /** The message must end here. */
  expectEnd(): void {
    if (this.pos !== this.end) throw new MalformedMessage(`${this.what}: ${this.end - this.pos} trailing bytes`);
  }
}

/** Short ASCII strings (keys, ids) skip the UTF-8 check's call overhead. */
function isAscii(b: Buffer, start: number, end: number): boolean {
  for (let i = start; i < end; i++) if (b[i]! > 0x7f) return false;
  return true;
}
