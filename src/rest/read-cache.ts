import type { ChangeFeed } from "../core/ports.js";
import type { Reply } from "../core/reply.js";

/** A rendered GET response, valid while the cache's data version has not moved. */
export interface CachedResponse {
  readonly version: number;
  /** Response headers, built once. */
  readonly headers: Readonly<Record<string, string | number>>;
  readonly body: Buffer;
}

/**
 * Rendered responses of repeated GETs of stored data, keyed by URL and representation. The
 * cache's `version` moves with every change event (a storage applied a write, a declaration
 * came or went); an entry is used only while `version` is the one read before its query ran, so
 * reads between writes skip the query, the storage lookups and the rendering. Least recently
 * stored entries are evicted first.
 */
export class ReadCache {
  private readonly map = new Map<string, CachedResponse>();
  private dataVersion = 0;
  private readonly unsubscribe: () => void;

  constructor(
    changes: ChangeFeed,
    private readonly maxEntries: number,
    private readonly maxBodyBytes = 64 * 1024,
  ) {
    this.unsubscribe = changes.subscribe(() => {
      this.dataVersion++;
    });
  }

  /** Moves with every change event; read it before a query, and store the answer with it. */
  get version(): number {
    return this.dataVersion;
  }

  /** Stops following change events and forgets every entry. */
  close(): void {
    this.unsubscribe();
    this.map.clear();
  }

  /** The entry for `key` if it is still valid. */
  get(key: string): CachedResponse | undefined {
    const e = this.map.get(key);
    if (e === undefined) return undefined;
    if (e.version === this.dataVersion) return e;
    this.map.delete(key);
    return undefined;
  }

  /** Keeps a response if it is small enough. */
  set(key: string, entry: CachedResponse): void {
    if (this.maxEntries <= 0 || entry.body.length > this.maxBodyBytes) return;
    if (this.map.size >= this.maxEntries) this.map.delete(this.map.keys().next().value!);
    this.map.set(key, entry);
  }

  get size(): number {
    return this.map.size;
  }
}

/**
 * Only stored data can be cached: an answer with no error (errors must be retried), from a query
 * that reached storages only (the caller asks `Session.interest.storagesOnly`). Computed replies (evals,
 * the admin space) may change without any write, even when they carry a timestamp.
 */
export function cacheableReplies(replies: readonly Reply[]): boolean {
  for (const r of replies) if (r.kind !== "ok") return false;
  return true;
}
