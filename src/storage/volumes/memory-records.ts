/**
 * What a memory storage holds per key, without one JS object per key (docs/memory-volume.md):
 * each key has a record number (a "slot"), and the slot's fields live in typed arrays; payload
 * bytes live in shared slabs; encodings and clock ids are interned strings, counted by use.
 *
 * Slabs are append-only: bytes once written are never changed, so a payload handed out as a
 * view (`payload`) stays what it was even after the key is overwritten or its slab compacted
 * (a compacted slab is dropped, and freed by the GC once no view holds it). The space of
 * overwritten and deleted values is reclaimed: a slab left with no live record is dropped at
 * once, and when dead bytes exceed a quarter of the live ones, the slab with the most dead bytes
 * is compacted (its live records copied to the newest slab). Each byte written is thus copied at
 * most about four times over its life, and dead space stays bounded (`deadBytes`).
 */
import { Buffer } from "node:buffer";
import { Timestamp } from "../../core/timestamp.js";
import type { StoredSample } from "../backend.js";

/** A slot's `slab` when it holds a tombstone (no payload). */
const TOMBSTONE = 0xffffffff;
/** A slot's clock or encoding before its first `set`. */
const NO_ID = 0xffffffff;
/**
 * Bytes before each payload in a slab: the slot it belongs to (u32) and the record's length (u32):
 * the payload's, plus the key's tail of a value with a deadline (`Records.keyOf`).
 */
export const RECORD_HEADER_BYTES = 8;
/** What one slot costs in the typed arrays: time (8), clock, encoding, slab, offset, length (4 each). */
export const SLOT_BYTES = 28;
const MIN_SLAB = 4096;
const MAX_SLAB = 1 << 20;
/** A value bigger than this gets a buffer of its own (dropped as soon as the value dies). */
const OWN_BUFFER = MAX_SLAB >> 2;
/** Dead bytes allowed besides a quarter of the live ones before a compaction runs. */
const DEAD_SLACK = MIN_SLAB;
/** Prefixes remembered as seen once (`Records.#seen`) before the memory is emptied. */
const SEEN_PREFIXES = 1024;
/** Most entries kept made (`entry`), per storage. */
const ENTRY_CACHE_MAX = 8192;
/** Payloads up to this many bytes are copied byte by byte: cheaper than a call to `set`. */
const SMALL_COPY = 64;
/** A time written here is read back as two 32-bit halves, without making a BigInt (`compare`). */
const TIME64 = new BigUint64Array(1);
const TIME32 = new Uint32Array(TIME64.buffer);
/** Where the high and the low half of a 64-bit number sit in its two 32-bit words (the platform's order). */
const HI = new Uint8Array(new Uint32Array([1]).buffer)[0] === 1 ? 1 : 0;
const LO = 1 - HI;

/**
 * A stored value handed out as a put sample. A class, not an object literal, on purpose: V8
 * allocates a literal's objects straight in the old generation once most of them outlived a
 * collection, and a wide GET holds its first 2,048 entries while it decides how to answer. Every
 * entry a scan made after that decision was old at birth, and kept its fresh payload view and
 * timestamp alive through the next scavenges: a `GET /**` over 100,000 keys spent 100-180 ms in
 * collections instead of 10-20 ms, in most processes. Objects made with `new` are never placed so.
 */
class Entry implements StoredSample {
  readonly kind = "put";
  constructor(
    readonly key: string,
    readonly payload: Buffer,
    readonly encoding: string,
    readonly timestamp: Timestamp,
    readonly deadline: number | undefined,
  ) {}
}

/** Strings shared by many slots (encodings, clock ids), kept while some slot uses them. */
class Interner {
  readonly #ids = new Map<string, number>();
  readonly #strings: Array<string | undefined> = [];
  readonly #refs: number[] = [];
  readonly #free: number[] = [];
  /** UTF-16 code units of the strings held. */
  chars = 0;

  has(s: string): boolean {
    return s === this.#last || this.#ids.has(s);
  }

  /** The last string acquired and its id: most writes repeat the previous one's. */
  #last: string | undefined;
  #lastId = 0;

  acquire(s: string): number {
    let id = s === this.#last ? this.#lastId : this.#ids.get(s);
    if (id === undefined) {
      id = this.#free.pop() ?? this.#strings.length;
      this.#strings[id] = s;
      this.#refs[id] = 0;
      this.#ids.set(s, id);
      this.chars += s.length;
    }
    this.#refs[id]!++;
    this.#last = s;
    this.#lastId = id;
    return id;
  }

  /**
   * When the last string acquired is `text`'s first `length` characters: takes one more use of it
   * and returns its id, without slicing `text`. Else -1.
   */
  acquireLastPrefix(text: string, length: number): number {
    const last = this.#last;
    if (last === undefined || last.length !== length || !text.startsWith(last)) return -1;
    this.#refs[this.#lastId]!++;
    return this.#lastId;
  }

  /** Gives back one use of `id` (`NO_ID`: none). */
  release(id: number): void {
    if (id === NO_ID || --this.#refs[id]! > 0) return;
    const s = this.#strings[id]!;
    if (s === this.#last) this.#last = undefined;
    this.#ids.delete(s);
    this.#strings[id] = undefined;
    this.#free.push(id);
    this.chars -= s.length;
  }

  get(id: number): string {
    return this.#strings[id]!;
  }
}

/**
 * The slots and slabs of one memory storage. A slot is allocated for a key (`alloc`), written
 * any number of times (`set`), and freed with its key (`free`).
 */
export class Records {
  #cap = 0;
  #time = new BigUint64Array(0);
  /** `#time` as 32-bit words (two per slot: see `HI`, `LO`). */
  #time32 = new Uint32Array(0);
  #clock = new Uint32Array(0);
  #enc = new Uint32Array(0);
  #slab = new Uint32Array(0);
  #off = new Uint32Array(0);
  #len = new Uint32Array(0);
  /** Slots never used yet start at `#next`; freed ones are reused first. */
  #next = 0;
  readonly #freeSlots: number[] = [];
  #slots = 0;

  readonly #encodings = new Interner();
  readonly #clocks = new Interner();
  /** Key prefixes shared by the key tails of values with a deadline (`keyOf`). */
  #prefixes = new Interner();
  /** Prefixes seen once lately, not shared yet (`#keyTail`). */
  readonly #seen = new Set<string>();
  /** The slots' deadlines, when the storage holds values with a lifetime (docs/ttl-and-leases.md). */
  deadlines: { deadline(slot: number): number } | undefined;

  readonly #slabs: Array<Buffer | undefined> = [];
  /** Bytes written in each slab (its end, for the head), and bytes of its live records. */
  readonly #fill: number[] = [];
  readonly #live: number[] = [];
  readonly #freeSlabs: number[] = [];
  #head = -1;
  #liveBytes = 0;
  #deadBytes = 0;

  /**
   * Entries recently made, by slot (direct-mapped, `slot & mask`): a key read often is read
   * without making its payload view and timestamp again, and its timestamp keeps its rendered
   * text. An entry leaves the cache when its slot is written, freed, or its record moved (so the
   * cache never holds a dropped slab).
   */
  #cachedSlot = new Int32Array(0);
  #cached: Array<StoredSample | undefined> = [];

  /** Slots in use (keys held, tombstones included). */
  get slots(): number {
    return this.#slots;
  }

  /**
   * Bytes this storage holds for its values, as its quota counts them: `SLOT_BYTES` per slot,
   * each live payload with its record header, and each distinct encoding and clock id once.
   */
  get bytes(): number {
    return this.#slots * SLOT_BYTES + this.#liveBytes + this.#encodings.chars + this.#clocks.chars;
  }

  /** Slab bytes written and no longer live (overwritten or deleted values, not yet compacted). */
  get deadBytes(): number {
    return this.#deadBytes;
  }

  /** Slab bytes allocated, written or not (for tests: live + dead + the head slab's unwritten end). */
  get slabBytes(): number {
    let n = 0;
    for (const s of this.#slabs) n += s?.length ?? 0;
    return n;
  }

  /**
   * What storing `payload` (undefined: a tombstone) with `encoding` at `timestamp` would add to
   * `bytes`, at most (the held value's share aside: see `heldCost`).
   */
  cost(timestamp: Timestamp, encoding: string, payload: Uint8Array | undefined, key?: string): number {
    const clock = this.#clocks.has(timestamp.id) ? 0 : timestamp.id.length;
    if (payload === undefined) return clock;
    const tail = key === undefined ? 0 : key.length + 2;
    return clock + RECORD_HEADER_BYTES + payload.length + tail + (this.#encodings.has(encoding) ? 0 : encoding.length);
  }

  /** What the value held in `slot` counts in `bytes` (its encoding aside). */
  heldCost(slot: number): number {
    return this.#slab[slot] === TOMBSTONE ? 0 : RECORD_HEADER_BYTES + this.#recordLength(slot);
  }

  /** A new slot; it holds nothing readable until `set` (or goes back with `free`). */
  alloc(): number {
    let slot = this.#freeSlots.pop();
    if (slot === undefined) {
      if (this.#next === this.#cap) this.#grow();
      slot = this.#next++;
    }
    this.#slab[slot] = TOMBSTONE;
    this.#len[slot] = 0;
    this.#time[slot] = 0n;
    this.#clock[slot] = NO_ID;
    this.#enc[slot] = NO_ID;
    this.#slots++;
    return slot;
  }

  /** Frees `slot` and what it holds; it may be handed out again by `alloc`. */
  free(slot: number): void {
    this.#uncache(slot);
    this.#drop(slot);
    this.#clocks.release(this.#clock[slot]!);
    this.#encodings.release(this.#enc[slot]!);
    this.#freeSlots.push(slot);
    this.#slots--;
    this.#compactIfWasteful();
  }

  /**
   * Stores a value (or, with `payload` undefined, a tombstone) in `slot`. `key`, for a value with
   * a deadline: kept after the payload, so that `keyOf` names the slot's key when it expires.
   */
  set(slot: number, timestamp: Timestamp, encoding: string, payload: Uint8Array | undefined, key?: string): void {
    this.#uncache(slot);
    // The new key tail's prefix is taken before the old record gives its own back: a key written
    // again keeps its prefix held, rather than dropping it from the interner and adding it back.
    const tag = payload === undefined || key === undefined ? -1 : this.#keyTail(key);
    this.#drop(slot);
    // A key written again by the same router with the same encoding (the common case) keeps its
    // ids: taking one more use of each and giving one back would change nothing.
    const oldClock = this.#clock[slot]!;
    if (oldClock === NO_ID || this.#clocks.get(oldClock) !== timestamp.id) {
      this.#clock[slot] = this.#clocks.acquire(timestamp.id);
      this.#clocks.release(oldClock);
    }
    const text = payload === undefined ? "" : encoding;
    const oldEnc = this.#enc[slot]!;
    if (oldEnc === NO_ID || this.#encodings.get(oldEnc) !== text) {
      this.#enc[slot] = this.#encodings.acquire(text);
      this.#encodings.release(oldEnc);
    }
    this.#time[slot] = timestamp.time;
    if (payload !== undefined)
      this.#append(slot, payload, 0, payload.length, payload.length, tag, key ?? "", this.#tailFrom);
    this.#compactIfWasteful();
  }

  deleted(slot: number): boolean {
    return this.#slab[slot] === TOMBSTONE;
  }

  /** NTP64 time of what `slot` holds. */
  time(slot: number): bigint {
    return this.#time[slot]!;
  }

  timestamp(slot: number): Timestamp {
    return new Timestamp(this.#time[slot]!, this.#clocks.get(this.#clock[slot]!));
  }

  /** Same as `timestamp(slot).compare(other)`, without making the timestamp (nor a BigInt). */
  compare(slot: number, other: Timestamp): number {
    TIME64[0] = other.time;
    const words = this.#time32;
    const hi = words[2 * slot + HI]!;
    const otherHi = TIME32[HI]!;
    if (hi !== otherHi) return hi < otherHi ? -1 : 1;
    const lo = words[2 * slot + LO]!;
    const otherLo = TIME32[LO]!;
    if (lo !== otherLo) return lo < otherLo ? -1 : 1;
    const id = this.#clocks.get(this.#clock[slot]!);
    return id < other.id ? -1 : id > other.id ? 1 : 0;
  }

  encoding(slot: number): string {
    return this.#encodings.get(this.#enc[slot]!);
  }

  /** The payload held in `slot` (a view of a slab: it never changes), or undefined for a tombstone. */
  payload(slot: number): Buffer | undefined {
    const s = this.#slab[slot]!;
    if (s === TOMBSTONE) return undefined;
    const off = this.#off[slot]!;
    return this.#slabs[s]!.subarray(off, off + this.#len[slot]!);
  }

  /**
   * The key of the value held in `slot`, when it was stored with its key (`set`), else undefined.
   * The key is kept as a tail after the payload: a varint `v`, then UTF-8 bytes that are the
   * whole key (`v` = 0) or its last chunk under the shared prefix `v - 1` (`#prefixes`).
   */
  keyOf(slot: number): string | undefined {
    const s = this.#slab[slot]!;
    if (s === TOMBSTONE) return undefined;
    const buf = this.#slabs[s]!;
    const off = this.#off[slot]!;
    const end = off + this.#recordLength(slot);
    const at = off + this.#len[slot]!;
    if (at === end) return undefined;
    const v = readVle(buf, at);
    const rest = buf.toString("utf8", at + varintLength(v), end);
    return v === 0 ? rest : `${this.#prefixes.get(v - 1)}/${rest}`;
  }

  /** The entry of the value at `key`, held in `slot`, or null for a tombstone; kept in the entry cache. */
  entry(key: string, slot: number): StoredSample | null {
    const mask = this.#cachedSlot.length - 1;
    const i = slot & mask;
    if (mask >= 0 && this.#cachedSlot[i] === slot) return this.#cached[i]!;
    const e = this.#make(key, slot);
    if (e === null) return null;
    if (mask < 0 || (mask + 1 < ENTRY_CACHE_MAX && this.#slots > mask + 1)) return this.#resizeCache(e, slot);
    this.#cachedSlot[i] = slot;
    this.#cached[i] = e;
    return e;
  }

  /** The same as `entry`, without caching what it makes (for scans over many keys). */
  scanEntry(key: string, slot: number): StoredSample | null {
    const mask = this.#cachedSlot.length - 1;
    if (mask >= 0 && this.#cachedSlot[slot & mask] === slot) return this.#cached[slot & mask]!;
    return this.#make(key, slot);
  }

  #make(key: string, slot: number): StoredSample | null {
    const payload = this.payload(slot);
    if (payload === undefined) return null;
    const d = this.deadlines === undefined ? 0 : this.deadlines.deadline(slot);
    return new Entry(key, payload, this.encoding(slot), this.timestamp(slot), d === 0 ? undefined : d);
  }

  /** Grows the entry cache with the number of slots (emptying it), and caches `e`. */
  #resizeCache(e: StoredSample, slot: number): StoredSample {
    let size = 64;
    while (size < ENTRY_CACHE_MAX && size < this.#slots) size <<= 1;
    this.#cachedSlot = new Int32Array(size).fill(-1);
    this.#cached = new Array<StoredSample | undefined>(size);
    this.#cachedSlot[slot & (size - 1)] = slot;
    this.#cached[slot & (size - 1)] = e;
    return e;
  }

  #uncache(slot: number): void {
    const i = slot & (this.#cachedSlot.length - 1);
    if (this.#cachedSlot[i] === slot) {
      this.#cachedSlot[i] = -1;
      this.#cached[i] = undefined;
    }
  }

  /** Forgets everything. */
  clear(): void {
    this.#cachedSlot = new Int32Array(0);
    this.#cached = [];
    this.#cap = 0;
    this.#time = new BigUint64Array(0);
    this.#time32 = new Uint32Array(0);
    this.#clock = new Uint32Array(0);
    this.#enc = new Uint32Array(0);
    this.#slab = new Uint32Array(0);
    this.#off = new Uint32Array(0);
    this.#len = new Uint32Array(0);
    this.#next = 0;
    this.#freeSlots.length = 0;
    this.#slots = 0;
    this.#slabs.length = 0;
    this.#fill.length = 0;
    this.#live.length = 0;
    this.#freeSlabs.length = 0;
    this.#head = -1;
    this.#liveBytes = 0;
    this.#deadBytes = 0;
    this.#prefixes = new Interner();
    this.#seen.clear();
  }

  #grow(): void {
    // 1.5× rather than 2×: at a million keys the unused end costs less.
    const cap = Math.max(64, Math.ceil(this.#cap * 1.5));
    const grow = <T extends BigUint64Array | Uint32Array>(a: T, make: (n: number) => T): T => {
      const b = make(cap);
      b.set(a as never);
      return b;
    };
    this.#time = grow(this.#time, (n) => new BigUint64Array(n));
    this.#time32 = new Uint32Array(this.#time.buffer);
    this.#clock = grow(this.#clock, (n) => new Uint32Array(n));
    this.#enc = grow(this.#enc, (n) => new Uint32Array(n));
    this.#slab = grow(this.#slab, (n) => new Uint32Array(n));
    this.#off = grow(this.#off, (n) => new Uint32Array(n));
    this.#len = grow(this.#len, (n) => new Uint32Array(n));
    this.#cap = cap;
  }

  /** Marks the payload of `slot` dead (the slot then holds a tombstone). */
  #drop(slot: number): void {
    const s = this.#slab[slot]!;
    if (s === TOMBSTONE) return;
    const total = this.#recordLength(slot);
    if (total !== this.#len[slot]) this.#releasePrefix(slot);
    const n = RECORD_HEADER_BYTES + total;
    this.#slab[slot] = TOMBSTONE;
    this.#live[s]! -= n;
    this.#liveBytes -= n;
    this.#deadBytes += n;
    if (this.#live[s] === 0 && s !== this.#head) this.#dropSlab(s);
  }

  /**
   * Writes `len` bytes of `src` from `start` as the record of `slot`, at the head's end: the
   * first `payloadLen` are its payload; then, when `tag` is not -1, a key tail (`keyOf`) of `tag`
   * and `text` from `textFrom`.
   */
  #append(
    slot: number,
    src: Uint8Array,
    start: number,
    len: number,
    payloadLen: number,
    tag: number,
    text: string,
    textFrom: number,
  ): void {
    const textBytes = tag === -1 ? 0 : asciiLength(text, textFrom);
    const tailLen =
      tag === -1
        ? 0
        : varintLength(tag) + (textBytes === -1 ? Buffer.byteLength(text.slice(textFrom), "utf8") : textBytes);
    len += tailLen;
    const n = RECORD_HEADER_BYTES + len;
    let s = this.#head;
    if (n > OWN_BUFFER) {
      s = this.#newSlab(n);
    } else if (s === -1 || this.#fill[s]! + n > this.#slabs[s]!.length) {
      this.#retireHead();
      s = this.#head = this.#newSlab(this.#headSize(n));
    }
    const buf = this.#slabs[s]!;
    const at = this.#fill[s]!;
    // The record header, little-endian, written byte by byte: `writeUInt32LE` is a call that V8
    // does not inline, and it validated what is known to fit.
    buf[at] = slot;
    buf[at + 1] = slot >>> 8;
    buf[at + 2] = slot >>> 16;
    buf[at + 3] = slot >>> 24;
    buf[at + 4] = len;
    buf[at + 5] = len >>> 8;
    buf[at + 6] = len >>> 16;
    buf[at + 7] = len >>> 24;
    const copied = len - tailLen;
    const to = at + RECORD_HEADER_BYTES;
    if (copied <= SMALL_COPY) for (let i = 0; i < copied; i++) buf[to + i] = src[start + i]!;
    else buf.set(start === 0 && copied === src.length ? src : src.subarray(start, start + copied), to);
    if (tag !== -1) {
      let w = at + RECORD_HEADER_BYTES + copied;
      let v = tag;
      while (v >= 0x80) {
        buf[w++] = (v & 0x7f) | 0x80;
        v = Math.floor(v / 0x80);
      }
      buf[w++] = v;
      // A key is ASCII but for rare names: its bytes are its character codes, written here rather
      // than by a call into Node's UTF-8 encoder.
      if (textBytes === -1) buf.write(text.slice(textFrom), w, "utf8");
      else for (let i = 0; i < textBytes; i++) buf[w + i] = text.charCodeAt(textFrom + i);
    }
    this.#fill[s] = at + n;
    this.#live[s]! += n;
    this.#liveBytes += n;
    this.#slab[slot] = s;
    this.#off[slot] = at + RECORD_HEADER_BYTES;
    this.#len[slot] = payloadLen;
  }

  /** Length of the record of `slot` (not a tombstone): its payload and its key tail. */
  #recordLength(slot: number): number {
    const buf = this.#slabs[this.#slab[slot]!]!;
    const at = this.#off[slot]! - 4;
    return (buf[at]! | (buf[at + 1]! << 8) | (buf[at + 2]! << 16)) + buf[at + 3]! * 0x1000000;
  }

  /** Where in its key the text of the key tail `#keyTail` made last starts. */
  #tailFrom = 0;

  /**
   * The key tail of a record holding `key`: returns its tag (0: the whole key; `v + 1`: the shared
   * prefix `v`, held once more), where its text starts in `key` in `#tailFrom`. The key's prefix (before its last `/`) is
   * shared between the records that name it once it was seen twice lately (`#seen`), so a key
   * under a busy prefix costs its last chunk and a byte or two; another is kept whole.
   */
  #keyTail(key: string): number {
    // The last `/`, found by hand: `lastIndexOf` is a call into the runtime.
    let cut = key.length - 1;
    while (cut > 0 && key.charCodeAt(cut) !== 47) cut--;
    if (cut > 0) {
      // Most keys written with a TTL share the prefix of the one before.
      const last = this.#prefixes.acquireLastPrefix(key, cut);
      if (last !== -1) {
        this.#tailFrom = cut + 1;
        return last + 1;
      }
      const prefix = key.slice(0, cut);
      let shared = this.#prefixes.has(prefix);
      if (!shared) {
        if (this.#seen.has(prefix)) shared = true;
        else {
          if (this.#seen.size >= SEEN_PREFIXES) this.#seen.clear();
          this.#seen.add(prefix);
        }
      }
      if (shared) {
        this.#tailFrom = cut + 1;
        return this.#prefixes.acquire(prefix) + 1;
      }
    }
    this.#tailFrom = 0;
    return 0;
  }

  /** Gives back the shared prefix the key tail of `slot`'s record names, if any. */
  #releasePrefix(slot: number): void {
    const buf = this.#slabs[this.#slab[slot]!]!;
    const v = readVle(buf, this.#off[slot]! + this.#len[slot]!);
    if (v > 0) this.#prefixes.release(v - 1);
  }

  /** A slab size that grows with what is held: small storages stay small. */
  #headSize(need: number): number {
    let size = MIN_SLAB;
    while (size < MAX_SLAB && size < this.#liveBytes >> 4) size <<= 1;
    return Math.max(size, need);
  }

  #newSlab(size: number): number {
    const s = this.#freeSlabs.pop() ?? this.#slabs.length;
    // Not from Node's shared pool: a slab's memory is its own, freed when it is dropped.
    this.#slabs[s] = Buffer.allocUnsafeSlow(size);
    this.#fill[s] = 0;
    this.#live[s] = 0;
    return s;
  }

  /** The head slab is full: its unwritten end becomes dead space (or the slab goes, if empty). */
  #retireHead(): void {
    const h = this.#head;
    if (h === -1) return;
    this.#head = -1;
    this.#deadBytes += this.#slabs[h]!.length - this.#fill[h]!;
    if (this.#live[h] === 0) this.#dropSlab(h);
  }

  /** Drops slab `s`, which holds no live record. */
  #dropSlab(s: number): void {
    const size = s === this.#head ? this.#fill[s]! : this.#slabs[s]!.length;
    this.#deadBytes -= size - this.#live[s]!;
    if (s === this.#head) this.#head = -1;
    this.#slabs[s] = undefined;
    this.#freeSlabs.push(s);
  }

  #compactIfWasteful(): void {
    // A few slabs at most per write (a compaction may leave the head's unwritten end as dead).
    for (let round = 0; round < 4 && this.#deadBytes > (this.#liveBytes >> 2) + DEAD_SLACK; round++) {
      // The slab with the most dead bytes: copying its live records out frees the most.
      let victim = -1;
      let most = 0;
      for (let s = 0; s < this.#slabs.length; s++) {
        const buf = this.#slabs[s];
        if (buf === undefined) continue;
        const dead = (s === this.#head ? this.#fill[s]! : buf.length) - this.#live[s]!;
        if (dead > most) {
          most = dead;
          victim = s;
        }
      }
      if (victim === -1) return;
      this.#compact(victim);
    }
  }

  /** Copies the live records of slab `s` to the head, then drops `s`. */
  #compact(s: number): void {
    if (s === this.#head) this.#retireHead();
    if (this.#slabs[s] === undefined) return; // it held nothing live: retiring dropped it
    const buf = this.#slabs[s]!;
    const end = this.#fill[s]!;
    for (let at = 0; at < end; ) {
      const slot = buf.readUInt32LE(at);
      const len = buf.readUInt32LE(at + 4);
      const off = at + RECORD_HEADER_BYTES;
      at = off + len;
      // A record is live when its slot still points at it (slots are reused: check both).
      if (slot >= this.#next || this.#slab[slot] !== s || this.#off[slot] !== off) continue;
      this.#live[s]! -= RECORD_HEADER_BYTES + len;
      this.#liveBytes -= RECORD_HEADER_BYTES + len;
      this.#deadBytes += RECORD_HEADER_BYTES + len;
      this.#uncache(slot);
      this.#append(slot, buf, off, len, this.#len[slot]!, -1, "", 0);
    }
    this.#dropSlab(s);
  }
}

/** Length of `text` from `from` when that is all ASCII (its UTF-8 bytes are its character codes), else -1. */
function asciiLength(text: string, from: number): number {
  for (let i = from; i < text.length; i++) if (text.charCodeAt(i) >= 0x80) return -1;
  return text.length - from;
}

/** Bytes of `v` as an unsigned LEB128 varint. */
function varintLength(v: number): number {
  let n = 1;
  while (v >= 0x80) {
    v = Math.floor(v / 0x80);
    n++;
  }
  return n;
}

/** The unsigned LEB128 varint at `at` in `buf` (a key tail's shared-prefix reference). */
function readVle(buf: Uint8Array, at: number): number {
  let v = 0;
  let shift = 0;
  for (;;) {
    const b = buf[at++]!;
    v += (b & 0x7f) * 2 ** shift;
    if (b < 0x80) return v;
    shift += 7;
  }
}
