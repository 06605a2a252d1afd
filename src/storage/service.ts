import { includes, intersects, isWild } from "../keyexpr/index.js";
import { newestTimestamp } from "../core/conditional-write.js";
import { errorMessage, ZestError } from "../core/errors.js";
import type { Logger } from "../core/log.js";
import type { Query } from "../core/query.js";
import type { Sample, WriteCondition } from "../core/sample.js";
import type { Queryable, Session, Subscriber } from "../core/session.js";
import { unixNanosToNtp64, nowUnixNanos, type Timestamp } from "../core/timestamp.js";
import {
  checkCondition,
  preconditionFailed,
  type ExpirySchedule,
  type Insertion,
  type StorageBackend,
  type StoredEntry,
  type StoredSample,
  type WriteResult,
} from "./backend.js";
import { deadlineOf, expiryTimestamp } from "../core/lifetime.js";
import { ExpiryHeap } from "../core/expiry-heap.js";
import { inTimeRange, type TimeRange } from "../core/time-range.js";
import { Slice } from "../core/slices.js";
import type { ReplicationSettings } from "./replication/config.js";
import { type ReplicationStatus, Replicator } from "./replication/replicator.js";
import { OverlapReplicas } from "./replication/overlaps.js";

/** How long a storage's start-up alignment may take before it answers with what it holds. */
const ALIGN_TIMEOUT_MS = 5_000;
/** How long a tombstone (or a wildcard delete) is remembered to reject late, older puts. */
const TOMBSTONE_TTL_NS = 60_000_000_000n;
const PURGE_EVERY_MS = 30_000;

/**
 * A running storage: a subscriber and a complete queryable on its key expression, over one
 * backend. The backend decides last-writer-wins and write conditions per key (the storage
 * contract, docs/storage-contract.md); the service adds what spans keys: wildcard writes, the
 * memory of recent wildcard deletes, tombstone expiry, and change events.
 */
/** A storage service's settings besides its backend (from the storage's config). */
export interface StorageServiceOptions {
  /** The storage's `ttl` option: the lifetime of values written without their own (ms). */
  readonly defaultTtlMs?: number;
  /** Anti-entropy with the replicas on other routers (docs/replication.md); absent when off. */
  readonly replication?: ReplicationSettings;
  /** The storage's `complete` option: its queryable is declared complete (docs/storages.md). */
  readonly complete?: boolean;
}

/**
 * A storage as the storage manager runs it: the storage itself (`StorageService`), or the
 * stand-in that answers 503 while its backend cannot be opened (`UnavailableStorage`).
 */
export interface RunningStorage {
  readonly name: string;
  readonly keyExpr: string;
  /** Why its backend cannot be opened (the last attempt's error) while it cannot; undefined once it runs. */
  readonly unavailable: string | undefined;
  /** Its backend; undefined for a stand-in. */
  readonly backend: StorageBackend | undefined;
  /** The replication part of its admin status; undefined when replication does not run. */
  replicationStatus(): ReplicationStatus | undefined;
  /** Undeclares and stops; `dispose` applies the storage's disposal policy (a stand-in has none to apply). */
  stop(dispose: boolean): Promise<void>;
}

/** The error writes and queries get from storage `name` while its backend cannot be opened. */
export function unavailableError(name: string, reason: string): ZestError {
  return ZestError.unavailable(`storage ${name} is unavailable: ${reason}`);
}

export class StorageService implements RunningStorage {
  readonly name: string;
  readonly keyExpr: string;
  readonly backend: StorageBackend;
  /** It runs: never unavailable. */
  readonly unavailable = undefined;
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
   * Replication with the storages on other routers whose key expressions nest in or intersect
   * this one's (docs/replication.md, "Overlapping storages").
   */
  private overlaps: OverlapReplicas | undefined;

  /**
   * `replication`: the storage's replication settings, or undefined when off. It only runs when
   * the router is part of a fabric and the backend is not shared by the routers already.
   */
  /** The storage's `ttl` option: the lifetime of values written without their own (ms). */
  readonly defaultTtlMs: number | undefined;
  /** The storage's `complete` option. */
  private readonly complete: boolean;
  /** Deadlines of a backend that does not schedule its own (`StorageBackend.expiry`). */
  private readonly keyed: KeyedExpiry | undefined;
  private readonly expiry: ExpirySchedule;
  private expiryTimer: NodeJS.Timeout | undefined;
  /** When the expiry timer fires (Unix ms). */
  private expiryAt = Number.POSITIVE_INFINITY;
  private stopped = false;
  /**
   * True when conditional writes may need a claim across routers (docs/conditional-writes.md,
   * "Across routers"): the router is in a fabric and the backend is its own (a shared one, the
   * jetstream volume, arbitrates them itself). A router alone never pays for it.
   */
  private readonly claiming: boolean;

  constructor(
    name: string,
    keyExpr: string,
    backend: StorageBackend,
    session: Session,
    logger: Logger,
    options: StorageServiceOptions = {},
  ) {
    this.name = name;
    this.keyExpr = keyExpr;
    this.backend = backend;
    this.session = session;
    this.logger = logger.child({ storage: name });
    this.replication =
      session.interest.clustered && backend.capability.shared !== true ? options.replication : undefined;
    this.defaultTtlMs = options.defaultTtlMs;
    this.complete = options.complete === true;
    this.keyed = backend.expiry === undefined ? new KeyedExpiry() : undefined;
    this.expiry = backend.expiry ?? this.keyed!;
    this.claiming = session.interest.clustered && backend.capability.shared !== true;
  }

  /**
   * Starts the storage: subscribes first (so no write is missed), aligns from the storages that
   * already cover its key expression, then answers queries. The alignment takes at most
   * `alignTimeoutMs` (5 s by default); a replica not aligned with by then is owed, and its
   * alignment goes on while the storage answers (docs/replication.md, "Start-up alignment").
   */
  async start(options: { align?: boolean; alignTimeoutMs?: number } = {}): Promise<void> {
    this.subscriber = this.session.declareSubscriber(this.keyExpr, (s, c) => this.apply(s, c), {
      storage: true,
      store: this.backend.store,
    });
    const deadline = Date.now() + (options.alignTimeoutMs ?? ALIGN_TIMEOUT_MS);
    // With replication, the start-up alignment is an exchange with the replicas and the
    // overlapping storages. The one-time query still reads the storages on this key expression
    // when no replica answered, or one could not be aligned with (its alignment failed, or it
    // compares differently): storages that only intersect this one, replicas with replication off.
    let aligned = false;
    if (this.replication) {
      const router = this.session.router;
      const common = {
        storage: this.name,
        settings: this.replication,
        backend: this.backend,
        logger: this.logger,
        host: {
          session: this.session,
          connected: () => router.fabric?.isConnected() ?? false,
          deliver: (sample: Sample) => router.deliverLocal(sample),
        },
      };
      this.replicator = new Replicator({ ...common, keyExpr: this.keyExpr });
      this.overlaps = new OverlapReplicas({ ...common, keyExpr: this.keyExpr });
      const [main, overlapsUnaligned] = await Promise.all([
        this.replicator.start(deadline),
        this.overlaps.start(deadline),
      ]);
      aligned = main.answered > 0 && main.unaligned === 0 && overlapsUnaligned === 0;
    }
    // Within what is left of the deadline: past it, the replicas not aligned with are owed.
    const left = deadline - Date.now();
    if (options.align !== false && !aligned && left > 0) await this.align(left);
    const backend = this.backend;
    // A backend that reads synchronously answers a GET of one key without a query
    // (`Router.readStored`); one that scans in key order lets a wide GET answered by this storage
    // alone be written out batch by batch (`Router.scanStored`). Both hand out put samples as is.
    const peek = backend.peek ? livePeek(backend.peek.bind(backend)) : undefined;
    const scan = backend.scan ? liveScan(backend.scan.bind(backend)) : undefined;
    this.queryable = this.session.declareQueryable(this.keyExpr, (q) => this.answer(q), {
      complete: this.complete,
      storage: true,
      peek,
      scan,
    });
    this.purgeTimer = setInterval(() => void this.purge(), PURGE_EVERY_MS);
    this.purgeTimer.unref();
    if (this.keyed !== undefined && backend.capability.persistence === "durable") await this.scheduleHeld();
    this.arm(this.expiry.next());
  }

  /** Schedules the deadlines of what a durable backend held at start (a restart). */
  private async scheduleHeld(): Promise<void> {
    try {
      for (const e of await this.backend.query(this.keyExpr))
        if (e.deadline !== undefined) this.keyed!.set(e.key, e.timestamp, e.deadline);
    } catch (err) {
      this.logger.warn({ err: errorMessage(err) }, "reading the deadlines held failed; expired values stay hidden");
    }
  }

  /** Stops the storage; with `dispose`, the backend applies its disposal policy. */
  async stop(dispose: boolean): Promise<void> {
    // Withdrawn in this turn: a query made right after `stop` no longer reaches this storage.
    this.subscriber?.undeclare();
    this.queryable?.undeclare();
    await this.replicator?.close();
    await this.overlaps?.close();
    if (this.purgeTimer) clearInterval(this.purgeTimer);
    this.stopped = true;
    if (this.expiryTimer) clearTimeout(this.expiryTimer);
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
    const store = this.backend.store;
    if (store !== undefined && sample.heldIn?.includes(store) === true && condition === undefined)
      return this.storedElsewhere(sample, ts);
    if (condition !== undefined && this.claiming && this.heldElsewhere(sample.key))
      return this.applyClaimed(sample, ts, condition);
    return this.applyNow(sample, ts, condition);
  }

  /**
   * A sample another router's storage of this shared store wrote (and acknowledged) before it
   * answered: the store holds it, so nothing is written here (docs/conditional-writes.md,
   * "Shared stores"). What this storage keeps beside the store still follows it: the backend's
   * memory of the key, the value's deadline (each router holding it deletes it when due, and
   * the store keeps the first delete), and the change event.
   */
  private storedElsewhere(sample: Sample, ts: Timestamp): undefined {
    this.backend.stored?.(sample.key);
    const deadline =
      sample.deadline ?? (this.defaultTtlMs === undefined ? undefined : deadlineOf(ts, this.defaultTtlMs));
    if (deadline !== undefined && sample.kind === "put") {
      this.keyed?.set(sample.key, ts, deadline);
      this.arm(deadline);
    }
    this.changed(sample);
    return undefined;
  }

  /**
   * True when a storage on another router may hold `key` (another router declared a queryable on
   * it): a conditional write there could accept the same version, so one here must be claimed.
   */
  private heldElsewhere(key: string): boolean {
    return (this.session.router.fabric?.interest?.(key, "queryable").length ?? 0) > 0;
  }

  /**
   * A conditional write on a key other routers hold too: decided here, then claimed across the
   * cluster (only one write may replace a version), then applied as any conditional write, and
   * routed on to the other routers as an ordinary sample (docs/conditional-writes.md).
   */
  private async applyClaimed(sample: Sample, ts: Timestamp, condition: WriteCondition): Promise<void> {
    const claims = this.session.router.fabric?.versionClaims;
    if (claims === undefined)
      throw ZestError.conflict(
        `a conditional write on ${sample.key} needs JetStream on the NATS cluster: storages on other routers hold the key`,
      );
    if (this.deletedByWildcard(sample.key, ts))
      throw preconditionFailed("the key holds a newer version than this write");
    let held: Awaited<ReturnType<StorageBackend["lookup"]>>;
    try {
      held = await this.backend.lookup(sample.key);
    } catch (err) {
      throw this.failure(sample, err);
    }
    let replaced = held?.version;
    let applied: WriteCondition = condition;
    try {
      checkCondition(held, condition);
    } catch (err) {
      // A version newer than the one held here may be a write still on its way to this router:
      // a read through any router sees it once one storage has it. When it is the newest the
      // routers answer, it is the key's version, and the write replaces it.
      if (!(await this.newestElsewhere(sample.key, held, condition))) throw err;
      replaced = condition.ifVersion;
      // Last-writer-wins over whatever arrives here meanwhile; refused only by a newer write.
      applied = LAST_WRITER_WINS;
    }
    // The write must order after what it replaces, or the other routers' storages keep the old value.
    if (replaced !== undefined && replaced >= ts.encode())
      throw preconditionFailed("the key holds a newer version than this write");
    try {
      await claims.claim(sample.key, replaced, ts.encode());
    } catch (err) {
      if (!(err instanceof ZestError && err.kind === "precondition_failed")) throw err;
      // Lost: answered once the winner's write shows through every router (it is acknowledged
      // only once all of them stored it), so no read shows the replaced version after this 412.
      if (await this.movedPast(sample.key, replaced, condition)) throw err;
      throw ZestError.unavailable(
        `a write through another router claimed the version of ${sample.key} first, and has not arrived here: whether it applies is not known yet`,
      );
    }
    // Won: checked again by the storage with the write, against any change made here meanwhile.
    await this.applyNow(sample, ts, applied);
  }

  /**
   * Waits (at most `CLAIM_WAIT_MS`) until no read through any router can show what `replaced`
   * (undefined: nothing) left: the routers' newest reply for `key` is newer, or, for a write on a
   * version (`ifVersion`), there is none (the winner deleted it). False if that did not happen.
   */
  private async movedPast(key: string, replaced: string | undefined, condition: WriteCondition): Promise<boolean> {
    const deadline = Date.now() + CLAIM_WAIT_MS;
    for (;;) {
      try {
        const newest = newestTimestamp(key, await this.session.get(key))?.encode();
        if (newest === undefined ? condition.ifVersion !== undefined : replaced === undefined || newest > replaced)
          return true;
      } catch {
        // Cannot read now: try again until the deadline.
      }
      if (Date.now() >= deadline || this.stopped) return false;
      await new Promise((r) => setTimeout(r, CLAIM_POLL_MS));
    }
  }

  /**
   * True when `condition` names a version newer than `held` (this storage is behind) and the
   * newest reply of the routers for `key` has exactly that version.
   */
  private async newestElsewhere(
    key: string,
    held: { timestamp: Timestamp } | undefined,
    condition: WriteCondition,
  ): Promise<boolean> {
    const wanted = condition.ifVersion;
    if (wanted === undefined || (held !== undefined && wanted <= held.timestamp.encode())) return false;
    try {
      return newestTimestamp(key, await this.session.get(key))?.encode() === wanted;
    } catch {
      return false;
    }
  }

  private applyNow(sample: Sample, ts: Timestamp, condition: WriteCondition | undefined): Promise<void> | undefined {
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
    if (sample.kind === "delete") return this.backend.delete(key, ts, condition);
    const deadline =
      sample.deadline ?? (this.defaultTtlMs === undefined ? undefined : deadlineOf(ts, this.defaultTtlMs));
    if (deadline === undefined)
      return this.backend.put({ key, payload: sample.payload, encoding: sample.encoding, timestamp: ts }, condition);
    const result = this.backend.put(
      { key, payload: sample.payload, encoding: sample.encoding, timestamp: ts, deadline },
      condition,
    );
    // Scheduled before the outcome is known: the expiry checks what the key holds when it is due.
    this.keyed?.set(key, ts, deadline);
    this.arm(deadline);
    return result;
  }

  /** Makes the expiry timer fire by `deadline` (Unix ms) at the latest. */
  private arm(deadline: number | undefined): void {
    if (deadline === undefined || deadline >= this.expiryAt || this.stopped) return;
    if (this.expiryTimer) clearTimeout(this.expiryTimer);
    this.expiryAt = deadline;
    // Node's timers take at most 2^31-1 ms (24.8 days): a longer delay would fire at once, and
    // again each millisecond; a far deadline is re-armed when this timer fires.
    this.expiryTimer = setTimeout(() => this.expire(), Math.min(MAX_TIMER_MS, Math.max(0, deadline - Date.now())));
    this.expiryTimer.unref();
  }

  /**
   * Deletes the values whose deadline passed: each expiry is a delete stamped one tick after the
   * expired write (`expiryTimestamp`), routed like any delete, so subscribers, SSE streams and
   * other routers see it and every router holding the value makes the same one. At most
   * `EXPIRE_BATCH` per turn; the rest in the next.
   */
  private expire(): void {
    this.expiryTimer = undefined;
    this.expiryAt = Number.POSITIVE_INFINITY;
    if (this.stopped) return;
    const now = Date.now();
    const n = this.expiry.takeDue(now, EXPIRE_BATCH, (key, ts) => {
      if (this.keyed === undefined) this.expireKey(key, ts);
      else void this.expireIfHeld(key, ts);
    });
    if (n >= EXPIRE_BATCH) {
      this.expiryAt = now;
      this.expiryTimer = setTimeout(() => this.expire(), 0);
      this.expiryTimer.unref();
    } else this.arm(this.expiry.next());
  }

  /** A backend without its own schedule: expires the key if it still holds the write `ts`. */
  private async expireIfHeld(key: string, ts: Timestamp): Promise<void> {
    try {
      const held = await this.backend.lookup(key);
      if (held === undefined || held.deleted || held.timestamp.compare(ts) !== 0) return;
    } catch (err) {
      this.logger.warn({ key, err: errorMessage(err) }, "expiry: reading the key failed");
      return;
    }
    this.expireKey(key, ts);
  }

  private expireKey(key: string, ts: Timestamp): void {
    this.session.delete(key, { timestamp: expiryTimestamp(ts) }).catch((err: unknown) => {
      this.logger.warn({ key, err: errorMessage(err) }, "expiry delete failed");
    });
  }

  /** The replication status, when replication runs (docs/replication.md, "Health"). */
  replicationStatus(): ReplicationStatus | undefined {
    const status = this.replicator?.status();
    if (status === undefined || this.overlaps === undefined) return status;
    const { nested, intersecting } = this.overlaps.statuses();
    return {
      ...status,
      ...(nested.length === 0 ? {} : { nested }),
      ...(intersecting.length === 0 ? {} : { intersecting }),
    };
  }

  /** Publishes the change of an applied write; a refused conditional write is an error. */
  private settled(sample: Sample, outcome: Insertion, condition: WriteCondition | undefined): void {
    if (outcome === "inserted") {
      this.replicator?.recorded(sample.key, sample.timestamp!, sample.kind === "delete");
      this.overlaps?.recorded(sample.key, sample.timestamp!, sample.kind === "delete");
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
        this.overlaps?.recorded(e.key, ts, sample.kind === "delete");
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
      const now = Date.now();
      for (const e of entries) {
        if (inRange && !inRange(e)) continue;
        // No read returns an expired value, whether its delete has run yet or not.
        const deadline = e.deadline;
        if (deadline !== undefined && deadline <= now) continue;
        query.replySample(
          deadline === undefined
            ? { key: e.key, kind: "put", payload: e.payload, encoding: e.encoding, timestamp: e.timestamp }
            : { key: e.key, kind: "put", payload: e.payload, encoding: e.encoding, timestamp: e.timestamp, deadline },
        );
        if (slice.due()) await slice.next();
      }
      // Alone and known to be behind: the answer may miss acknowledged writes, and says so.
      const stale = this.replicator?.staleNotice() ?? this.overlaps?.staleNotice(query.key);
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
    this.overlaps?.purge();
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

/**
 * The condition of a claimed write whose storage was behind: none to check, but a write that
 * last-writer-wins refuses is still reported (`settled`), as for any conditional write.
 */
const LAST_WRITER_WINS: WriteCondition = Object.freeze({});

/** How long a write that lost its claim waits for the winner's write to arrive (above the fabric's ack timeout). */
const CLAIM_WAIT_MS = 6_000;
const CLAIM_POLL_MS = 10;

/** Longest delay a Node timer takes. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/** Most values expired in one turn of the event loop. */
const EXPIRE_BATCH = 2048;

/** A backend's `peek` that answers null for an expired value. */
function livePeek(peek: (key: string) => StoredSample | null): (key: string) => StoredSample | null {
  return (key) => {
    const e = peek(key);
    return e === null || e.deadline === undefined || e.deadline > Date.now() ? e : null;
  };
}

/** A backend's `scan` without expired values. */
function liveScan(
  scan: (keyExpr: string) => AsyncIterable<readonly StoredSample[]>,
): (keyExpr: string) => AsyncIterable<readonly StoredSample[]> {
  return async function* (keyExpr) {
    for await (const batch of scan(keyExpr)) {
      const now = Date.now();
      let expired = false;
      for (const e of batch) if (e.deadline !== undefined && e.deadline <= now) expired = true;
      yield expired ? batch.filter((e) => e.deadline === undefined || e.deadline > now) : batch;
    }
  };
}

/**
 * The deadlines of a backend that keeps no schedule of its own, by key. What a key holds is
 * checked when its deadline comes (`StorageService.expireIfHeld`), so a key written again is
 * only rescheduled, never unscheduled.
 */
class KeyedExpiry implements ExpirySchedule {
  readonly #ids = new Map<string, number>();
  readonly #keys: Array<string | undefined> = [];
  readonly #stamps: Array<Timestamp | undefined> = [];
  readonly #free: number[] = [];
  readonly #heap = new ExpiryHeap();

  set(key: string, ts: Timestamp, deadline: number): void {
    let id = this.#ids.get(key);
    if (id === undefined) {
      id = this.#free.pop() ?? this.#keys.length;
      this.#ids.set(key, id);
      this.#keys[id] = key;
    }
    this.#stamps[id] = ts;
    this.#heap.set(id, deadline);
  }

  next(): number | undefined {
    return this.#heap.peekDeadline();
  }

  takeDue(now: number, max: number, onDue: (key: string, timestamp: Timestamp) => void): number {
    let n = 0;
    while (n < max && this.#heap.size > 0 && this.#heap.peekDeadline()! <= now) {
      const id = this.#heap.peek();
      const key = this.#keys[id]!;
      const ts = this.#stamps[id]!;
      this.#heap.remove(id);
      this.#ids.delete(key);
      this.#keys[id] = undefined;
      this.#stamps[id] = undefined;
      this.#free.push(id);
      onDue(key, ts);
      n++;
    }
    return n;
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
export class UnavailableStorage implements RunningStorage {
  readonly name: string;
  readonly keyExpr: string;
  /** Why the backend could not be opened (the last attempt's error). */
  reason: string;
  /** A stand-in has no backend. */
  readonly backend = undefined;
  private readonly session: Session;
  private subscriber: Subscriber | undefined;
  private queryable: Queryable | undefined;
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;

  constructor(
    name: string,
    keyExpr: string,
    reason: string,
    session: Session,
    /** The storage's `complete` option, declared as the storage would. */
    private readonly complete = false,
  ) {
    this.name = name;
    this.keyExpr = keyExpr;
    this.reason = reason;
    this.session = session;
  }

  get unavailable(): string {
    return this.reason;
  }

  /** No replication runs without a backend. */
  replicationStatus(): undefined {
    return undefined;
  }

  /** The error writes and queries get. */
  error(): ZestError {
    return unavailableError(this.name, this.reason);
  }

  /** Declares the subscriber and queryable, and schedules `reopen` (true = opened, stop retrying). */
  start(reopen: () => Promise<boolean>, everyMs = REOPEN_EVERY_MS): void {
    this.subscriber = this.session.declareSubscriber(this.keyExpr, () => Promise.reject(this.error()), {
      storage: true,
    });
    this.queryable = this.session.declareQueryable(this.keyExpr, (q) => q.replyError(this.error()), {
      complete: this.complete,
    });
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
