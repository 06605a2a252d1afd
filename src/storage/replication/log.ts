/**
 * The replication log of one storage: the newest event (put or delete) per key, bucketed by the
 * time of its timestamp into intervals and sub-intervals, each bucket with a fingerprint (the XOR
 * of its events' hashes). This is zenoh 1.x's replication log (docs/replication.md): the hot era
 * is compared sub-interval by sub-interval, the warm era interval by interval, and everything
 * older (the cold era) as one fingerprint.
 *
 * A write costs a map lookup and two field stores: `record` only notes the key's newest event and
 * marks it pending. Hashing and bucketing happen when the buckets are next read (a digest, every
 * interval or so), once per key changed since, whatever the number of writes to it: the cost of a
 * digest follows the keys that changed, never a scan of the keys (docs/replication.md, "Cost").
 */
import type { Timestamp } from "../../core/timestamp.js";
import type { ReplicationSettings } from "./config.js";

/** A 64-bit fingerprint as two unsigned 32-bit halves. The fingerprint of a set is the XOR of its members'. */
export interface Fingerprint {
  readonly hi: number;
  readonly lo: number;
}

/** The newest event the log holds for a key. */
export interface LogEvent {
  readonly key: string;
  readonly timestamp: Timestamp;
  readonly deleted: boolean;
}

/** A fingerprint of one interval. */
export interface IntervalFingerprint {
  readonly interval: number;
  readonly fp: Fingerprint;
}

/** A fingerprint of one sub-interval of an interval. */
export interface SubFingerprint {
  readonly interval: number;
  readonly sub: number;
  readonly fp: Fingerprint;
}

/** A compact summary of a log at one instant (the interval `current`), as replicas exchange it. */
export interface Digest {
  /** The settings that shape the buckets; replicas compare digests only when they agree. */
  readonly intervalMs: number;
  readonly subIntervals: number;
  readonly hot: number;
  readonly warm: number;
  /** Index of the interval holding the instant the digest was taken (Unix ms / interval). */
  readonly current: number;
  /** Everything older than the warm era. */
  readonly cold: Fingerprint;
  /** Non-empty intervals of the warm era. */
  readonly warmIntervals: readonly IntervalFingerprint[];
  /** Non-empty sub-intervals of the hot era (newer intervals included). */
  readonly hotSubs: readonly SubFingerprint[];
  /** Just after the newest tombstone forgotten (Unix ms; 0: none): an unknown key older than it may have been deleted here. */
  readonly purgedBeforeMs: number;
}

/** What two digests disagree on, from the receiver's side. */
export interface DigestDifference {
  readonly cold: boolean;
  readonly warmIntervals: readonly number[];
  readonly hotSubs: ReadonlyArray<{ readonly interval: number; readonly sub: number }>;
}

class SubBucket {
  hi = 0;
  lo = 0;
  readonly keys = new Set<string>();
}

class IntervalBucket {
  hi = 0;
  lo = 0;
  count = 0;
  readonly subs = new Map<number, SubBucket>();
}

const ZERO: Fingerprint = { hi: 0, lo: 0 };

/** How far ahead of now (in intervals) an event's bucket is still listed in the hot era. */
const FUTURE_INTERVALS = 64;

/**
 * The hash of one event, (key, timestamp): two independent 32-bit FNV-1a-style mixes over the
 * key's UTF-16 units and the timestamp's NTP64 time and id. Not cryptographic: replicas trust
 * each other; it only has to make accidental collisions unlikely.
 */
export function eventHash(key: string, ts: Timestamp): Fingerprint {
  const x = Number(ts.time);
  const seconds = Math.floor(x / 0x1_0000_0000);
  hashParts(key, seconds, x - seconds * 0x1_0000_0000, ts.id);
  return { hi: hashHi, lo: hashLo };
}

/** The result of the last `hashParts` (two numbers, not an object allocated per event). */
let hashHi = 0;
let hashLo = 0;

function hashParts(key: string, tHi: number, tLo: number, id: string): void {
  let h1 = 0x811c9dc5;
  let h2 = 0x01000193 ^ key.length;
  for (let i = 0; i < key.length; i++) {
    const c = key.charCodeAt(i);
    h1 = Math.imul(h1 ^ c, 0x01000193);
    h2 = Math.imul(h2 ^ c, 0x5bd1e995);
    h2 ^= h2 >>> 15;
  }
  h1 = Math.imul(h1 ^ tHi, 0x01000193);
  h1 = Math.imul(h1 ^ tLo, 0x01000193);
  h2 = Math.imul(h2 ^ tLo, 0x5bd1e995);
  h2 ^= h2 >>> 13;
  h2 = Math.imul(h2 ^ tHi, 0x5bd1e995);
  for (let i = 0; i < id.length; i++) {
    const c = id.charCodeAt(i);
    h1 = Math.imul(h1 ^ c, 0x01000193);
    h2 = Math.imul(h2 ^ c, 0x5bd1e995);
  }
  // Final avalanche, so that near-equal inputs spread over all bits.
  h1 ^= h1 >>> 16;
  h1 = Math.imul(h1, 0x85ebca6b);
  h1 ^= h1 >>> 13;
  h2 ^= h2 >>> 16;
  h2 = Math.imul(h2, 0xc2b2ae35);
  h2 ^= h2 >>> 16;
  hashHi = h1 >>> 0;
  hashLo = h2 >>> 0;
}

/** Unix milliseconds of a timestamp (NTP64: Unix seconds in the upper 32 bits, a fraction below). */
export function timestampMs(ts: Timestamp): number {
  const x = Number(ts.time);
  const seconds = Math.floor(x / 0x1_0000_0000);
  return msOf(seconds, x - seconds * 0x1_0000_0000);
}

function msOf(seconds: number, fraction: number): number {
  return seconds * 1000 + Math.floor((fraction * 1000) / 0x1_0000_0000);
}

/**
 * The log's entry for a key: its newest event, and the version of it that the buckets hold (with
 * that version's bucket and hash, so that replacing it costs no rehash). The two differ while
 * the entry is pending (written since the buckets were last brought up to date). One object per
 * key for the log's life: a write updates it in place rather than allocating.
 */
class HeldEvent implements LogEvent {
  /** In the log's pending list: the newest event is not in the buckets yet. */
  pending = true;
  /** The buckets hold a version of this key (`interval`, `sub`, `hi`, `lo` describe it). */
  bucketed = false;
  /** Unix ms of the bucketed version's timestamp. */
  ms = 0;
  interval = 0;
  sub = 0;
  hi = 0;
  lo = 0;

  constructor(
    readonly key: string,
    public timestamp: Timestamp,
    public deleted: boolean,
  ) {}
}

function sameFp(a: Fingerprint, b: Fingerprint): boolean {
  return a.hi === b.hi && a.lo === b.lo;
}

function isZero(fp: { hi: number; lo: number }): boolean {
  return fp.hi === 0 && fp.lo === 0;
}

/** The replication log of one storage (see the module comment). */
export class ReplicationLog {
  readonly settings: ReplicationSettings;
  private readonly subMs: number;
  private readonly events = new Map<string, HeldEvent>();
  /** Entries written since the buckets were last brought up to date (`flush`), each once. */
  private pending: HeldEvent[] = [];
  /** The tombstones among `events`, so that purging them never walks the values. */
  private readonly tombstones = new Map<string, HeldEvent>();
  private readonly intervals = new Map<number, IntervalBucket>();
  /** XOR of every interval below `coldBefore`. */
  private coldHi = 0;
  private coldLo = 0;
  private coldBefore = Number.NEGATIVE_INFINITY;
  private purgedBefore = 0;
  /** XOR of every event: equal on two replicas that hold the same (key, timestamp, kind) set. */
  private allHi = 0;
  private allLo = 0;

  constructor(settings: ReplicationSettings) {
    this.settings = settings;
    this.subMs = settings.intervalMs / settings.subIntervals;
  }

  /** Keys the log holds events for (tombstones included). */
  get size(): number {
    return this.events.size;
  }

  /** Tombstones the log holds. */
  get tombstoneCount(): number {
    return this.tombstones.size;
  }

  /** The fingerprint of the whole log, as 16 hex digits (shown in the admin status). */
  get fingerprint(): string {
    this.flush();
    return (this.allHi >>> 0).toString(16).padStart(8, "0") + (this.allLo >>> 0).toString(16).padStart(8, "0");
  }

  /** Tombstones older than this (Unix ms) were forgotten (0: none yet). */
  get purgedBeforeMs(): number {
    return this.purgedBefore;
  }

  /** The newest event held for `key` (a view of the log's entry: read it before the next `record`). */
  lookup(key: string): LogEvent | undefined {
    return this.events.get(key);
  }

  /** The interval index of a time (Unix ms). */
  intervalOf(ms: number): number {
    return Math.floor(ms / this.settings.intervalMs);
  }

  /**
   * Records an event that the storage applied. An event older than (or as old as) the one held
   * for its key changes nothing and returns false. This is the cost of replication on the write
   * path: the buckets follow at the next read (see the module comment).
   */
  record(key: string, timestamp: Timestamp, deleted: boolean): boolean {
    const held = this.events.get(key);
    if (held === undefined) {
      const event = new HeldEvent(key, timestamp, deleted);
      this.events.set(key, event);
      this.pending.push(event);
      if (deleted) this.tombstones.set(key, event);
      return true;
    }
    if (held.timestamp.compare(timestamp) >= 0) return false;
    if (held.deleted !== deleted) {
      if (deleted) this.tombstones.set(key, held);
      else this.tombstones.delete(key);
    }
    held.timestamp = timestamp;
    held.deleted = deleted;
    if (!held.pending) {
      held.pending = true;
      this.pending.push(held);
    }
    return true;
  }

  /**
   * Brings the buckets up to date with the entries written since the last call: each one's
   * bucketed version out, its newest in. Every read of the buckets calls it first, so that they
   * read as if each write had been bucketed as it came.
   */
  private flush(): void {
    const pending = this.pending;
    if (pending.length === 0) return;
    this.pending = [];
    const intervalMs = this.settings.intervalMs;
    const lastSub = this.settings.subIntervals - 1;
    for (const e of pending) {
      if (e.bucketed) this.unbucket(e);
      // The NTP64 time as a double (53 bits: 0.24 µs steps), split without BigInt arithmetic,
      // which allocates; every replica computes the same halves from the same timestamp.
      const x = Number(e.timestamp.time);
      const tHi = Math.floor(x / 0x1_0000_0000);
      const tLo = x - tHi * 0x1_0000_0000;
      hashParts(e.key, tHi, tLo, e.timestamp.id);
      const ms = msOf(tHi, tLo);
      const interval = Math.floor(ms / intervalMs);
      e.ms = ms;
      e.interval = interval;
      e.sub = Math.min(lastSub, Math.floor((ms - interval * intervalMs) / this.subMs));
      e.hi = hashHi;
      e.lo = hashLo;
      e.pending = false;
      this.bucket(e);
    }
  }

  /** Forgets a key entirely (a value dropped without a tombstone). */
  forget(key: string): void {
    this.flush();
    const old = this.events.get(key);
    if (old === undefined) return;
    this.unbucket(old);
    this.events.delete(key);
    this.tombstones.delete(key);
  }

  /**
   * Forgets the tombstones older than `beforeMs` (Unix ms); returns how many. The horizon
   * (`purgedBeforeMs`) moves to just after the newest tombstone forgotten, never to the bound
   * itself: a log that forgot nothing (a fresh replica) may take any old value, since it cannot
   * have deleted it.
   */
  purgeTombstones(beforeMs: number): number {
    this.flush();
    let n = 0;
    let newest = -1;
    for (const [key, t] of this.tombstones) {
      if (t.ms >= beforeMs) continue;
      this.unbucket(t);
      this.events.delete(key);
      this.tombstones.delete(key);
      if (t.ms > newest) newest = t.ms;
      n++;
    }
    if (n > 0 && newest + 1 > this.purgedBefore) this.purgedBefore = newest + 1;
    return n;
  }

  /** The digest of the log as at interval `current` (default: the interval of `nowMs`). */
  digest(nowMs: number, current = this.intervalOf(nowMs)): Digest {
    this.flush();
    const s = this.settings;
    const hotStart = current - s.hot + 1;
    const warmStart = hotStart - s.warm;
    const cold = this.coldUpTo(warmStart);
    const warmIntervals: IntervalFingerprint[] = [];
    for (let i = warmStart; i < hotStart; i++) {
      const b = this.intervals.get(i);
      if (b !== undefined && !isZero(b)) warmIntervals.push({ interval: i, fp: { hi: b.hi, lo: b.lo } });
    }
    const hotSubs: SubFingerprint[] = [];
    for (let i = hotStart; i <= current + FUTURE_INTERVALS; i++) {
      const b = this.intervals.get(i);
      if (b === undefined) continue;
      for (const [sub, sb] of [...b.subs].sort((x, y) => x[0] - y[0]))
        if (!isZero(sb)) hotSubs.push({ interval: i, sub, fp: { hi: sb.hi, lo: sb.lo } });
    }
    return {
      intervalMs: s.intervalMs,
      subIntervals: s.subIntervals,
      hot: s.hot,
      warm: s.warm,
      current,
      cold,
      warmIntervals,
      hotSubs,
      purgedBeforeMs: this.purgedBefore,
    };
  }

  /** True when `remote` was made with the same bucket shape, so that it can be compared. */
  comparable(remote: Digest): boolean {
    const s = this.settings;
    return (
      remote.intervalMs === s.intervalMs &&
      remote.subIntervals === s.subIntervals &&
      remote.hot === s.hot &&
      remote.warm === s.warm
    );
  }

  /**
   * What differs between this log and another replica's digest, in that digest's eras. Hot
   * sub-intervals that begin less than `propagation_delay` before `nowMs` are left out: all their
   * samples may still be on their way. (One that began earlier is compared, in-flight samples
   * included: pulling one that was on its way anyway costs a little and changes nothing.)
   * With `recent`, they are compared too, and so are those ahead of `nowMs` (a clock a little
   * ahead): a storage's start-up exchange takes every write its replicas hold.
   */
  compare(remote: Digest, nowMs: number, options: { recent?: boolean } = {}): DigestDifference {
    const local = this.digest(nowMs, remote.current);
    const warm = new Set<number>();
    const lw = new Map(local.warmIntervals.map((w) => [w.interval, w.fp]));
    for (const w of remote.warmIntervals) {
      const mine = lw.get(w.interval);
      lw.delete(w.interval);
      if (mine === undefined || !sameFp(mine, w.fp)) warm.add(w.interval);
    }
    for (const i of lw.keys()) warm.add(i);
    const settled = options.recent === true ? Number.POSITIVE_INFINITY : nowMs - this.settings.propagationDelayMs;
    const hot: Array<{ interval: number; sub: number }> = [];
    const lh = new Map(local.hotSubs.map((h) => [`${h.interval}/${h.sub}`, h]));
    const consider = (interval: number, sub: number): void => {
      const start = interval * this.settings.intervalMs + sub * this.subMs;
      if (start < settled) hot.push({ interval, sub });
    };
    for (const h of remote.hotSubs) {
      const id = `${h.interval}/${h.sub}`;
      const mine = lh.get(id);
      lh.delete(id);
      if (mine === undefined || !sameFp(mine.fp, h.fp)) consider(h.interval, h.sub);
    }
    for (const h of lh.values()) consider(h.interval, h.sub);
    return { cold: !sameFp(local.cold, remote.cold), warmIntervals: [...warm].sort((a, b) => a - b), hotSubs: hot };
  }

  /** Fingerprints of the non-empty intervals below `before` (the cold era), oldest first. */
  intervalsBefore(before: number): IntervalFingerprint[] {
    this.flush();
    const out: IntervalFingerprint[] = [];
    for (const [i, b] of this.intervals)
      if (i < before && !isZero(b)) out.push({ interval: i, fp: { hi: b.hi, lo: b.lo } });
    return out.sort((a, b) => a.interval - b.interval);
  }

  /** The fingerprint of one interval (zero when empty). */
  intervalFingerprint(interval: number): Fingerprint {
    this.flush();
    const b = this.intervals.get(interval);
    return b === undefined ? ZERO : { hi: b.hi, lo: b.lo };
  }

  /** The fingerprint of one sub-interval (zero when empty). */
  subFingerprint(interval: number, sub: number): Fingerprint {
    this.flush();
    const sb = this.intervals.get(interval)?.subs.get(sub);
    return sb === undefined ? ZERO : { hi: sb.hi, lo: sb.lo };
  }

  /** Fingerprints of the non-empty sub-intervals of `interval`. */
  subsOf(interval: number): SubFingerprint[] {
    this.flush();
    const b = this.intervals.get(interval);
    if (b === undefined) return [];
    const out: SubFingerprint[] = [];
    for (const [sub, sb] of b.subs) if (!isZero(sb)) out.push({ interval, sub, fp: { hi: sb.hi, lo: sb.lo } });
    return out.sort((a, b) => a.sub - b.sub);
  }

  /** The events of one sub-interval. */
  eventsIn(interval: number, sub: number): LogEvent[] {
    this.flush();
    const sb = this.intervals.get(interval)?.subs.get(sub);
    if (sb === undefined) return [];
    const out: LogEvent[] = [];
    for (const k of sb.keys) {
      const e = this.events.get(k);
      if (e !== undefined) out.push(e);
    }
    return out;
  }

  /** The cold fingerprint: every interval below `warmStart`. Folding only moves forward. */
  private coldUpTo(warmStart: number): Fingerprint {
    if (warmStart > this.coldBefore) {
      const span = warmStart - this.coldBefore;
      if (span <= this.intervals.size) {
        for (let i = this.coldBefore; i < warmStart; i++) this.foldCold(this.intervals.get(i));
      } else {
        for (const [i, b] of this.intervals) if (i >= this.coldBefore && i < warmStart) this.foldCold(b);
      }
      this.coldBefore = warmStart;
      return { hi: this.coldHi >>> 0, lo: this.coldLo >>> 0 };
    }
    // A digest as at an earlier instant (another replica's clock is a little behind ours).
    let hi = this.coldHi;
    let lo = this.coldLo;
    for (const [i, b] of this.intervals)
      if (i >= warmStart && i < this.coldBefore) {
        hi ^= b.hi;
        lo ^= b.lo;
      }
    return { hi: hi >>> 0, lo: lo >>> 0 };
  }

  private foldCold(b: IntervalBucket | undefined): void {
    if (b === undefined) return;
    this.coldHi = (this.coldHi ^ b.hi) >>> 0;
    this.coldLo = (this.coldLo ^ b.lo) >>> 0;
  }

  private bucket(e: HeldEvent): void {
    const i = e.interval;
    let b = this.intervals.get(i);
    if (b === undefined) {
      b = new IntervalBucket();
      this.intervals.set(i, b);
    }
    let sb = b.subs.get(e.sub);
    if (sb === undefined) {
      sb = new SubBucket();
      b.subs.set(e.sub, sb);
    }
    sb.hi = (sb.hi ^ e.hi) >>> 0;
    sb.lo = (sb.lo ^ e.lo) >>> 0;
    sb.keys.add(e.key);
    b.hi = (b.hi ^ e.hi) >>> 0;
    b.lo = (b.lo ^ e.lo) >>> 0;
    b.count++;
    this.allHi = (this.allHi ^ e.hi) >>> 0;
    this.allLo = (this.allLo ^ e.lo) >>> 0;
    if (i < this.coldBefore) {
      this.coldHi = (this.coldHi ^ e.hi) >>> 0;
      this.coldLo = (this.coldLo ^ e.lo) >>> 0;
    }
    e.bucketed = true;
  }

  private unbucket(e: HeldEvent): void {
    if (!e.bucketed) return;
    e.bucketed = false;
    const i = e.interval;
    const b = this.intervals.get(i);
    const sb = b?.subs.get(e.sub);
    if (b === undefined || sb === undefined) return;
    sb.hi = (sb.hi ^ e.hi) >>> 0;
    sb.lo = (sb.lo ^ e.lo) >>> 0;
    sb.keys.delete(e.key);
    if (sb.keys.size === 0) b.subs.delete(e.sub);
    b.hi = (b.hi ^ e.hi) >>> 0;
    b.lo = (b.lo ^ e.lo) >>> 0;
    b.count--;
    if (b.count === 0) this.intervals.delete(i);
    this.allHi = (this.allHi ^ e.hi) >>> 0;
    this.allLo = (this.allLo ^ e.lo) >>> 0;
    if (i < this.coldBefore) {
      this.coldHi = (this.coldHi ^ e.hi) >>> 0;
      this.coldLo = (this.coldLo ^ e.lo) >>> 0;
    }
  }
}
