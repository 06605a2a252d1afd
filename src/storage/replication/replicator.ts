/**
 * Anti-entropy between replicas of one storage on different routers (docs/replication.md).
 *
 * A replica is a storage with replication on; its replicas are the storages on other routers with
 * the same key expression. Each replica keeps a `ReplicationLog` and talks to the others through
 * the session, on keys of its own under `@repl/<hash of the key expression>/`:
 * - a queryable `align/<zid>/<storage>` answers the five alignment messages (`answerer.ts`);
 * - a liveliness token `live/<zid>/<storage>` tells the others it is there, and a liveliness
 *   subscriber on `live/**` tells it when another appears (again).
 *
 * An exchange sends this replica's digest to every other as a query; each answers with its own,
 * and both sides then pull what they lack from the other (`aligner.ts`, one worker per other
 * replica). A repair is delivered to this router's subscribers like a sample from another router,
 * so the storage decides it by last-writer-wins and subscribers see a normal change. What a
 * replica owes the others, and so whether it is known to be behind, is `debts.ts`.
 *
 * This module holds one replication's membership (who is alive, the fabric connection), the
 * schedule of its exchanges, the exchange itself and its status.
 */
import { createHash } from "node:crypto";
import { errorMessage } from "../../core/errors.js";
import { REPLICATION_ROOT } from "../../core/internal-keys.js";
import type { Logger } from "../../core/log.js";
import type { Reply } from "../../core/reply.js";
import type { LivelinessToken, Queryable, Subscriber } from "../../core/session.js";
import type { Timestamp } from "../../core/timestamp.js";
import { includes, isWild } from "../../keyexpr/index.js";
import type { StorageBackend } from "../backend.js";
import { Aligner } from "./aligner.js";
import { Answerer } from "./answerer.js";
import type { ReplicationSettings } from "./config.js";
import { Debts } from "./debts.js";
import type { ReplicationLog } from "./log.js";
import { QUERY_TIMEOUT_MS, Replica, type ReplicaHost } from "./replica.js";
import { decodeDigest, encodeDigest } from "./wire.js";

export type { ReplicaHost } from "./replica.js";

/** How often the link to the fabric is looked at (a reconnect starts an exchange). */
const CONNECTION_POLL_MS = 100;

/** The replication part of a storage's admin status (docs/replication.md, "Health"). */
export interface ReplicationStatus {
  readonly peers: string[];
  readonly last_exchange: string | null;
  readonly exchanges: number;
  readonly keys_repaired: number;
  readonly keys_dropped: number;
  readonly behind: boolean;
  readonly behind_reason?: string;
  readonly malformed_dropped: number;
  /** Alignment messages this replica sent and received (queries and replies), and their payload bytes. */
  readonly traffic: { messages_sent: number; bytes_sent: number; messages_received: number; bytes_received: number };
  readonly log: {
    keys: number;
    tombstones: number;
    /** Equal on two replicas that hold the same keys with the same timestamps (deletions included). */
    fingerprint: string;
    tombstones_forgotten_before: string | null;
  };
  /** Replication with narrower storages on other routers (`OverlapReplicas`); absent when none. */
  readonly nested?: ReadonlyArray<OverlapStatus>;
  /** Replication with storages whose key expressions intersect this one's without nesting; absent when none. */
  readonly intersecting?: ReadonlyArray<OverlapStatus>;
  readonly settings: {
    interval: number;
    sub_intervals: number;
    hot: number;
    warm: number;
    propagation_delay: number;
    tombstone_retention: number;
  };
}

/**
 * The replication with one storage on other routers whose key expression overlaps this one's
 * (docs/replication.md, "Overlapping storages").
 */
export interface OverlapStatus extends Omit<ReplicationStatus, "settings" | "nested" | "intersecting"> {
  /**
   * The other storage's key expression. Nested: the keys both cover are exactly these;
   * intersecting: the keys both cover are those that match it and this storage's.
   */
  readonly key_expr: string;
}

/** What a storage's start-up exchange achieved by its deadline (`Replicator.start`). */
export interface StartAlignment {
  /** Replicas that answered the start-up exchange. */
  readonly answered: number;
  /**
   * Replicas the storage is not aligned with: their alignment failed or could not compare
   * (other settings), or it had not finished by the deadline (the replica is then owed, and the
   * alignment goes on).
   */
  readonly unaligned: number;
}

/** The key space of one key expression's replicas: `@repl/<16 hex digits of its SHA-256>`. */
export function replicaSpace(keyExpr: string): string {
  return `${REPLICATION_ROOT}/${createHash("sha256").update(keyExpr).digest("hex").slice(0, 16)}`;
}

/**
 * The key space where storages on two intersecting key expressions meet (neither includes the
 * other): `@repl/pair/<16 hex digits of the SHA-256 of the JSON array of the two, sorted>`. Both
 * sides derive it alike from the pair; the `pair` chunk keeps it apart from every `replicaSpace`.
 */
export function pairSpace(a: string, b: string): string {
  const pair = JSON.stringify(a < b ? [a, b] : [b, a]);
  return `${REPLICATION_ROOT}/pair/${createHash("sha256").update(pair).digest("hex").slice(0, 16)}`;
}

/** One storage's replication (see the module comment). */
export class Replicator {
  readonly log: ReplicationLog;
  /**
   * The key expression replicated: the storage's, or an overlapping storage's (`OverlapReplicas`).
   * A write the storage applied is in the log when it matches it.
   */
  readonly keyExpr: string;
  private readonly replica: Replica;
  private readonly debts: Debts;
  private readonly aligner: Aligner;
  private readonly answerer: Answerer;
  private queryable: Queryable | undefined;
  private token: LivelinessToken | undefined;
  private watcher: Subscriber | undefined;
  private timer: NodeJS.Timeout | undefined;
  private poll: NodeJS.Timeout | undefined;
  private wasConnected = true;
  private exchanging: Promise<number> | undefined;
  private again = false;
  private lastExchange: number | undefined;
  private exchanges = 0;

  constructor(options: {
    storage: string;
    keyExpr: string;
    /** The storage's key expression when `keyExpr` only intersects it (see `Replica.within`). */
    within?: string;
    /** Where the replicas meet: by default `replicaSpace(keyExpr)`. */
    space?: string;
    settings: ReplicationSettings;
    host: ReplicaHost;
    backend: StorageBackend;
    logger: Logger;
    now?: () => number;
  }) {
    this.keyExpr = options.keyExpr;
    this.replica = new Replica(
      options.storage,
      options.keyExpr,
      options.within,
      options.space ?? replicaSpace(options.keyExpr),
      options.settings,
      options.host,
      options.backend,
      options.logger,
      options.now ?? Date.now,
    );
    this.log = this.replica.log;
    this.debts = new Debts(options.logger);
    this.aligner = new Aligner(this.replica, this.debts);
    this.answerer = new Answerer(this.replica, this.aligner, this.debts);
  }

  /**
   * Fills the log from the storage, joins the replicas and runs a first exchange, which compares
   * every sub-interval, the youngest included: the storage takes every write the replicas hold
   * before it answers (docs/replication.md, "Start-up alignment"). Resolves once it is aligned
   * with every replica that answered, or at `deadline` (Unix ms), whichever comes first; the
   * replicas not aligned with by then are owed, and their alignment goes on.
   */
  async start(deadline = Number.POSITIVE_INFINITY): Promise<StartAlignment> {
    const { replica, debts } = this;
    const within = replica.within;
    for (const e of await replica.backend.query(this.keyExpr))
      if (within === undefined || includes(within, e.key)) this.log.record(e.key, e.timestamp, false);
    // Closed while the storage was read (an overlap's replicator started late): declare nothing.
    if (replica.closed) return { answered: 0, unaligned: 0 };
    const session = replica.host.session;
    this.queryable = session.declareQueryable(replica.address, (q) => this.answerer.answer(q));
    this.token = session.declareLivelinessToken(`${replica.space}/live/${session.zid}/${replica.storage}`);
    const live = `${replica.space}/live/`;
    const mine = `${live}${session.zid}/`;
    this.watcher = session.declareLivelinessSubscriber(
      `${live}**`,
      (s) => {
        if (s.key.startsWith(mine)) return;
        const id = s.key.slice(live.length);
        if (s.kind === "put") {
          debts.appeared(id);
          // Another replica appeared, or came back after being forgotten: it may have missed writes.
          this.soon();
        } else debts.vanished(id, replica.host.connected());
      },
      { history: true },
    );
    this.wasConnected = replica.host.connected();
    this.poll = setInterval(() => this.watchConnection(), CONNECTION_POLL_MS);
    this.poll.unref();
    const since = debts.current;
    const answered = new Set<string>();
    // The first exchange of this replicator: no other is running to share it with.
    const finished = await settlesBy(this.exchange({ recent: true, answered }), deadline);
    this.schedule();
    // By the deadline, the replicas alive but silent so far are as unaligned as those aligning.
    const waited = finished ? answered : new Set([...answered, ...debts.alive]);
    let unaligned = 0;
    for (const id of waited) {
      if (this.aligner.alignedAtStart.has(id)) continue;
      unaligned++;
      // A debt the start-up alignment settles when it completes (its digest came after `since`).
      if (!finished) debts.lateAtStart(id, since);
    }
    return { answered: answered.size, unaligned };
  }

  /** Stops exchanging; pending repairs finish or fail quietly. */
  async close(): Promise<void> {
    this.replica.closed = true;
    if (this.timer) clearTimeout(this.timer);
    if (this.poll) clearInterval(this.poll);
    this.queryable?.undeclare();
    this.token?.undeclare();
    this.watcher?.undeclare();
    await this.aligner.idle();
  }

  /** The storage applied a write: the log follows it (the cost of replication on the write path). */
  recorded(key: string, timestamp: Timestamp, deleted: boolean): void {
    this.log.record(key, timestamp, deleted);
  }

  /** Forgets tombstones older than the retention; returns the bound (Unix ms). */
  purge(): number {
    const before = this.replica.now() - this.replica.settings.tombstoneRetentionMs;
    this.log.purgeTombstones(before);
    return before;
  }

  /** Ids of the other replicas alive now (`<zid>/<storage>`). */
  peers(): string[] {
    const { space, host } = this.replica;
    const prefix = `${space}/live/`;
    const mine = `${prefix}${host.session.zid}/`;
    return host.session
      .livelinessGet(`${space}/live/**`)
      .map((s) => s.key)
      .filter((k) => !k.startsWith(mine))
      .map((k) => k.slice(prefix.length))
      .sort();
  }

  /**
   * Why an answer of this storage alone may miss acknowledged writes: it is known to be behind
   * and no other replica can complete the answer (none is alive, or this router is cut off).
   * Undefined otherwise.
   */
  staleNotice(): string | undefined {
    // Alone and owing nothing: nothing to say (the common case of a router without replicas).
    if (this.debts.none) return undefined;
    this.watchConnection(); // a cut the 100 ms poll has not seen yet counts already
    const reason = this.debts.reason;
    if (reason === undefined || (this.replica.host.connected() && this.peers().length > 0)) return undefined;
    const last = this.lastExchange === undefined ? "never" : new Date(this.lastExchange).toISOString();
    return `storage ${this.replica.storage} on router ${this.replica.host.session.zid} may be behind its replicas (${reason}; last exchange: ${last})`;
  }

  status(): ReplicationStatus {
    const s = this.replica.settings;
    const purged = this.log.purgedBeforeMs;
    this.watchConnection();
    const reason = this.debts.reason;
    return {
      peers: this.peers(),
      last_exchange: this.lastExchange === undefined ? null : new Date(this.lastExchange).toISOString(),
      exchanges: this.exchanges,
      keys_repaired: this.aligner.repaired,
      keys_dropped: this.aligner.dropped,
      behind: reason !== undefined,
      ...(reason === undefined ? {} : { behind_reason: reason }),
      malformed_dropped: this.replica.malformed,
      traffic: { ...this.replica.traffic },
      log: {
        keys: this.log.size,
        tombstones: this.log.tombstoneCount,
        fingerprint: this.log.fingerprint,
        tombstones_forgotten_before: purged === 0 ? null : new Date(purged).toISOString(),
      },
      settings: {
        interval: s.intervalMs / 1000,
        sub_intervals: s.subIntervals,
        hot: s.hot,
        warm: s.warm,
        propagation_delay: s.propagationDelayMs,
        tombstone_retention: s.tombstoneRetentionMs / 1000,
      },
    };
  }

  /**
   * Sends this replica's digest to every other replica and aligns with each answer (they align
   * with ours meanwhile). Concurrent calls share one exchange, and one more runs after it.
   * Resolves with the number of replicas that answered. `options` hold for an exchange this call
   * starts: `recent` compares the sub-intervals younger than the propagation delay too (the
   * start-up exchange), and `answered` receives the ids of the replicas that answered.
   */
  exchange(options: { recent?: boolean; answered?: Set<string> } = {}): Promise<number> {
    if (this.exchanging) {
      this.again = true;
      return this.exchanging;
    }
    const run = this.exchangeOnce(options.recent === true, options.answered).finally(() => {
      this.exchanging = undefined;
      if (this.again && !this.replica.closed) {
        this.again = false;
        void this.exchange();
      }
    });
    this.exchanging = run;
    return run;
  }

  private async exchangeOnce(recent: boolean, answeredBy: Set<string> | undefined): Promise<number> {
    const { replica } = this;
    // Cut off: the replicas alive at the cut are owed already (`watchConnection`).
    if (replica.closed || !replica.host.connected()) return 0;
    const payload = encodeDigest({
      zid: replica.host.session.zid,
      storage: replica.storage,
      digest: this.log.digest(replica.now()),
    });
    replica.sent(payload);
    let replies: Reply[];
    try {
      replies = await replica.host.session.get(`${replica.space}/align/**`, {
        payload,
        consolidation: "none",
        timeoutMs: QUERY_TIMEOUT_MS,
        allowedDestination: "remote",
      });
    } catch (err) {
      // No evidence that a replica holds writes we lack: the next exchange tries again.
      replica.logger.debug({ err: errorMessage(err) }, "replica exchange failed");
      return 0;
    }
    for (const r of replies) if (r.kind === "ok") replica.received(r.sample.payload);
    let answered = 0;
    const pulls: Promise<void>[] = [];
    for (const r of replies) {
      if (r.kind !== "ok") {
        // A replica that did not answer (dying, or slow) is no evidence either: a replica that
        // vanishes while we stay connected missed nothing of ours, nor we of its acknowledged
        // writes (docs/replication.md, "Known to be behind").
        replica.logger.debug({ err: r.payload.toString("utf8").slice(0, 200) }, "a replica did not answer an exchange");
        continue;
      }
      const peer = this.peerOf(r.sample.key);
      if (peer === undefined || peer === replica.address) continue;
      try {
        const m = decodeDigest(r.sample.payload);
        answered++;
        answeredBy?.add(replica.idOf(peer));
        pulls.push(this.aligner.enqueue(peer, m.digest, this.debts.draw(), recent));
      } catch (err) {
        replica.dropMalformed(peer, err);
      }
    }
    await Promise.all(pulls);
    this.exchanges++;
    this.lastExchange = replica.now();
    return answered;
  }

  /** The address of the replica that sent a reply, when it is one of ours (`@repl/<h>/align/<zid>/<name>`). */
  private peerOf(key: string): string | undefined {
    const prefix = `${this.replica.space}/align/`;
    if (!key.startsWith(prefix) || isWild(key)) return undefined;
    const rest = key.slice(prefix.length).split("/");
    if (rest.length !== 2 || !/^(?:[0-9A-F]{2}){1,16}$/.test(rest[0]!)) return undefined;
    return key;
  }

  /** An exchange on the next turn (a replica appeared). */
  private soon(): void {
    if (this.replica.closed) return;
    setImmediate(() => void this.exchange());
  }

  /** The next periodic exchange: an interval from now (±10 %), or sooner while behind (`Debts.nextExchangeIn`). */
  private schedule(): void {
    if (this.replica.closed) return;
    if (this.timer) clearTimeout(this.timer);
    const delay = this.debts.nextExchangeIn(
      this.replica.settings.intervalMs,
      this.replica.host.connected(),
      Math.random(),
    );
    this.timer = setTimeout(() => {
      void this.exchange().finally(() => this.schedule());
    }, delay);
    this.timer.unref();
  }

  private watchConnection(): void {
    const connected = this.replica.host.connected();
    if (connected === this.wasConnected) return;
    this.wasConnected = connected;
    if (!connected) {
      // Cut off: the replicas alive now may take writes we will not hear of until the heal.
      this.debts.cut();
      return;
    }
    this.replica.logger.info("reconnected to the fabric: exchanging with the replicas");
    void this.exchange().finally(() => this.schedule());
  }
}

/** True once `work` settles, false if `deadline` (Unix ms) comes first. */
async function settlesBy(work: Promise<unknown>, deadline: number): Promise<boolean> {
  const done = work.then(
    () => true,
    () => true,
  );
  if (deadline === Number.POSITIVE_INFINITY) return done;
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<boolean>((resolve) => {
    timer = setTimeout(() => resolve(false), Math.max(0, deadline - Date.now()));
  });
  try {
    return await Promise.race([done, late]);
  } finally {
    clearTimeout(timer);
  }
}
