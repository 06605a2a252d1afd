/**
 * The messages replicas exchange (docs/replication.md, "Messages"): the payloads of alignment
 * queries and of their replies. Binary, big-endian, every length and count checked against the
 * bytes left and against the limits below before anything is allocated; a decoder throws a
 * `ReplicationWireError` on anything malformed and the caller drops the message.
 */
import { Buffer } from "node:buffer";
import { BinaryReader } from "../../core/binary.js";
import { Timestamp } from "../../core/timestamp.js";
import type { Digest, Fingerprint, IntervalFingerprint, LogEvent, SubFingerprint } from "./log.js";

/** Largest message a replica sends (a query or one reply); well below NATS's 1 MiB default. */
export const MAX_MESSAGE_BYTES = 256 * 1024;
/** Largest message a replica accepts: one value above `MAX_MESSAGE_BYTES` travels alone. */
export const MAX_RECEIVED_BYTES = 2 * 1024 * 1024;
/** Most intervals, sub-intervals or keys one query asks for. */
export const MAX_ITEMS_PER_QUERY = 1_000;
/** Most keys one `values` query asks for (their replies are split below the message size). */
export const MAX_KEYS_PER_VALUES_QUERY = 4_000;
/** Most items in one reply (fingerprints or events). */
export const MAX_ITEMS_PER_REPLY = 20_000;
/** Longest key, encoding or router id carried. */
const MAX_STRING_BYTES = 4_096;

/** Kinds of messages (the first byte). */
export const Op = {
  /** Query: the asker's digest; reply: the answerer's digest. */
  digest: 1,
  /** Query: the cold era's intervals (below an index); reply: their fingerprints. */
  intervals: 2,
  /** Query: intervals; reply: the fingerprints of their sub-intervals. */
  subs: 3,
  /** Query: sub-intervals; reply: their events (key, timestamp, deleted). */
  events: 4,
  /** Query: keys; reply: their values (or tombstones) as stored. */
  values: 5,
} as const;

/** A malformed message. */
export class ReplicationWireError extends Error {}

/** A digest with the router and storage that took it. */
export interface DigestMessage {
  readonly zid: string;
  readonly storage: string;
  readonly digest: Digest;
}

/** A stored value or tombstone, as a `values` reply carries it. */
export interface ValueItem {
  readonly key: string;
  readonly timestamp: Timestamp;
  readonly deleted: boolean;
  readonly encoding: string;
  readonly payload: Buffer;
}

const TS_FORM = /^[0-9a-f]{16}\/(?:[0-9A-F]{2}){1,16}$/;

class Writer {
  private readonly parts: Buffer[] = [];
  private size = 0;
  get length(): number {
    return this.size;
  }
  private push(b: Buffer): void {
    this.parts.push(b);
    this.size += b.length;
  }
  u8(v: number): void {
    const b = Buffer.allocUnsafe(1);
    b.writeUInt8(v);
    this.push(b);
  }
  u16(v: number): void {
    const b = Buffer.allocUnsafe(2);
    b.writeUInt16BE(v);
    this.push(b);
  }
  u32(v: number): void {
    const b = Buffer.allocUnsafe(4);
    b.writeUInt32BE(v >>> 0);
    this.push(b);
  }
  f64(v: number): void {
    const b = Buffer.allocUnsafe(8);
    b.writeDoubleBE(v);
    this.push(b);
  }
  fp(fp: Fingerprint): void {
    this.u32(fp.hi);
    this.u32(fp.lo);
  }
  str8(s: string): void {
    const b = Buffer.from(s, "utf8");
    this.u8(b.length);
    this.push(b);
  }
  str16(s: string): void {
    const b = Buffer.from(s, "utf8");
    this.u16(b.length);
    this.push(b);
  }
  bytes(b: Buffer): void {
    this.u32(b.length);
    this.push(b);
  }
  done(): Buffer {
    return Buffer.concat(this.parts, this.size);
  }
}

/** core/binary's bounds-checked reads (this wire is big-endian), plus this wire's own shapes. */
class Reader extends BinaryReader {
  constructor(buf: Buffer) {
    if (buf.length > MAX_RECEIVED_BYTES) throw new ReplicationWireError(`message of ${buf.length} bytes is too large`);
    super(buf);
  }
  override need(n: number): void {
    if (n > this.end - this.pos) throw new ReplicationWireError("message ends early");
  }
  /** A safe integer (interval indexes, counts in ms). */
  int(): number {
    const v = this.f64be();
    if (!Number.isSafeInteger(v)) throw new ReplicationWireError("expected an integer");
    return v;
  }
  fp(): Fingerprint {
    return { hi: this.u32be(), lo: this.u32be() };
  }
  /** A count of items that each take at least `minBytes`, refused before allocation when it lies. */
  count(width: 2 | 4, minBytes: number, max: number): number {
    const n = width === 2 ? this.u16be() : this.u32be();
    if (n > max) throw new ReplicationWireError(`count ${n} above the limit ${max}`);
    if (n * minBytes > this.end - this.pos) throw new ReplicationWireError("count larger than the message");
    return n;
  }
  private utf8(n: number): string {
    if (n > MAX_STRING_BYTES) throw new ReplicationWireError("string too long");
    const s = this.bytes(n).toString("utf8");
    if (Buffer.byteLength(s, "utf8") !== n || s.includes("\uFFFD"))
      throw new ReplicationWireError("string is not valid UTF-8");
    return s;
  }
  str8(): string {
    return this.utf8(this.u8());
  }
  str16(): string {
    return this.utf8(this.u16be());
  }
  timestamp(): Timestamp {
    const s = this.str8();
    if (!TS_FORM.test(s)) throw new ReplicationWireError("malformed timestamp");
    return Timestamp.decode(s);
  }
  /** A u32-length-prefixed byte string (a view). */
  payload(): Buffer {
    return this.bytes(this.u32be());
  }
  /** Throws unless every byte was read. */
  finish(): void {
    if (this.pos !== this.end) throw new ReplicationWireError("bytes trail the message");
  }
}

function header(r: Reader, op: number): void {
  const got = r.u8();
  if (got !== op) throw new ReplicationWireError(`expected message type ${op}, got ${got}`);
}

function zid(r: Reader): string {
  const z = r.str8();
  if (!/^(?:[0-9A-F]{2}){1,16}$/.test(z)) throw new ReplicationWireError("malformed router id");
  return z;
}

/** The type byte of a message (0 for an empty one). */
export function opOf(buf: Buffer): number {
  return buf.length === 0 ? 0 : buf[0]!;
}

export function encodeDigest(m: DigestMessage): Buffer {
  const w = new Writer();
  const d = m.digest;
  w.u8(Op.digest);
  w.str8(m.zid);
  w.str8(m.storage);
  w.f64(d.intervalMs);
  w.u16(d.subIntervals);
  w.u16(d.hot);
  w.u16(d.warm);
  w.f64(d.current);
  w.fp(d.cold);
  w.f64(d.purgedBeforeMs);
  w.u16(d.warmIntervals.length);
  for (const i of d.warmIntervals) {
    w.f64(i.interval);
    w.fp(i.fp);
  }
  w.u16(d.hotSubs.length);
  for (const s of d.hotSubs) {
    w.f64(s.interval);
    w.u16(s.sub);
    w.fp(s.fp);
  }
  return w.done();
}

export function decodeDigest(buf: Buffer): DigestMessage {
  const r = new Reader(buf);
  header(r, Op.digest);
  const z = zid(r);
  const storage = r.str8();
  if (!/^[A-Za-z0-9_.-]+$/.test(storage)) throw new ReplicationWireError("malformed storage name");
  const intervalMs = r.int();
  const subIntervals = r.u16be();
  const hot = r.u16be();
  const warm = r.u16be();
  if (intervalMs < 1 || subIntervals < 1 || hot < 1) throw new ReplicationWireError("bad digest settings");
  const current = r.int();
  const cold = r.fp();
  const purgedBeforeMs = r.int();
  const warmIntervals: IntervalFingerprint[] = [];
  for (let n = r.count(2, 16, warm), i = 0; i < n; i++) warmIntervals.push({ interval: r.int(), fp: r.fp() });
  const hotSubs: SubFingerprint[] = [];
  for (let n = r.count(2, 18, MAX_ITEMS_PER_REPLY), i = 0; i < n; i++) {
    const interval = r.int();
    const sub = r.u16be();
    if (sub >= subIntervals) throw new ReplicationWireError("sub-interval out of range");
    hotSubs.push({ interval, sub, fp: r.fp() });
  }
  r.finish();
  return {
    zid: z,
    storage,
    digest: { intervalMs, subIntervals, hot, warm, current, cold, warmIntervals, hotSubs, purgedBeforeMs },
  };
}

/** `intervals` query: the intervals below `before`. */
export function encodeIntervalsQuery(before: number): Buffer {
  const w = new Writer();
  w.u8(Op.intervals);
  w.f64(before);
  return w.done();
}

export function decodeIntervalsQuery(buf: Buffer): number {
  const r = new Reader(buf);
  header(r, Op.intervals);
  const before = r.int();
  r.finish();
  return before;
}

/** `subs` query: these intervals' sub-intervals. */
export function encodeSubsQuery(intervals: readonly number[]): Buffer {
  const w = new Writer();
  w.u8(Op.subs);
  w.u16(intervals.length);
  for (const i of intervals) w.f64(i);
  return w.done();
}

export function decodeSubsQuery(buf: Buffer): number[] {
  const r = new Reader(buf);
  header(r, Op.subs);
  const out: number[] = [];
  for (let n = r.count(2, 8, MAX_ITEMS_PER_QUERY), i = 0; i < n; i++) out.push(r.int());
  r.finish();
  return out;
}

/** `events` query: these sub-intervals' events. */
export function encodeEventsQuery(subs: ReadonlyArray<{ interval: number; sub: number }>): Buffer {
  const w = new Writer();
  w.u8(Op.events);
  w.u16(subs.length);
  for (const s of subs) {
    w.f64(s.interval);
    w.u16(s.sub);
  }
  return w.done();
}

export function decodeEventsQuery(buf: Buffer): Array<{ interval: number; sub: number }> {
  const r = new Reader(buf);
  header(r, Op.events);
  const out: Array<{ interval: number; sub: number }> = [];
  for (let n = r.count(2, 10, MAX_ITEMS_PER_QUERY), i = 0; i < n; i++) out.push({ interval: r.int(), sub: r.u16be() });
  r.finish();
  return out;
}

/** `values` query: these keys' values. */
export function encodeValuesQuery(keys: readonly string[]): Buffer {
  const w = new Writer();
  w.u8(Op.values);
  w.u16(keys.length);
  for (const k of keys) w.str16(k);
  return w.done();
}

export function decodeValuesQuery(buf: Buffer): string[] {
  const r = new Reader(buf);
  header(r, Op.values);
  const out: string[] = [];
  for (let n = r.count(2, 3, MAX_KEYS_PER_VALUES_QUERY), i = 0; i < n; i++) out.push(r.str16());
  r.finish();
  return out;
}

/** Splits items into replies of at most `MAX_MESSAGE_BYTES` each (an item too large for one goes alone). */
function chunked<T>(
  op: number,
  items: readonly T[],
  write: (w: Writer, item: T) => void,
  head?: (w: Writer) => void,
): Buffer[] {
  const out: Buffer[] = [];
  let batch: Buffer[] = [];
  let size = 0;
  const flush = (): void => {
    const w = new Writer();
    w.u8(op);
    head?.(w);
    w.u32(batch.length);
    out.push(Buffer.concat([w.done(), ...batch]));
    batch = [];
    size = 0;
  };
  for (const item of items) {
    const w = new Writer();
    write(w, item);
    const b = w.done();
    if (batch.length > 0 && (size + b.length + 32 > MAX_MESSAGE_BYTES || batch.length >= MAX_ITEMS_PER_REPLY)) flush();
    batch.push(b);
    size += b.length;
  }
  if (batch.length > 0 || out.length === 0) flush();
  return out;
}

/** Replies to an `intervals` query. */
export function encodeIntervalsReply(items: readonly IntervalFingerprint[]): Buffer[] {
  return chunked(Op.intervals, items, (w, x) => {
    w.f64(x.interval);
    w.fp(x.fp);
  });
}

export function decodeIntervalsReply(buf: Buffer): IntervalFingerprint[] {
  const r = new Reader(buf);
  header(r, Op.intervals);
  const out: IntervalFingerprint[] = [];
  for (let n = r.count(4, 16, MAX_ITEMS_PER_REPLY), i = 0; i < n; i++) out.push({ interval: r.int(), fp: r.fp() });
  r.finish();
  return out;
}

/** Replies to a `subs` query. */
export function encodeSubsReply(items: readonly SubFingerprint[]): Buffer[] {
  return chunked(Op.subs, items, (w, x) => {
    w.f64(x.interval);
    w.u16(x.sub);
    w.fp(x.fp);
  });
}

export function decodeSubsReply(buf: Buffer): SubFingerprint[] {
  const r = new Reader(buf);
  header(r, Op.subs);
  const out: SubFingerprint[] = [];
  for (let n = r.count(4, 18, MAX_ITEMS_PER_REPLY), i = 0; i < n; i++)
    out.push({ interval: r.int(), sub: r.u16be(), fp: r.fp() });
  r.finish();
  return out;
}

/** Replies to an `events` query: each carries the answerer's tombstone horizon. */
export function encodeEventsReply(purgedBeforeMs: number, items: readonly LogEvent[]): Buffer[] {
  return chunked(
    Op.events,
    items,
    (w, e) => {
      w.str16(e.key);
      w.str8(e.timestamp.encode());
      w.u8(e.deleted ? 1 : 0);
    },
    (w) => w.f64(purgedBeforeMs),
  );
}

export function decodeEventsReply(buf: Buffer): { purgedBeforeMs: number; events: LogEvent[] } {
  const r = new Reader(buf);
  header(r, Op.events);
  const purgedBeforeMs = r.int();
  const events: LogEvent[] = [];
  for (let n = r.count(4, 4, MAX_ITEMS_PER_REPLY), i = 0; i < n; i++) {
    const key = r.str16();
    const timestamp = r.timestamp();
    const flag = r.u8();
    if (flag > 1) throw new ReplicationWireError("bad deleted flag");
    events.push({ key, timestamp, deleted: flag === 1 });
  }
  r.finish();
  return { purgedBeforeMs, events };
}

/** Replies to a `values` query. */
export function encodeValuesReply(items: readonly ValueItem[]): Buffer[] {
  return chunked(Op.values, items, (w, v) => {
    w.str16(v.key);
    w.str8(v.timestamp.encode());
    w.u8(v.deleted ? 1 : 0);
    w.str16(v.encoding);
    w.bytes(v.payload);
  });
}

export function decodeValuesReply(buf: Buffer): ValueItem[] {
  const r = new Reader(buf);
  header(r, Op.values);
  const out: ValueItem[] = [];
  for (let n = r.count(4, 8, MAX_ITEMS_PER_REPLY), i = 0; i < n; i++) {
    const key = r.str16();
    const timestamp = r.timestamp();
    const flag = r.u8();
    if (flag > 1) throw new ReplicationWireError("bad deleted flag");
    const encoding = r.str16();
    const payload = Buffer.from(r.payload()); // copied: the message buffer is not kept
    out.push({ key, timestamp, deleted: flag === 1, encoding, payload });
  }
  r.finish();
  return out;
}
