import type { Reply } from "../core/reply.js";

/** A rendered GET response, valid while the router's data version has not moved. */
export interface CachedResponse {
  readonly version: number;
  /** Response headers, built once. */
  readonly headers: Readonly<Record<string, string | number>>;
  readonly body: Buffer;
}

/**
 * Rendered responses of repeated GETs of stored data, keyed by URL and representation. An entry
 * is used only while `Router.dataVersion` is the one read before its query ran, so any write,
 * declaration or remote sample invalidates every entry; reads between writes skip the query,
 * the storage lookups and the rendering. Least recently stored entries are evicted first.
 */
export class ReadCache {
  private readonly map = new Map<string, CachedResponse>();

  constructor(
    private readonly maxEntries: number,
    private readonly maxBodyBytes = 64 * 1024,
  ) {}

  /** The entry for `key` if it is still valid at `version`. */
  get(key: string, version: number): CachedResponse | undefined {
    const e = this.map.get(key);
    if (e === undefined) return undefined;
    if (e.version === version) return e;
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
 * that reached storages only (the caller asks `Router.storagesOnly`). Computed replies (evals,
 * the admin space) may change without any write, even when they carry a timestamp.
 */
export function cacheableReplies(replies: readonly Reply[]): boolean {
  for (const r of replies) if (r.kind !== "ok") return false;
  return true;
}
