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

/** What a resuming client gets: the events it missed, or the reason they cannot be told. */
export type ResumeResult = { readonly events: SseEvent[] } | { readonly reset: string };

/**
 * The events this router delivered to its SSE streams, newest last, bounded in count and bytes
 * (docs/sse.md). Ids are `<epoch>-<seq>`: the epoch is drawn at start-up, so an id from another
 * router or an earlier run of this one is recognised as such instead of being misread.
 */
export class ResumeLog {
  /** This log's incarnation, part of every id. */
  readonly epoch = randomBytes(4).toString("hex");
  /** Sequence number the next event gets (the first is 1). */
  private nextSeq = 1;
  // A ring of the newest events: slot (seq % capacity) holds event seq while it is kept.
  private readonly keys: Array<string | undefined>;
  private readonly events: Array<SseEvent | undefined>;
  private firstSeq = 1;
  private bytes = 0;

  constructor(private readonly limits: ResumeLogLimits) {
    this.keys = new Array<string | undefined>(limits.entries);
    this.events = new Array<SseEvent | undefined>(limits.entries);
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
    const slot = seq % this.limits.entries;
    this.keys[slot] = key;
    this.events[slot] = event;
    this.bytes += event.chunk.length;
    while (this.bytes > this.limits.bytes && this.firstSeq < seq) this.dropOldest();
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
    const slot = seq % this.limits.entries;
    this.keys[slot] = undefined;
    this.events[slot] = undefined;
    return seq;
  }

  private dropOldest(): void {
    const slot = this.firstSeq % this.limits.entries;
    this.bytes -= this.events[slot]?.chunk.length ?? 0;
    this.keys[slot] = undefined;
    this.events[slot] = undefined;
    this.firstSeq++;
  }

  /**
   * The kept events after `lastId` on keys intersecting `keyExpr`, oldest first, given that this
   * router recorded every event on `keyExpr` after the mark `watchedSince` (undefined: nothing
   * watches it). A reset when the id is not this log's, or when events after it may be missing
   * (evicted, or the key expression was not watched since then). `accept`, when given, keeps only
   * the events on keys it accepts.
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
    const cap = this.limits.entries;
    for (let s = seq + 1; s < this.nextSeq; s++) {
      const key = this.keys[s % cap];
      if (key !== undefined && (key === keyExpr || intersects(keyExpr, key)) && (accept === undefined || accept(key)))
        out.push(this.events[s % cap]!);
    }
    return { events: out };
  }
}
