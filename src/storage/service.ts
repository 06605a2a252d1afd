import { includes, intersects, isWild } from "../keyexpr/index.js";
import { errorMessage, ZestError } from "../core/errors.js";
import type { Logger } from "../core/log.js";
import type { Query } from "../core/query.js";
import type { Sample } from "../core/sample.js";
import type { Queryable, Session, Subscriber } from "../core/session.js";
import { unixNanosToNtp64, nowUnixNanos, type Timestamp } from "../core/timestamp.js";
import type { StorageBackend, StoredEntry, StoredLookup, SyncWrites } from "./backend.js";
import { inTimeRange } from "../core/time-range.js";
import { Slice } from "../core/slices.js";

/** How long a tombstone (or a wildcard delete) is remembered to reject late, older puts. */
const TOMBSTONE_TTL_NS = 60_000_000_000n;
const PURGE_EVERY_MS = 30_000;

/**
 * A running storage: a subscriber and a complete queryable on its key expression, over one
 * backend. It applies last-writer-wins by timestamp, tombstones, and wildcard writes, the same
 * way for every backend, and applies samples one at a time so that checks and writes never
 * interleave.
 */
export class StorageService {
  readonly name: string;
  readonly keyExpr: string;
  readonly backend: StorageBackend;
  private readonly session: Session;
  private readonly logger: Logger;
  private subscriber: Subscriber | undefined;
  private queryable: Queryable | undefined;
  private tail: Promise<void> = Promise.resolve();
  /** Recent wildcard deletes, to refuse older puts that arrive after them. */
  private wildDeletes: Array<{ key: string; timestamp: Timestamp }> = [];
  private purgeTimer: NodeJS.Timeout | undefined;

  constructor(name: string, keyExpr: string, backend: StorageBackend, session: Session, logger: Logger) {
    this.name = name;
    this.keyExpr = keyExpr;
    this.backend = backend;
    this.session = session;
    this.logger = logger.child({ storage: name });
  }

  /**
   * Starts the storage: subscribes first (so no write is missed), aligns from the storages that
   * already cover its key expression, then answers queries.
   */
  async start(options: { align?: boolean; alignTimeoutMs?: number } = {}): Promise<void> {
    this.subscriber = this.session.declareSubscriber(this.keyExpr, (s) => this.enqueue(s));
    if (options.align !== false) await this.align(options.alignTimeoutMs ?? 5_000);
    this.queryable = this.session.declareQueryable(this.keyExpr, (q) => this.answer(q), { complete: true, storage: true });
    this.purgeTimer = setInterval(() => void this.purge(), PURGE_EVERY_MS);
    this.purgeTimer.unref();
  }

  /** Stops the storage; with `dispose`, the backend applies its disposal policy. */
  async stop(dispose: boolean): Promise<void> {
    this.subscriber?.undeclare();
    this.queryable?.undeclare();
    if (this.purgeTimer) clearInterval(this.purgeTimer);
    await this.tail.catch(() => undefined);
    await this.backend.close(dispose);
  }

  /** Samples applied or waiting in `tail`; while zero, a synchronous backend is written inline. */
  private queued = 0;

  private enqueue(sample: Sample): Promise<void> | undefined {
    const sync = this.backend.sync;
    if (sync && this.queued === 0 && !isWild(sample.key)) {
      // Nothing is in flight, so writing now keeps the order; no promise is needed.
      let durable: Promise<void> | undefined;
      try {
        durable = this.applyWith(sample, sync.lookup(sample.key), sync);
      } catch (err) {
        return Promise.reject(this.failure(sample, err));
      }
      // Applied already (so the order holds); the put is acknowledged once the write is durable.
      return durable?.catch((err: unknown) => Promise.reject(this.failure(sample, err)));
    }
    this.queued++;
    const run = this.tail.then(() => this.apply(sample)).finally(() => this.queued--);
    // The chain must survive a failed write; the failure still reaches this put's caller.
    this.tail = run.catch(() => undefined);
    return run;
  }

  /** Applies one sample with last-writer-wins. */
  async apply(sample: Sample): Promise<void> {
    try {
      if (isWild(sample.key)) {
        if (sample.timestamp) await this.applyWild(sample, sample.timestamp);
        return;
      }
      // A time series only has tombstones to compare with, and keeps them where `sync` reads them.
      const sync = this.backend.history === "all" ? this.backend.sync : undefined;
      const current = sync ? sync.lookup(sample.key) : await this.backend.lookup(sample.key);
      const write = this.applyWith(sample, current, undefined);
      if (write) await write;
    } catch (err) {
      throw this.failure(sample, err);
    }
  }

  /**
   * Decides a sample against what the backend holds for its key and writes it: through `sync`
   * when given (applied on return; a promise only while it is not yet durable), else
   * asynchronously (returns the write's promise).
   */
  private applyWith(sample: Sample, current: StoredLookup | undefined, sync: SyncWrites | undefined): Promise<void> | undefined {
    const ts = sample.timestamp;
    if (!ts) return undefined; // every routed sample is stamped; unstamped ones cannot be ordered
    if (this.deletedByWildcard(sample.key, ts)) return undefined;
    // Outdated: older than the value or tombstone held. A time series keeps every point, so only
    // a tombstone (a delete within the TTL) refuses an older sample there.
    if (current && (current.deleted || this.backend.history === "latest") && current.timestamp.compare(ts) >= 0) return undefined;
    const router = this.session.router;
    if (sync) {
      const durable = sample.kind === "put" ? sync.put({ key: sample.key, payload: sample.payload, encoding: sample.encoding, timestamp: ts }) : sync.delete(sample.key, ts);
      router.touch();
      return durable instanceof Promise ? durable : undefined;
    }
    const write = sample.kind === "put" ? this.backend.put({ key: sample.key, payload: sample.payload, encoding: sample.encoding, timestamp: ts }) : this.backend.delete(sample.key, ts);
    return write.then(() => router.touch());
  }

  private failure(sample: Sample, err: unknown): ZestError {
    this.logger.error({ key: sample.key, err: errorMessage(err) }, "storage write failed");
    return err instanceof ZestError ? err : ZestError.unavailable(`storage ${this.name}: ${errorMessage(err)}`, err);
  }

  /** A put or delete on a wildcard expression updates every existing matching key. */
  private async applyWild(sample: Sample, ts: Timestamp): Promise<void> {
    const entries = await this.backend.query(sample.key);
    for (const e of entries) {
      if (e.timestamp.compare(ts) >= 0) continue;
      if (sample.kind === "put") await this.backend.put({ key: e.key, payload: sample.payload, encoding: sample.encoding, timestamp: ts });
      else await this.backend.delete(e.key, ts);
    }
    if (sample.kind === "delete") this.wildDeletes.push({ key: sample.key, timestamp: ts });
    this.session.router.touch();
  }

  private deletedByWildcard(key: string, ts: Timestamp): boolean {
    for (const d of this.wildDeletes) if (d.timestamp.compare(ts) > 0 && intersects(d.key, key)) return true;
    return false;
  }

  private async answer(query: Query): Promise<void> {
    let range;
    try {
      range = query.parameters.timeRange();
    } catch (err) {
      query.replyError(err);
      return;
    }
    try {
      const entries = await this.backend.query(query.key, range);
      // A time series answers the range itself; a latest-value backend keeps one value per key,
      // which belongs in the answer only when its time falls in the range.
      const inRange = range && this.backend.history === "latest" ? (e: StoredEntry) => inTimeRange(range, e.timestamp.unixNanos) : undefined;
      const slice = new Slice(); // a large answer gives other requests their turn
      for (const e of entries) {
        if (inRange && !inRange(e)) continue;
        query.replySample({ key: e.key, kind: "put", payload: e.payload, encoding: e.encoding, timestamp: e.timestamp });
        if (slice.due()) await slice.next();
      }
    } catch (err) {
      this.logger.warn({ key: query.key, err: errorMessage(err) }, "storage query failed");
      query.replyError(err instanceof ZestError ? err : ZestError.unavailable(`storage ${this.name}: ${errorMessage(err)}`, err));
    }
  }

  /** Fills a new storage from the storages that already hold keys under its expression. */
  private async align(timeoutMs: number): Promise<void> {
    try {
      const replies = await this.session.get(this.keyExpr, { timeoutMs, consolidation: "latest" });
      for (const r of replies) {
        // Only stored data carries a timestamp; computed replies (evals, admin) are not copied.
        if (r.kind !== "ok" || !r.sample.timestamp || !includes(this.keyExpr, r.sample.key)) continue;
        await this.enqueue(r.sample);
      }
    } catch (err) {
      this.logger.warn({ err: errorMessage(err) }, "alignment failed; starting with local data only");
    }
  }

  private async purge(): Promise<void> {
    const before = unixNanosToNtp64(nowUnixNanos() - TOMBSTONE_TTL_NS);
    this.wildDeletes = this.wildDeletes.filter((d) => d.timestamp.time >= before);
    try {
      await this.backend.purgeTombstones(before);
    } catch (err) {
      this.logger.warn({ err: errorMessage(err) }, "tombstone purge failed");
    }
  }
}

/** How often a storage whose backend could not be opened tries again. */
export const REOPEN_EVERY_MS = 5_000;

/**
 * Stands in for a storage whose backend could not be opened at start-up (an InfluxDB that does
 * not answer, an SQLite file that cannot be opened). It declares the storage's subscriber and
 * queryable, so writes and queries on its key expression get a 503 naming the reason instead of
 * silently reaching no storage, and calls `reopen` every `REOPEN_EVERY_MS` until it reports
 * success or the stand-in is stopped. The storage manager replaces it with the real storage.
 */
export class UnavailableStorage {
  readonly name: string;
  readonly keyExpr: string;
  /** Why the backend could not be opened (the last attempt's error). */
  reason: string;
  private readonly session: Session;
  private subscriber: Subscriber | undefined;
  private queryable: Queryable | undefined;
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;

  constructor(name: string, keyExpr: string, reason: string, session: Session) {
    this.name = name;
    this.keyExpr = keyExpr;
    this.reason = reason;
    this.session = session;
  }

  /** The error writes and queries get. */
  error(): ZestError {
    return ZestError.unavailable(`storage ${this.name} is unavailable: ${this.reason}`);
  }

  /** Declares the subscriber and queryable, and schedules `reopen` (true = opened, stop retrying). */
  start(reopen: () => Promise<boolean>, everyMs = REOPEN_EVERY_MS): void {
    this.subscriber = this.session.declareSubscriber(this.keyExpr, () => Promise.reject(this.error()));
    this.queryable = this.session.declareQueryable(this.keyExpr, (q) => q.replyError(this.error()), { complete: true });
    const attempt = async (): Promise<void> => {
      this.timer = undefined;
      if (this.stopped) return;
      let opened = false;
      try {
        opened = await reopen();
      } catch {
        opened = false;
      }
      if (!opened && !this.stopped) schedule();
    };
    const schedule = (): void => {
      this.timer = setTimeout(() => void attempt(), everyMs);
      this.timer.unref();
    };
    schedule();
  }

  /** Undeclares and stops retrying. There is no backend, so nothing is disposed. */
  async stop(_dispose?: boolean): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    this.subscriber?.undeclare();
    this.queryable?.undeclare();
  }
}
