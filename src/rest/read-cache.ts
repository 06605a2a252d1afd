import type { Buffer } from "node:buffer";
import type { ChangeEvent, ChangeFeed } from "../core/ports.js";
import type { Reply } from "../core/reply.js";
import { intersects, isWild } from "../keyexpr/index.js";

/** A rendered GET response of the data under one key expression. */
export interface CachedResponse {
  /** The cache's `version` read before the query that produced this answer ran. */
  readonly version: number;
  /** The key expression the answer covers: a change on an intersecting key drops it. */
  readonly keyExpr: string;
  /** Response headers, built once. */
  readonly headers: Readonly<Record<string, string | number>>;
  readonly body: Buffer;
}

/**
 * Rendered responses of repeated GETs of stored data, keyed by URL and representation, so reads
 * between writes skip the query, the storage lookups and the rendering. Invalidation is per key:
 * a write drops only the answers whose key expression intersects the written key (plain keys by
 * one map lookup, wild ones by an intersection test each); a declaration, or a write on a wild
 * key, drops everything. An answer is kept only when no change event at all arrived while its
 * query ran (`version` unchanged), so a write that raced the query is never hidden. Least
 * recently stored entries are evicted first.
 */
export class ReadCache {
  private readonly map = new Map<string, CachedResponse>();
  /** Plain key → the cache keys of the answers about exactly that key. */
  private readonly byKey = new Map<string, Set<string>>();
  /** Cache keys of answers about wild key expressions. */
  private readonly wild = new Set<string>();
  private dataVersion = 0;
  /** Body bytes held, at most `maxBytes`. */
  private heldBytes = 0;
  private readonly unsubscribe: () => void;

  /**
   * `maxEntries` answers, each at most `maxBodyBytes` (1 MiB: a wild GET of a few thousand keys),
   * and at most `maxBytes` of bodies in all (32 MiB).
   */
  constructor(
    changes: ChangeFeed,
    private readonly maxEntries: number,
    private readonly maxBodyBytes = 1024 * 1024,
    private readonly maxBytes = 32 * 1024 * 1024,
  ) {
    this.unsubscribe = changes.subscribe((e) => this.onChange(e));
  }

  /** Moves with every change event; read it before a query, and store the answer with it. */
  get version(): number {
    return this.dataVersion;
  }

  /** Stops following change events and forgets every entry. */
  close(): void {
    this.unsubscribe();
    this.clear();
  }

  /** The entry for `key`, if any: every entry held is valid. */
  get(key: string): CachedResponse | undefined {
    return this.map.get(key);
  }

  /** Keeps a response if it is small enough and nothing changed while its query ran. */
  set(key: string, entry: CachedResponse): void {
    if (this.maxEntries <= 0 || entry.body.length > this.maxBodyBytes || entry.version !== this.dataVersion) return;
    this.remove(key);
    while (
      this.map.size > 0 &&
      (this.map.size >= this.maxEntries || this.heldBytes + entry.body.length > this.maxBytes)
    )
      this.remove(this.map.keys().next().value!);
    this.map.set(key, entry);
    this.heldBytes += entry.body.length;
    if (isWild(entry.keyExpr)) {
      this.wild.add(key);
    } else {
      let keys = this.byKey.get(entry.keyExpr);
      if (!keys) {
        keys = new Set();
        this.byKey.set(entry.keyExpr, keys);
      }
      keys.add(key);
    }
  }

  get size(): number {
    return this.map.size;
  }

  /** Body bytes held. */
  get bytes(): number {
    return this.heldBytes;
  }

  private onChange(e: ChangeEvent): void {
    this.dataVersion++;
    if (this.map.size === 0) return;
    if (e.kind === "declaration" || isWild(e.key)) {
      this.clear();
      return;
    }
    const exact = this.byKey.get(e.key);
    if (exact) for (const k of [...exact]) this.remove(k);
    for (const k of this.wild) {
      const entry = this.map.get(k);
      if (entry && intersects(entry.keyExpr, e.key)) this.remove(k);
    }
  }

  private remove(key: string): void {
    const entry = this.map.get(key);
    if (!entry) return;
    this.map.delete(key);
    this.heldBytes -= entry.body.length;
    if (isWild(entry.keyExpr)) {
      this.wild.delete(key);
      return;
    }
    const keys = this.byKey.get(entry.keyExpr);
    if (!keys) return;
    keys.delete(key);
    if (keys.size === 0) this.byKey.delete(entry.keyExpr);
  }

  private clear(): void {
    this.heldBytes = 0;
    this.map.clear();
    this.byKey.clear();
    this.wild.clear();
  }
}

/**
 * Only stored data can be cached: an answer with no error (errors must be retried), from a query
 * that reached storages only (the caller asks `Session.interest.storagesOnly`). Computed replies (evals,
 * the admin space) may change without any write, even when they carry a timestamp.
 */
export function cacheableReplies(replies: readonly Reply[]): boolean {
  // A value with a lifetime is not kept: the cache would serve it past its deadline.
  for (const r of replies) if (r.kind !== "ok" || r.sample.deadline !== undefined) return false;
  return true;
}
