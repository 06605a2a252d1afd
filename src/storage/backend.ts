import type { Encoding } from "../core/encoding.js";
import type { Logger } from "../core/log.js";
import type { TimeRange } from "../core/time-range.js";
import type { Timestamp } from "../core/timestamp.js";

/** A value as a storage keeps it. */
export interface StoredEntry {
  readonly key: string;
  readonly payload: Buffer;
  readonly encoding: Encoding;
  readonly timestamp: Timestamp;
}

/** What a backend knows about one key: its value, or the tombstone left by a delete. */
export interface StoredLookup {
  readonly timestamp: Timestamp;
  readonly deleted: boolean;
}

/**
 * One storage's data, behind one small interface. A backend only stores: last-writer-wins,
 * tombstones and wildcard writes are decided by the storage service above it, so every
 * backend behaves the same.
 */
export interface StorageBackend {
  /**
   * `latest`: one value per key (the service applies last-writer-wins using `lookup`).
   * `all`: a time series that keeps every point; `query` without a range returns the latest point
   * per key, with a range every point in it.
   */
  readonly history: "latest" | "all";
  /**
   * Synchronous forms of `lookup`, `put` and `delete`, for backends that never wait on I/O
   * (memory, SQLite). The storage service uses them when no write is queued, which spares the
   * write path its promise hops. Same semantics as the asynchronous methods.
   */
  readonly sync?: SyncWrites;
  /** The current value's or tombstone's timestamp for exactly `key` (latest backends). */
  lookup(key: string): Promise<StoredLookup | undefined>;
  /** Stores a value (replacing any value or tombstone for `key`). Resolves once durable. */
  put(entry: StoredEntry): Promise<void>;
  /** Latest backends: replaces the value with a tombstone at `timestamp`. Time series: drops the key's series. */
  delete(key: string, timestamp: Timestamp): Promise<void>;
  /**
   * Live entries (never tombstones) whose key intersects the canonical key expression `keyExpr`.
   * `range` is given only for `_time` queries.
   */
  query(keyExpr: string, range?: TimeRange): Promise<StoredEntry[]>;
  /** Drops tombstones older than `before` (NTP64). */
  purgeTombstones(before: bigint): Promise<void>;
  /**
   * Releases resources. With `dispose`, applies the storage's disposal policy (`on_dispose` /
   * `on_closure`: truncate, drop the table or database, ...); without, data is kept for a restart.
   */
  close(dispose: boolean): Promise<void>;
}

/**
 * The synchronous write face of a backend (see `StorageBackend.sync`). A write is applied when
 * `put` or `delete` returns: the next `lookup` and query see it. It is durable at once when they
 * return nothing, or once the promise they return resolves (a backend that commits writes in
 * groups); a rejection means the write was lost and must not be acknowledged.
 */
export interface SyncWrites {
  lookup(key: string): StoredLookup | undefined;
  put(entry: StoredEntry): void | Promise<void>;
  delete(key: string, timestamp: Timestamp): void | Promise<void>;
}

/** Base of backends whose writes never wait (memory, SQLite): the async methods wrap `sync`. */
export abstract class SyncWritesBackend {
  abstract readonly sync: SyncWrites;

  async lookup(key: string): Promise<StoredLookup | undefined> {
    return this.sync.lookup(key);
  }
  async put(entry: StoredEntry): Promise<void> {
    await this.sync.put(entry);
  }
  async delete(key: string, timestamp: Timestamp): Promise<void> {
    await this.sync.delete(key, timestamp);
  }
}

/** What a volume gets from the router. */
export interface VolumeContext {
  /** `--data-dir`, where volumes may keep files when no path is configured. */
  readonly dataDir?: string;
  readonly logger: Logger;
}

/** A configured volume: a factory of storages of one kind. */
export interface Volume {
  /** The volume's name in the config (`memory`, `mysqlite`...). */
  readonly id: string;
  /** The driver that made it (`memory`, `sqlite`, `influxdb`, `jetstream`). */
  readonly driver: string;
  /**
   * Opens (or creates) the storage `name` on `keyExpr` with its volume-specific options.
   * Throws a 400 ZestError for bad options and a 503 for an unreachable backend.
   */
  createStorage(name: string, keyExpr: string, options: Readonly<Record<string, unknown>>): Promise<StorageBackend>;
  /** Status object shown in the admin space. */
  status(): Record<string, unknown>;
  close(): Promise<void>;
}

/** A kind of volume (one module per driver). */
export interface VolumeDriver {
  readonly name: string;
  /** Validates the volume options and opens it; throws a 400 ZestError naming the bad option. */
  open(id: string, options: Readonly<Record<string, unknown>>, ctx: VolumeContext): Promise<Volume>;
}
