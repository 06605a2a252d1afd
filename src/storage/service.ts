import { includes, intersects, isWild } from "../keyexpr/index.js";
import { errorMessage, ZestError } from "../core/errors.js";
import type { Logger } from "../core/log.js";
import type { Query } from "../core/query.js";
import type { Sample, WriteCondition } from "../core/sample.js";
import type { Queryable, Session, Subscriber } from "../core/session.js";
import { unixNanosToNtp64, nowUnixNanos, type Timestamp } from "../core/timestamp.js";
import {
  preconditionFailed,
  type Insertion,
  type StorageBackend,
  type StoredEntry,
  type WriteResult,
} from "./backend.js";
import { inTimeRange, type TimeRange } from "../core/time-range.js";
import { Slice } from "../core/slices.js";
import type { ReplicationSettings } from "./replication/config.js";
import { type ReplicationStatus, Replicator } from "./replication/replicator.js";

/** How long a tombstone (or a wildcard delete) is remembered to reject late, older puts. */
const TOMBSTONE_TTL_NS = 60_000_000_000n;
const PURGE_EVERY_MS = 30_000;

/**
 * A running storage: a subscriber and a complete queryable on its key expression, over one
 * backend. The backend decides last-writer-wins and write conditions per key (the storage
 * contract, docs/storage-contract.md); the service adds what spans keys: wildcard writes, the
 * memory of recent wildcard deletes, tombstone expiry, and change events.
 */
export class StorageService {
  readonly name: string;
  readonly keyExpr: string;
  readonly backend: StorageBackend;
  private readonly session: Session;
  private readonly logger: Logger;
  private subscriber: Subscriber | undefined;
  private queryable: Queryable | undefined;
  /** Wildcard writes, applied one after the other. */
  private wildTail: Promise<void> = Promise.resolve();
  /** Recent wildcard deletes, to refuse older puts that arrive after them. */
  private wildDeletes: Array<{ key: string; timestamp: Timestamp }> = [];
  private purgeTimer: NodeJS.Timeout | undefined;
  /** Anti-entropy with the replicas on other routers (docs/replication.md); absent when off. */
  private readonly replication: ReplicationSettings | undefined;
  private replicator: Replicator | undefined;

  /**
   * `replication`: the storage's replication settings, or undefined when off. It only runs when
   * the router is part of a fabric and the backend is not shared by the routers already.
   */
  constructor(
    name: string,
    keyExpr: string,
    backend: StorageBackend,
    session: Session,
    logger: Logger,
    replication?: ReplicationSettings,
  ) {
    this.name = name;
    this.keyExpr = keyExpr;
    this.backend = backend;
    this.session = session;
    this.logger = logger.child({ storage: name });
    this.replication = session.interest.clustered && backend.capability.shared !== true ? replication : undefined;
  }

  /**
   * Starts the storage: subscribes first (so no write is missed), aligns from the storages that
   * already cover its key expression, then answers queries.
   */
  async start(options: { align?: boolean; alignTimeoutMs?: number } = {}): Promise<void> {
    this.subscriber = this.session.declareSubscriber(this.keyExpr, (s, c) => this.apply(s, c), { storage: true });
    // With replication, the start-up alignment is an exchange with the replicas; storages that
    // only intersect this one (or replicas with replication off) are still read when none answers.
    let replicas = 0;
    if (this.replication) {
      const router = this.session.router;
      this.replicator = new Replicator({
        storage: this.name,
        keyExpr: this.keyExpr,
        settings: this.replication,
        backend: this.backend,
        logger: this.logger,
        host: {
          session: this.session,
          connected: () => router.fabric?.status().connected ?? false,
          deliver: (sample) => router.deliverLocal(sample),
        },
      });
      replicas = await this.replicator.start();
    }
    if (options.align !== false && replicas === 0) await this.align(options.alignTimeoutMs ?? 5_000);
    const backend = this.backend;
    // A backend that reads synchronously answers a GET of one key without a query
    // (`Router.readStored`); one that scans in key order lets a wide GET answered by this storage
    // alone be written out batch by batch (`Router.scanStored`). Both hand out put samples as is.
    const peek = backend.peek?.bind(backend);
    const scan = backend.scan?.bind(backend);
    this.queryable = this.session.declareQueryable(this.keyExpr, (q) => this.answer(q), {
      complete: true,
      storage: true,
      peek,
      scan,
    });
    this.purgeTimer = setInterval(() => void this.purge(), PURGE_EVERY_MS);
    this.purgeTimer.unref();
  }

  /** Stops the storage; with `dispose`, the backend applies its disposal policy. */
  async stop(dispose: boolean): Promise<void> {
    await this.replicator?.close();
    this.subscriber?.undeclare();
    this.queryable?.undeclare();
    if (this.purgeTimer) clearInterval(this.purgeTimer);
    await this.wildTail;
    await this.backend.close(dispose);
  }

  /**
   * Applies one sample (with its condition, for a conditional write). Returns nothing when the
   * backend decided and made it durable at once, else a promise the put waits for. Rejects with
   * `precondition_failed` when the condition fails, or when last-writer-wins refuses a
   * conditional write (the key holds a newer version than the one it was decided against).
   */
  apply(sample: Sample, condition?: WriteCondition): Promise<void> | undefined {
    const ts = sample.timestamp;
    if (!ts) return undefined; // every routed sample is stamped; unstamped ones cannot be ordered
    if (isWild(sample.key)) {
      const run = this.wildTail.then(() => this.applyWild(sample, ts));
      this.wildTail = run.catch(() => undefined);
      return run.catch((err: unknown) => Promise.reject(this.failure(sample, err)));
    }
    let result: WriteResult;
    if (this.deletedByWildcard(sample.key, ts)) {
      result = "outdated";
    } else {
      try {
        result = this.write(sample.key, sample, ts, condition);
      } catch (err) {
        return Promise.reject(this.failure(sample, err));
      }
    }
    if (typeof result === "string") {
      try {
        this.settled(sample, result, condition);
      } catch (err) {
        return Promise.reject(err);
      }
      return undefined;
    }
    return result.then(
      (outcome) => this.settled(sample, outcome, condition),
      (err: unknown) => {
        // A write that failed may have been visible for a moment (an SQLite group commit rolled
        // back); a refused condition changed nothing.
        if (!(err instanceof ZestError && err.kind === "precondition_failed")) this.changed(sample);
        return Promise.reject(this.failure(sample, err));
      },
    );
  }

  private write(key: string, sample: Sample, ts: Timestamp, condition: WriteCondition | undefined): WriteResult {
    return sample.kind === "put"
      ? this.backend.put({ key, payload: sample.payload, encoding: sample.encoding, timestamp: ts }, condition)
      : this.backend.delete(key, ts, condition);
  }

  /** The replication status, when replication runs (docs/replication.md, "Health"). */
  replicationStatus(): ReplicationStatus | undefined {
    return this.replicator?.status();
  }

  /** Publishes the change of an applied write; a refused conditional write is an error. */
  private settled(sample: Sample, outcome: Insertion, condition: WriteCondition | undefined): void {
    if (outcome === "inserted") {
      this.replicator?.recorded(sample.key, sample.timestamp!, sample.kind === "delete");
      this.changed(sample);
    } else if (condition) throw preconditionFailed("the key holds a newer version than this write");
  }

  private changed(sample: Sample): void {
    this.session.changes.publish({ key: sample.key, kind: sample.kind });
  }

  private failure(sample: Sample, err: unknown): ZestError {
    if (err instanceof ZestError && err.kind === "precondition_failed") return err;
    this.logger.error({ key: sample.key, err: errorMessage(err) }, "storage write failed");
    return err instanceof ZestError ? err : ZestError.unavailable(`storage ${this.name}: ${errorMessage(err)}`, err);
  }

  /**
   * A put or delete on a wildcard expression updates every existing matching key (each write
   * decided by last-writer-wins like any other); a wildcard delete is also remembered, so that
   * older puts arriving later on matching keys are refused until the tombstone TTL.
   */
  private async applyWild(sample: Sample, ts: Timestamp): Promise<void> {
    if (sample.kind === "delete") this.wildDeletes.push({ key: sample.key, timestamp: ts });
    const entries = await this.backend.query(sample.key);
    for (const e of entries) {
      if (e.timestamp.compare(ts) >= 0) continue;
      if ((await this.write(e.key, sample, ts, undefined)) === "inserted") {
        this.replicator?.recorded(e.key, ts, sample.kind === "delete");
        this.session.changes.publish({ key: e.key, kind: sample.kind });
      }
    }
  }

  private deletedByWildcard(key: string, ts: Timestamp): boolean {
    for (const d of this.wildDeletes) if (d.timestamp.compare(ts) > 0 && intersects(d.key, key)) return true;
    return false;
  }

  private async answer(query: Query): Promise<void> {
    let range: TimeRange | undefined;
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
      const inRange =
        range && this.backend.capability.history === "latest"
          ? (e: StoredEntry) => inTimeRange(range, e.timestamp.unixNanos)
          : undefined;
      const slice = new Slice(); // a large answer gives other requests their turn
      for (const e of entries) {
        if (inRange && !inRange(e)) continue;
        query.replySample({
          key: e.key,
          kind: "put",
          payload: e.payload,
          encoding: e.encoding,
          timestamp: e.timestamp,
        });
        if (slice.due()) await slice.next();
      }
      // Alone and known to be behind: the answer may miss acknowledged writes, and says so.
      const stale = this.replicator?.staleNotice();
      if (stale !== undefined) query.replyError(ZestError.unavailable(stale));
    } catch (err) {
      this.logger.warn({ key: query.key, err: errorMessage(err) }, "storage query failed");
      query.replyError(
        err instanceof ZestError ? err : ZestError.unavailable(`storage ${this.name}: ${errorMessage(err)}`, err),
      );
    }
  }

  /** Fills a new storage from the storages that already hold keys under its expression. */
  private async align(timeoutMs: number): Promise<void> {
    try {
      const replies = await this.session.get(this.keyExpr, { timeoutMs, consolidation: "latest" });
      for (const r of replies) {
        // Only stored data carries a timestamp; computed replies (evals, admin) are not copied.
        if (r.kind !== "ok" || !r.sample.timestamp || !includes(this.keyExpr, r.sample.key)) continue;
        await this.apply(r.sample);
      }
    } catch (err) {
      this.logger.warn({ err: errorMessage(err) }, "alignment failed; starting with local data only");
    }
  }

  private async purge(): Promise<void> {
    // With replication, tombstones live as long as the replicas need them (the retention).
    const retentionNs = this.replicator ? BigInt(this.replication!.tombstoneRetentionMs) * 1_000_000n : 0n;
    this.replicator?.purge();
    const ttl = retentionNs > TOMBSTONE_TTL_NS ? retentionNs : TOMBSTONE_TTL_NS;
    const before = unixNanosToNtp64(nowUnixNanos() - ttl);
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
    this.subscriber = this.session.declareSubscriber(this.keyExpr, () => Promise.reject(this.error()), {
      storage: true,
    });
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
