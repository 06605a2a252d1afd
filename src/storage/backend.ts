/**
 * The storage contract: what every volume's storages implement, and what the storage service
 * may rely on. Each clause is stated in `docs/storage-contract.md`; the conformance suite
 * (`test/storage/contract.ts`) checks them on every volume.
 */
import type { Buffer } from "node:buffer";
import type { Encoding } from "../core/encoding.js";
import type { WriteCondition } from "../core/sample.js";
import { ZestError } from "../core/errors.js";
import type { Logger } from "../core/log.js";
import type { TimeRange } from "../core/time-range.js";
import type { Timestamp } from "../core/timestamp.js";
import type { DriverOptions, RawOptions } from "./options.js";
import { isExpired } from "../core/lifetime.js";

/** A value as a storage keeps it. */
export interface StoredEntry {
  readonly key: string;
  readonly payload: Buffer;
  readonly encoding: Encoding;
  readonly timestamp: Timestamp;
  /**
   * When the value expires (Unix ms; absent: never). A storage keeps it with the value and hands
   * it back with it; the service filters expired values out of every read and deletes them at
   * their deadline (docs/ttl-and-leases.md).
   */
  readonly deadline?: number;
}

/** A stored value as the put sample a storage answers with: what `scan` hands out, a reply as is. */
export interface StoredSample extends StoredEntry {
  readonly kind: "put";
}

/**
 * What a storage holds for exactly one key: its latest value, or the tombstone a delete left.
 * `version` is opaque: equal versions mean the key has not changed in between (it is derived
 * from the held sample's timestamp, see `versionOf`).
 */
export interface StoredLookup {
  readonly timestamp: Timestamp;
  readonly deleted: boolean;
  readonly version: string;
  /** The value's deadline (Unix ms), when it has one: past it, the key holds no value. */
  readonly deadline?: number;
}

/**
 * The outcome of a write. `inserted`: the storage now holds it. `outdated`: last-writer-wins
 * refused it (the storage holds something as new or newer). A write whose condition does not
 * hold is neither: it rejects with a `precondition_failed` ZestError.
 */
export type Insertion = "inserted" | "outdated";

/** A condition on a write (`ifVersion` or `ifAbsent`), checked atomically with it. */
export type { WriteCondition } from "../core/sample.js";

/** What a storage can do; the storage service reads it instead of asking what kind it is. */
export interface StorageCapability {
  /**
   * `latest`: one value per key. `all`: a time series keeping every point; `query` without a
   * range returns the latest point per key, with a range every point in it.
   */
  readonly history: "latest" | "all";
  /** `durable`: acknowledged writes survive closing and reopening the storage (and a crash). */
  readonly persistence: "volatile" | "durable";
  /**
   * True when every router's storage on this backend holds the same data, replicated by the
   * backend itself (JetStream): such storages need no anti-entropy (docs/replication.md).
   */
  readonly shared?: boolean;
}

/** The answer of a write: the outcome, or its promise when the write must wait (see `put`). */
export type WriteResult = Insertion | Promise<Insertion>;

/**
 * One storage's data. The storage decides last-writer-wins itself, atomically per key, so that
 * writes to one key may be issued concurrently (from this router or, for shared backends, from
 * several) and the newest always stays.
 */
export interface StorageBackend {
  readonly capability: StorageCapability;
  /**
   * Optional, shared backends only: a name that every router's backend writing the very same
   * data carries (a JetStream bucket on the fabric's own NATS connection). A sample another
   * router's storage of this store already wrote needs no write here (`stored`).
   */
  readonly store?: string;
  /**
   * Optional, with `store`: another router's storage wrote `key` in the store (the sample said
   * so): nothing to write, but what this backend remembers of the key is stale.
   */
  stored?(key: string): void;
  /** The value or tombstone held for exactly `key`, with its version. */
  lookup(key: string): Promise<StoredLookup | undefined>;
  /**
   * Stores a value unless the key holds something as new or newer (`outdated`) or `condition`
   * fails (rejects with `precondition_failed`). Returns the outcome directly only when the write
   * is decided, applied and durable before the call returns; otherwise a promise that settles
   * once it is durable. Either way, lookups and queries that start after the outcome is known
   * see the write. A rejection (other than the condition) means the write may be lost.
   */
  put(entry: StoredEntry, condition?: WriteCondition): WriteResult;
  /**
   * Replaces the value by a tombstone at `timestamp`, on the same terms as `put`. A time series
   * drops the key's points up to `timestamp` and remembers the tombstone for its expiry.
   */
  delete(key: string, timestamp: Timestamp, condition?: WriteCondition): WriteResult;
  /**
   * Live entries (never tombstones) whose key intersects the canonical key expression `keyExpr`.
   * `range` is given only for `_time` queries.
   */
  query(keyExpr: string, range?: TimeRange): Promise<StoredEntry[]>;
  /**
   * Optional: the value held for exactly the plain key `key` (null: none, or a tombstone), read
   * synchronously, as `query(key)` would answer it. Only backends that can read synchronously
   * offer it (memory; SQLite, whose driver is synchronous); it lets a GET of one key skip
   * building a query (`Router.readStored`). It may throw (a closed or broken file): the caller
   * then runs the query, which reports the failure. While the key is not written, a backend
   * should hand out the same object each time: the REST gateway keeps the answer it rendered for
   * a sample with the sample.
   */
  peek?(key: string): StoredSample | null;
  /**
   * Optional: what `query(keyExpr)` answers, in batches sorted by key (string order, as `<`
   * compares keys), each batch after the previous one: a wide GET answered by this storage alone
   * is written out as the batches come, never held whole (`Router.scanStored`). Stopping the
   * iteration early releases what the scan holds.
   */
  scan?(keyExpr: string): AsyncIterable<readonly StoredSample[]>;
  /**
   * Optional: the backend schedules its values' deadlines itself (the memory volume, in a few
   * bytes per key). Without it, the storage service keeps the schedule.
   */
  readonly expiry?: ExpirySchedule;
  /** Drops tombstones older than `before` (NTP64): after this, older writes are accepted again. */
  purgeTombstones(before: bigint): Promise<void>;
  /**
   * Releases resources. With `dispose`, applies the storage's disposal policy (`on_dispose` /
   * `on_closure`: truncate, drop the table or database, ...); without, data is kept for a restart.
   */
  close(dispose: boolean): Promise<void>;
}

/** A schedule of the deadlines a storage holds (see `StorageBackend.expiry`). */
export interface ExpirySchedule {
  /** The earliest deadline held (Unix ms), or undefined when none. */
  next(): number | undefined;
  /**
   * Hands `onDue` each value whose deadline is at or before `now`, earliest first, at most `max`
   * of them, and forgets their deadlines (the deletes that follow remove the values).
   */
  takeDue(now: number, max: number, onDue: (key: string, timestamp: Timestamp) => void): number;
}

/** The version of a held sample: its timestamp's encoding (so the REST layer can show it as an ETag). */
export function versionOf(timestamp: Timestamp): string {
  return timestamp.encode();
}

/**
 * Last-writer-wins and the write condition, decided against what a storage holds: `outdated`,
 * `inserted`, or a thrown `precondition_failed`. Shared by every volume, so they decide alike.
 */
export function decideWrite(
  current: { timestamp: Timestamp; deleted: boolean; deadline?: number } | undefined,
  timestamp: Timestamp,
  condition: WriteCondition | undefined,
): Insertion {
  if (condition) checkCondition(current, condition);
  return current && current.timestamp.compare(timestamp) >= 0 ? "outdated" : "inserted";
}

/** Throws `precondition_failed` unless `condition` holds on `current`. */
export function checkCondition(
  current: { timestamp: Timestamp; deleted: boolean; deadline?: number } | undefined,
  condition: WriteCondition,
): void {
  // An expired value is no value, whether or not its delete has run yet.
  const live = current !== undefined && !current.deleted && !isExpired(current.deadline, Date.now());
  if (condition.ifAbsent) {
    if (live) throw preconditionFailed("the key already holds a value");
  }
  if (condition.ifVersion !== undefined) {
    if (!current) throw preconditionFailed("the key holds nothing");
    if (!current.deleted && !live) throw preconditionFailed("the key's value has expired");
    if (versionOf(current.timestamp) !== condition.ifVersion) throw preconditionFailed("the key holds another version");
  }
}

/** The error of a write whose condition does not hold. */
export function preconditionFailed(why: string): ZestError {
  return new ZestError("precondition_failed", `write condition failed: ${why}`);
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
  /** The driver that made it (its `name`). */
  readonly driver: string;
  /**
   * Opens (or creates) the storage `name` on `keyExpr` with its volume-specific options.
   * Throws a `bad_input` ZestError for bad options and `unavailable` for an unreachable backend.
   */
  createStorage(name: string, keyExpr: string, options: RawOptions): Promise<StorageBackend>;
  /** Status object shown in the admin space. */
  status(): Record<string, unknown>;
  close(): Promise<void>;
}

/**
 * A kind of volume (one module per driver), describing itself so that the storage manager and
 * both admin layouts need no switch on driver names.
 */
export interface VolumeDriver {
  /** The name configs use (`backend: "sqlite"`). */
  readonly name: string;
  /** Other names configs may use (`sqlite3`, zenoh 0.4's `lib` names). */
  readonly aliases: readonly string[];
  /** zenoh 0.4's `kind` property, shown in Variant B's admin space (`sql`, `time-series`...). */
  readonly kind: string;
  /** The admin space's `__path__` of its volumes (`<built-in sqlite>`). */
  readonly adminPath: string;
  /**
   * A volume named after the driver that every router has from the start and that cannot be
   * removed (the memory volume).
   */
  readonly builtIn?: boolean;
  /**
   * Its volume and storage options: closed schemas with their defaults, and the files and hosts
   * they reach. The storage manager checks a volume's or storage's options with them before
   * anything opens (an unknown option is a 400 naming it, exit 2 at start), and admits
   * run-time volumes by what they reach (docs/configuration.md). Kept light: no heavy import.
   */
  readonly options: DriverOptions;
  /**
   * Parses the volume options (with `options.volume`) and opens it; throws a `bad_input`
   * ZestError naming the bad option. `createStorage` parses its options with `options.storage`.
   */
  open(id: string, options: RawOptions, ctx: VolumeContext): Promise<Volume>;
}
