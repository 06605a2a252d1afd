import { Buffer } from "node:buffer";
import { randomBytes } from "node:crypto";
import { intersects } from "../keyexpr/index.js";

/** One SSE event as it goes on the wire, encoded once and shared by every stream and the log. */
export interface SseEvent {
  /** The event framed as one HTTP/1.1 chunk (`<size hex>\r\n<frame>\r\n`). */
  readonly chunk: Buffer;
  /** The bare event (`id: ...\nevent: ...\ndata: ...\n\n`), a view into `chunk`. */
  readonly frame: Buffer;
}

/** Frames `message` (an SSE event, ending in a blank line) as a chunk, in one allocation. */
export function sseEventOf(message: Buffer, idLine?: string): SseEvent {
  const idLen = idLine === undefined ? 0 : Buffer.byteLength(idLine);
  const size = idLen + message.length;
  const head = `${size.toString(16)}\r\n`;
  const chunk = Buffer.allocUnsafe(head.length + size + 2);
  let at = chunk.write(head, 0, "latin1");
  if (idLine !== undefined) at += chunk.write(idLine, at, "utf8");
  at += message.copy(chunk, at);
  chunk[at] = 0x0d;
  chunk[at + 1] = 0x0a;
  return { chunk, frame: chunk.subarray(head.length, head.length + size) };
}

/** Bounds of the resume log (docs/sse.md). */
export interface ResumeLogLimits {
  /** Most events kept (10,000); 0 turns ids and resume off. */
  readonly entries: number;
  /** Most bytes of encoded events kept (16 MiB). */
  readonly bytes: number;
}

export const DEFAULT_RESUME_LOG: ResumeLogLimits = { entries: 10_000, bytes: 16 * 1024 * 1024 };
/** The largest bounds a configuration may set: the arena (twice the bytes) is placed by 32-bit offsets. */
export const MAX_RESUME_LOG: ResumeLogLimits = { entries: 1_000_000, bytes: 512 * 1024 * 1024 };

/** What a resuming client gets: the events it missed, or the reason they cannot be told. */
export type ResumeResult = { readonly events: SseEvent[] } | { readonly reset: string };

/** The arena's first size; it doubles as the kept events need, up to the byte bound. */
const FIRST_ARENA_BYTES = 64 * 1024;

/**
 * The events this router delivered to its SSE streams, newest last, bounded in count and bytes
 * (docs/sse.md). Ids are `<epoch>-<seq>`: the epoch is drawn at start-up, so an id from another
 * router or an earlier run of this one is recognised as such instead of being misread.
 *
 * The kept events are bytes in one ring arena (each event's key, then its frame), placed by
 * typed arrays of offsets and lengths: no JS object per kept event. At thousands of events a
 * second, per-event objects that live for seconds are what V8's young-generation collector has
 * to copy and promote, and its pauses were most of a streamed sample's p99 (docs/sse.md). The
 * arena grows to at most twice the byte bound: then an event always fits in one piece without
 * evicting below the bound, since of the free space (at least the bound plus the event, less
 * the tail left unused when the ring last wrapped) one side is large enough.
 */
export class ResumeLog {
  /** This log's incarnation, part of every id. */
  readonly epoch = randomBytes(4).toString("hex");
  /** Sequence number the next event gets (the first is 1). */
  private nextSeq = 1;
  /** The oldest sequence number whose slot is still valid. */
  private firstSeq = 1;
  // Slot (seq % entries) places event seq in the arena while it is kept; frameLen -1: no event.
  private readonly offsets: Int32Array;
  private readonly keyLens: Int32Array;
  private readonly frameLens: Int32Array;
  private arena: Buffer;
  /** Where the oldest kept event starts (or ends, once dropped): the arena's data begins here. */
  private head = 0;
  /** Where the next event goes: the arena's data ends here. */
  private tail = 0;
  /** Events kept, and their bytes (keys and frames). */
  private stored = 0;
  private bytes = 0;

  constructor(private readonly limits: ResumeLogLimits) {
    this.offsets = new Int32Array(limits.entries);
    this.keyLens = new Int32Array(limits.entries);
    this.frameLens = new Int32Array(limits.entries).fill(-1);
    this.arena = Buffer.allocUnsafe(Math.min(FIRST_ARENA_BYTES, 2 * limits.bytes));
  }

  /** Sequence number the next event will get. */
  get next(): number {
    return this.nextSeq;
  }

  /** Number of events kept. */
  get size(): number {
    return this.nextSeq - this.firstSeq;
  }

  /** The id of the newest event (`<epoch>-0` before the first one). */
  get lastId(): string {
    return `${this.epoch}-${this.nextSeq - 1}`;
  }

  /** Gives `message` (the codec's event for a sample on `key`) the next id, keeps it, and returns it framed. */
  append(key: string, message: Buffer): SseEvent {
    const seq = this.claim();
    const event = sseEventOf(message, `id: ${this.epoch}-${seq}\n`);
    const frame = event.frame;
    const keyLen = Buffer.byteLength(key);
    const size = keyLen + frame.length;
    if (size > this.limits.bytes) {
      // Too large to keep: whoever missed it must be told so, as for an evicted event.
      while (this.firstSeq <= seq) this.dropOldest();
      return event;
    }
    while (this.bytes + size > this.limits.bytes) this.dropOldest();
    const at = this.place(size);
    this.arena.write(key, at, keyLen, "utf8");
    frame.copy(this.arena, at + keyLen);
    const slot = seq % this.limits.entries;
    this.offsets[slot] = at;
    this.keyLens[slot] = keyLen;
    this.frameLens[slot] = frame.length;
    this.tail = at + size;
    this.stored++;
    this.bytes += size;
    return event;
  }

  /**
   * Takes a sequence number that holds no event: the point from which a new watch records. Ids
   * from before it may have missed events on the watch's key expression that nobody logged.
   */
  mark(): number {
    return this.claim();
  }

  private claim(): number {
    const seq = this.nextSeq++;
    if (seq - this.firstSeq >= this.limits.entries) this.dropOldest();
    this.frameLens[seq % this.limits.entries] = -1;
    return seq;
  }

  /** Forgets the oldest sequence number, and its event if it holds one. */
  private dropOldest(): void {
    const slot = this.firstSeq % this.limits.entries;
    const frameLen = this.frameLens[slot]!;
    this.firstSeq++;
    if (frameLen < 0) return;
    this.frameLens[slot] = -1;
    const size = this.keyLens[slot]! + frameLen;
    this.bytes -= size;
    this.head = this.offsets[slot]! + size;
    if (--this.stored === 0) this.head = this.tail = 0;
  }

  /**
   * Where `size` contiguous bytes fit in the arena, after the newest event or at its start; the
   * arena grows (up to twice the byte bound) until they do. The caller has made room for `size`
   * under the byte bound, so at full size they fit; dropping the oldest is only a safety net.
   */
  private place(size: number): number {
    for (;;) {
      const cap = this.arena.length;
      if (this.stored === 0 || this.tail > this.head) {
        // The data is [head, tail): free after it, or from the start up to it.
        if (cap - this.tail >= size) return this.tail;
        if (this.head >= size) return 0;
      } else if (this.head - this.tail >= size) {
        // Wrapped: the data is [head, cap) then [0, tail); free between.
        return this.tail;
      }
      const most = 2 * this.limits.bytes;
      if (cap < most) this.grow(Math.min(most, Math.max(cap * 2, this.bytes + size)));
      else this.dropOldest();
    }
  }

  /** Moves the kept events, oldest first, to the start of a new arena of `cap` bytes. */
  private grow(cap: number): void {
    const next = Buffer.allocUnsafe(cap);
    const entries = this.limits.entries;
    let at = 0;
    for (let s = this.firstSeq; s < this.nextSeq; s++) {
      const slot = s % entries;
      const frameLen = this.frameLens[slot]!;
      if (frameLen < 0) continue;
      const from = this.offsets[slot]!;
      const size = this.keyLens[slot]! + frameLen;
      this.arena.copy(next, at, from, from + size);
      this.offsets[slot] = at;
      at += size;
    }
    this.arena = next;
    this.head = 0;
    this.tail = at;
  }

  /**
   * The kept events after `lastId` on keys intersecting `keyExpr`, oldest first, given that this
   * router recorded every event on `keyExpr` after the mark `watchedSince` (undefined: nothing
   * watches it). A reset when the id is not this log's, or when events after it may be missing
   * (evicted, or the key expression was not watched since then). `accept`, when given, keeps only
   * the events on keys it accepts. The events are copies: the arena's bytes move on.
   */
  since(
    lastId: string,
    keyExpr: string,
    watchedSince: number | undefined,
    accept?: (key: string) => boolean,
  ): ResumeResult {
    const dash = lastId.lastIndexOf("-");
    const epoch = lastId.slice(0, dash);
    const seqText = lastId.slice(dash + 1);
    const seq = Number(seqText);
    if (dash <= 0 || !/^\d{1,15}$/.test(seqText))
      return { reset: `"${lastId.slice(0, 64)}" is not an event id of this router` };
    if (epoch !== this.epoch) return { reset: "the id comes from another router or an earlier run of this one" };
    if (seq >= this.nextSeq) return { reset: "the id is newer than any event of this router" };
    if (watchedSince === undefined || watchedSince > seq)
      return { reset: "this router was not watching the key expression for the whole gap" };
    if (seq === this.nextSeq - 1) return { events: [] };
    if (this.firstSeq > seq + 1) return { reset: "the id is older than the resume log" };
    const out: SseEvent[] = [];
    const entries = this.limits.entries;
    const arena = this.arena;
    for (let s = seq + 1; s < this.nextSeq; s++) {
      const slot = s % entries;
      const frameLen = this.frameLens[slot]!;
      if (frameLen < 0) continue;
      const at = this.offsets[slot]!;
      const keyEnd = at + this.keyLens[slot]!;
      const key = arena.toString("utf8", at, keyEnd);
      if ((key === keyExpr || intersects(keyExpr, key)) && (accept === undefined || accept(key)))
        out.push(sseEventOf(arena.subarray(keyEnd, keyEnd + frameLen)));
    }
    return { events: out };
  }
}
