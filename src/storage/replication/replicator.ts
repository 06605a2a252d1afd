/**
 * Anti-entropy between replicas of one storage on different routers (docs/replication.md).
 *
 * A replica is a storage with replication on; its replicas are the storages on other routers with
 * the same key expression. Each replica keeps a `ReplicationLog` and talks to the others through
 * the session, on keys of its own under `@repl/<hash of the key expression>/`:
 * - a queryable `align/<zid>/<storage>` answers the five alignment messages (`wire.ts`);
 * - a liveliness token `live/<zid>/<storage>` tells the others it is there, and a liveliness
 *   subscriber on `live/**` tells it when another appears (again).
 *
 * An exchange sends this replica's digest to every other as a query; each answers with its own,
 * and both sides then pull what they lack from the other: the fingerprints of the differing
 * eras, then the events of the differing sub-intervals, then the values of the keys whose newest
 * event is the other's. A repair is delivered to this router's subscribers like a sample from
 * another router, so the storage decides it by last-writer-wins and subscribers see a normal
 * change.
 */
import { createHash } from "node:crypto";
import { Buffer } from "node:buffer";
import { errorMessage, ZestError } from "../../core/errors.js";
import { REPLICATION_ROOT } from "../../core/internal-keys.js";
import type { Logger } from "../../core/log.js";
import type { Query } from "../../core/query.js";
import type { Reply } from "../../core/reply.js";
import { makeSample, type Sample } from "../../core/sample.js";
import type { LivelinessToken, Queryable, Session, Subscriber } from "../../core/session.js";
import { Timestamp } from "../../core/timestamp.js";
import { includes, isWild, validate } from "../../keyexpr/index.js";
import type { StorageBackend } from "../backend.js";
import type { ReplicationSettings } from "./config.js";
import { type Digest, type Fingerprint, type LogEvent, ReplicationLog, timestampMs } from "./log.js";
import {
  decodeDigest,
  decodeEventsQuery,
  decodeEventsReply,
  decodeIntervalsQuery,
  decodeIntervalsReply,
  decodeSubsQuery,
  decodeSubsReply,
  decodeValuesQuery,
  decodeValuesReply,
  encodeDigest,
  encodeEventsQuery,
  encodeEventsReply,
  encodeIntervalsQuery,
  encodeIntervalsReply,
  encodeSubsQuery,
  encodeSubsReply,
  encodeValuesQuery,
  encodeValuesReply,
  MAX_ITEMS_PER_QUERY,
  MAX_KEYS_PER_VALUES_QUERY,
  Op,
  opOf,
  type ValueItem,
} from "./wire.js";

/** How long one alignment query waits for its answer. */
const QUERY_TIMEOUT_MS = 5_000;
/** How often the link to the fabric is looked at (a reconnect starts an exchange). */
const CONNECTION_POLL_MS = 100;
/** While known to be behind, the next exchange comes this soon rather than after an interval. */
const RETRY_BEHIND_MS = 1_000;
/** At most one warning about malformed messages per this many ms; the rest at debug. */
const WARN_EVERY_MS = 10_000;
/** Repairs delivered together before the next batch (bounds the promises held at once). */
const REPAIR_BATCH = 1_000;
/** Most bytes of keys asked for in one `values` query. */
const VALUES_QUERY_BYTES = 128 * 1024;
/** Sub-intervals whose events one round fetches (newest first; see `alignWith`). */
const SUBS_PER_ROUND = 8;
const ZERO_FP: Fingerprint = { hi: 0, lo: 0 };
/** `values` queries to one replica in flight at once. */
const VALUES_IN_FLIGHT = 4;

/** What a replica needs from its router besides the session. */
export interface ReplicaHost {
  readonly session: Session;
  /** True while this router is connected to the fabric (no fabric: always false). */
  connected(): boolean;
  /** Hands a repair to this router's subscribers (storages included), as a sample from another router. */
  deliver(sample: Sample): Promise<void>;
}

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
  private readonly storage: string;
  /**
   * The key expression replicated: the storage's, or an overlapping storage's (`OverlapReplicas`).
   * A write the storage applied is in the log when it matches it.
   */
  readonly keyExpr: string;
  /**
   * The storage's own key expression, for a replication with an intersecting one: a key is
   * replicated only when it matches both. Undefined when `keyExpr` alone decides (it is the
   * storage's, or nested in it).
   */
  private readonly within: string | undefined;
  private readonly settings: ReplicationSettings;
  private readonly host: ReplicaHost;
  private readonly backend: StorageBackend;
  private readonly logger: Logger;
  private readonly now: () => number;
  private readonly space: string;
  /** Our queryable's key: the address other replicas pull from. */
  private readonly address: string;
  private queryable: Queryable | undefined;
  private token: LivelinessToken | undefined;
  private watcher: Subscriber | undefined;
  private timer: NodeJS.Timeout | undefined;
  private poll: NodeJS.Timeout | undefined;
  private wasConnected = true;
  private closed = false;
  /**
   * Per other replica (its queryable's key): the latest digest of it to align with, and the
   * worker draining them. Each replica has its own worker, so that a slow one holds up no other.
   */
  private readonly queues = new Map<string, PeerQueue>();
  /** The replicas a start-up alignment (every sub-interval compared) completed with (`<zid>/<storage>`). */
  private readonly alignedAtStart = new Set<string>();
  /**
   * Orders digests received and debts incurred: a debt is only settled by an alignment with a
   * digest received after it (a digest from before a cut says nothing of the writes made during it).
   */
  private seq = 0;
  private exchanging: Promise<number> | undefined;
  private again = false;
  private lastExchange: number | undefined;
  private exchanges = 0;
  private repaired = 0;
  private dropped = 0;
  private malformed = 0;
  private malformedSinceWarn = 0;
  private lastWarn = 0;
  /**
   * The replicas known to hold writes this one may lack (`<zid>/<storage>` → why), the rule of
   * docs/replication.md, "Known to be behind": a digest showed a difference not yet repaired, or
   * this router was cut off from the fabric while the replica was alive. A replica that vanished
   * while this router stayed connected is not in it: every write it acknowledged reached us.
   * `forgivable`: only a later digest showed it (not the start-up alignment, not a cut), so the
   * difference is writes the replica never acknowledged, or ones still on their way here; the
   * debt ends if the replica vanishes while this router is connected.
   */
  private readonly owed = new Map<string, { reason: string; since: number; forgivable: boolean }>();
  /** The other replicas alive now, as the liveliness subscriber reports them (`<zid>/<storage>`). */
  private readonly alive = new Set<string>();
  private readonly traffic = { messages_sent: 0, bytes_sent: 0, messages_received: 0, bytes_received: 0 };

  constructor(options: {
    storage: string;
    keyExpr: string;
    /** The storage's key expression when `keyExpr` only intersects it (see `within`). */
    within?: string;
    /** Where the replicas meet: by default `replicaSpace(keyExpr)`. */
    space?: string;
    settings: ReplicationSettings;
    host: ReplicaHost;
    backend: StorageBackend;
    logger: Logger;
    now?: () => number;
  }) {
    this.storage = options.storage;
    this.keyExpr = options.keyExpr;
    this.within = options.within;
    this.settings = options.settings;
    this.host = options.host;
    this.backend = options.backend;
    this.logger = options.logger;
    this.now = options.now ?? Date.now;
    this.log = new ReplicationLog(options.settings);
    this.space = options.space ?? replicaSpace(options.keyExpr);
    this.address = `${this.space}/align/${this.host.session.zid}/${options.storage}`;
  }

  /**
   * Fills the log from the storage, joins the replicas and runs a first exchange, which compares
   * every sub-interval, the youngest included: the storage takes every write the replicas hold
   * before it answers (docs/replication.md, "Start-up alignment"). Resolves once it is aligned
   * with every replica that answered, or at `deadline` (Unix ms), whichever comes first; the
   * replicas not aligned with by then are owed, and their alignment goes on.
   */
  async start(deadline = Number.POSITIVE_INFINITY): Promise<StartAlignment> {
    const within = this.within;
    for (const e of await this.backend.query(this.keyExpr))
      if (within === undefined || includes(within, e.key)) this.log.record(e.key, e.timestamp, false);
    // Closed while the storage was read (an overlap's replicator started late): declare nothing.
    if (this.closed) return { answered: 0, unaligned: 0 };
    const session = this.host.session;
    this.queryable = session.declareQueryable(this.address, (q) => this.answer(q));
    this.token = session.declareLivelinessToken(`${this.space}/live/${session.zid}/${this.storage}`);
    const live = `${this.space}/live/`;
    const mine = `${live}${session.zid}/`;
    this.watcher = session.declareLivelinessSubscriber(
      `${live}**`,
      (s) => {
        if (s.key.startsWith(mine)) return;
        const id = s.key.slice(live.length);
        if (s.kind === "put") {
          this.alive.add(id);
          // Another replica appeared, or came back after being forgotten: it may have missed writes.
          this.soon();
        } else {
          this.alive.delete(id);
          // Gone while we are cut off: its silence is ours, and it may have taken writes meanwhile.
          if (!this.host.connected()) this.owe(id, `cut off from the fabric while ${id} was alive`);
          else if (this.owed.get(id)?.forgivable) this.forgive(id);
        }
      },
      { history: true },
    );
    this.wasConnected = this.host.connected();
    this.poll = setInterval(() => this.watchConnection(), CONNECTION_POLL_MS);
    this.poll.unref();
    const since = this.seq;
    const answered = new Set<string>();
    // The first exchange of this replicator: no other is running to share it with.
    const finished = await settlesBy(this.exchange({ recent: true, answered }), deadline);
    this.schedule();
    // By the deadline, the replicas alive but silent so far are as unaligned as those aligning.
    const waited = finished ? answered : new Set([...answered, ...this.alive]);
    let unaligned = 0;
    for (const id of waited) {
      if (this.alignedAtStart.has(id)) continue;
      unaligned++;
      // A debt the start-up alignment settles when it completes (its digest came after `since`).
      if (!finished && !this.owed.has(id)) this.owe(id, `start-up alignment with ${id} still running`, since + 1);
    }
    return { answered: answered.size, unaligned };
  }

  /** Stops exchanging; pending repairs finish or fail quietly. */
  async close(): Promise<void> {
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    if (this.poll) clearInterval(this.poll);
    this.queryable?.undeclare();
    this.token?.undeclare();
    this.watcher?.undeclare();
    await Promise.all([...this.queues.values()].map((q) => q.running));
  }

  /** The storage applied a write: the log follows it (the cost of replication on the write path). */
  recorded(key: string, timestamp: Timestamp, deleted: boolean): void {
    this.log.record(key, timestamp, deleted);
  }

  /** Forgets tombstones older than the retention; returns the bound (Unix ms). */
  purge(): number {
    const before = this.now() - this.settings.tombstoneRetentionMs;
    this.log.purgeTombstones(before);
    return before;
  }

  /** Ids of the other replicas alive now (`<zid>/<storage>`). */
  peers(): string[] {
    const prefix = `${this.space}/live/`;
    const mine = `${prefix}${this.host.session.zid}/`;
    return this.host.session
      .livelinessGet(`${this.space}/live/**`)
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
    if (this.owed.size === 0 && this.alive.size === 0) return undefined;
    this.watchConnection(); // a cut the 100 ms poll has not seen yet counts already
    const reason = this.behindReason;
    if (reason === undefined || (this.host.connected() && this.peers().length > 0)) return undefined;
    const last = this.lastExchange === undefined ? "never" : new Date(this.lastExchange).toISOString();
    return `storage ${this.storage} on router ${this.host.session.zid} may be behind its replicas (${reason}; last exchange: ${last})`;
  }

  status(): ReplicationStatus {
    const s = this.settings;
    const purged = this.log.purgedBeforeMs;
    this.watchConnection();
    const reason = this.behindReason;
    return {
      peers: this.peers(),
      last_exchange: this.lastExchange === undefined ? null : new Date(this.lastExchange).toISOString(),
      exchanges: this.exchanges,
      keys_repaired: this.repaired,
      keys_dropped: this.dropped,
      behind: reason !== undefined,
      ...(reason === undefined ? {} : { behind_reason: reason }),
      malformed_dropped: this.malformed,
      traffic: { ...this.traffic },
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
      if (this.again && !this.closed) {
        this.again = false;
        void this.exchange();
      }
    });
    this.exchanging = run;
    return run;
  }

  private async exchangeOnce(recent: boolean, answeredBy: Set<string> | undefined): Promise<number> {
    // Cut off: the replicas alive at the cut are owed already (`watchConnection`).
    if (this.closed || !this.host.connected()) return 0;
    const payload = encodeDigest({
      zid: this.host.session.zid,
      storage: this.storage,
      digest: this.log.digest(this.now()),
    });
    this.sent(payload);
    let replies: Reply[];
    try {
      replies = await this.host.session.get(`${this.space}/align/**`, {
        payload,
        consolidation: "none",
        timeoutMs: QUERY_TIMEOUT_MS,
        allowedDestination: "remote",
      });
    } catch (err) {
      // No evidence that a replica holds writes we lack: the next exchange tries again.
      this.logger.debug({ err: errorMessage(err) }, "replica exchange failed");
      return 0;
    }
    for (const r of replies) if (r.kind === "ok") this.received(r.sample.payload);
    let answered = 0;
    const pulls: Promise<void>[] = [];
    for (const r of replies) {
      if (r.kind !== "ok") {
        // A replica that did not answer (dying, or slow) is no evidence either: a replica that
        // vanishes while we stay connected missed nothing of ours, nor we of its acknowledged
        // writes (docs/replication.md, "Known to be behind").
        this.logger.debug({ err: r.payload.toString("utf8").slice(0, 200) }, "a replica did not answer an exchange");
        continue;
      }
      const peer = this.peerOf(r.sample.key);
      if (peer === undefined || peer === this.address) continue;
      try {
        const m = decodeDigest(r.sample.payload);
        answered++;
        answeredBy?.add(this.idOf(peer));
        pulls.push(this.enqueue(peer, m.digest, ++this.seq, recent));
      } catch (err) {
        this.dropMalformed(peer, err);
      }
    }
    await Promise.all(pulls);
    this.exchanges++;
    this.lastExchange = this.now();
    return answered;
  }

  /** The address of the replica that sent a reply, when it is one of ours (`@repl/<h>/align/<zid>/<name>`). */
  private peerOf(key: string): string | undefined {
    const prefix = `${this.space}/align/`;
    if (!key.startsWith(prefix) || isWild(key)) return undefined;
    const rest = key.slice(prefix.length).split("/");
    if (rest.length !== 2 || !/^(?:[0-9A-F]{2}){1,16}$/.test(rest[0]!)) return undefined;
    return key;
  }

  /** Answers another replica's alignment query. */
  private answer(query: Query): Promise<void> | undefined {
    const payload = query.payload;
    if (payload !== undefined) this.received(payload);
    if (payload === undefined) {
      query.replyError(ZestError.badRequest("an alignment query needs a payload"));
      return undefined;
    }
    try {
      switch (opOf(payload)) {
        case Op.digest: {
          const m = decodeDigest(payload);
          this.reply(
            query,
            encodeDigest({ zid: this.host.session.zid, storage: this.storage, digest: this.log.digest(this.now()) }),
          );
          // Their digest is news to us too: pull what they have that we lack.
          // A little later: the asker is most likely repairing from us right now, and what it
          // lacks would only show up here as differences worth nothing.
          if (m.zid !== this.host.session.zid) {
            const asker = `${this.space}/align/${m.zid}/${m.storage}`;
            const seq = ++this.seq; // received now: it says nothing of a cut that comes meanwhile
            setTimeout(() => {
              if (!this.closed) void this.enqueue(asker, m.digest, seq).catch(() => undefined);
            }, this.settings.propagationDelayMs).unref();
          }
          return undefined;
        }
        case Op.intervals: {
          const before = decodeIntervalsQuery(payload);
          for (const b of encodeIntervalsReply(this.log.intervalsBefore(before))) this.reply(query, b);
          return undefined;
        }
        case Op.subs: {
          const subs = decodeSubsQuery(payload).flatMap((i) => this.log.subsOf(i));
          for (const b of encodeSubsReply(subs)) this.reply(query, b);
          return undefined;
        }
        case Op.events: {
          const events = decodeEventsQuery(payload).flatMap((s) => this.log.eventsIn(s.interval, s.sub));
          for (const b of encodeEventsReply(this.log.purgedBeforeMs, events)) this.reply(query, b);
          return undefined;
        }
        case Op.values:
          // Asynchronous: the values come from the storage. The query waits for its promise.
          return this.answerValues(query, decodeValuesQuery(payload));
        default:
          throw new Error(`unknown message type ${opOf(payload)}`);
      }
    } catch (err) {
      this.dropMalformed("a query", err);
      query.replyError(ZestError.badRequest(`malformed alignment query: ${errorMessage(err)}`));
      return undefined;
    }
  }

  private async answerValues(query: Query, keys: readonly string[]): Promise<void> {
    const items: ValueItem[] = [];
    for (const key of keys) {
      if (!this.holds(key)) continue;
      const held = this.log.lookup(key);
      if (held === undefined) continue;
      if (held.deleted) {
        items.push({ key, timestamp: held.timestamp, deleted: true, encoding: "", payload: EMPTY });
        continue;
      }
      try {
        const found = (await this.backend.query(key)).find((e) => e.key === key);
        if (found)
          items.push({
            key,
            timestamp: found.timestamp,
            deleted: false,
            encoding: found.encoding,
            payload: found.payload,
          });
      } catch (err) {
        query.replyError(err);
        return;
      }
    }
    for (const b of encodeValuesReply(items)) this.reply(query, b);
  }

  /** True when `key` is a plain key this replication covers. */
  private holds(key: string): boolean {
    try {
      validate(key);
    } catch {
      return false;
    }
    return !isWild(key) && includes(this.keyExpr, key) && (this.within === undefined || includes(this.within, key));
  }

  /**
   * Queues an alignment with replica `peer`'s digest, received when `seq` was drawn; `recent`
   * compares its youngest sub-intervals too. Resolves once that replica's worker is idle.
   */
  private enqueue(peer: string, digest: Digest, seq = ++this.seq, recent = false): Promise<void> {
    let q = this.queues.get(peer);
    if (q === undefined) {
      q = { next: undefined, running: undefined };
      this.queues.set(peer, q);
    }
    // A newer digest replaces one not taken yet; a start-up alignment stays one.
    q.next = { digest, seq, recent: recent || q.next?.recent === true };
    q.running ??= this.drain(peer, q);
    return q.running;
  }

  /** Aligns with replica `peer`'s digests one after the other, until none is queued. */
  private async drain(peer: string, q: PeerQueue): Promise<void> {
    await Promise.resolve();
    const id = this.idOf(peer);
    try {
      while (q.next !== undefined && !this.closed) {
        const { digest, seq, recent } = q.next;
        q.next = undefined;
        try {
          // Repaired from it: whatever it held that we lacked is ours now.
          if (await this.alignWith(peer, digest, seq, recent)) {
            this.settle(id, seq);
            if (recent) this.alignedAtStart.add(id);
          }
        } catch (err) {
          this.logger.warn({ peer, err: errorMessage(err) }, "replica alignment failed");
          this.owe(id, `repair from ${id} failed: ${errorMessage(err)}`, seq, !recent);
          // Already gone, with us connected: what it held alone it never acknowledged.
          if (!this.alive.has(id) && this.host.connected() && this.owed.get(id)?.forgivable) this.forgive(id);
        }
      }
    } finally {
      q.running = undefined;
      if (q.next === undefined) this.queues.delete(peer);
    }
  }

  /**
   * Pulls from replica `peer` whatever its digest (received when `seq` was drawn) shows we lack;
   * `recent`: its youngest sub-intervals too. Resolves with false when the digest cannot be
   * compared (other settings), true once aligned.
   */
  private async alignWith(peer: string, remote: Digest, seq: number, recent: boolean): Promise<boolean> {
    if (!this.log.comparable(remote)) {
      this.dropMalformed(
        peer,
        new Error("its replication settings (interval, sub_intervals, hot, warm) differ from ours"),
      );
      return false;
    }
    const diff = this.log.compare(remote, this.now(), { recent });
    const intervals = new Set(diff.warmIntervals);
    if (diff.cold) {
      const before = remote.current - remote.hot - remote.warm + 1;
      const theirs = new Map<number, { hi: number; lo: number }>();
      for (const b of await this.ask(peer, encodeIntervalsQuery(before)))
        for (const i of decodeIntervalsReply(b)) theirs.set(i.interval, i.fp);
      for (const [i, fp] of theirs) {
        const mine = this.log.intervalFingerprint(i);
        if (mine.hi !== fp.hi || mine.lo !== fp.lo) intervals.add(i);
      }
      for (const mine of this.log.intervalsBefore(before)) if (!theirs.has(mine.interval)) intervals.add(mine.interval);
    }
    // Each differing sub-interval with the other replica's fingerprint of it (zero: it has none).
    const subs = new Map<string, { interval: number; sub: number; fp: Fingerprint }>();
    const remoteHot = new Map(remote.hotSubs.map((h) => [`${h.interval}/${h.sub}`, h.fp]));
    for (const s of diff.hotSubs) {
      const id = `${s.interval}/${s.sub}`;
      subs.set(id, { ...s, fp: remoteHot.get(id) ?? ZERO_FP });
    }
    const list = [...intervals];
    for (let i = 0; i < list.length; i += MAX_ITEMS_PER_QUERY) {
      const chunk = list.slice(i, i + MAX_ITEMS_PER_QUERY);
      const theirs = new Map<string, Fingerprint>();
      for (const b of await this.ask(peer, encodeSubsQuery(chunk)))
        for (const s of decodeSubsReply(b)) theirs.set(`${s.interval}/${s.sub}`, s.fp);
      for (const interval of chunk) {
        const mine = new Map(this.log.subsOf(interval).map((s) => [`${s.interval}/${s.sub}`, s]));
        for (const [id, fp] of theirs) {
          if (!id.startsWith(`${interval}/`)) continue;
          const m = mine.get(id);
          if (m === undefined || m.fp.hi !== fp.hi || m.fp.lo !== fp.lo)
            subs.set(id, { interval, sub: Number(id.slice(id.indexOf("/") + 1)), fp });
        }
        for (const [id, m] of mine)
          if (!theirs.has(id)) subs.set(id, { interval: m.interval, sub: m.sub, fp: ZERO_FP });
      }
    }
    if (subs.size === 0) return true;
    // Newest first, a few sub-intervals a round. A key written again during a partition leaves
    // its old sub-interval on both sides once the newer event is repaired here: those older
    // sub-intervals then compare equal and are not fetched at all.
    const order = [...subs.values()].sort((x, y) => y.interval - x.interval || y.sub - x.sub);
    for (let i = 0; i < order.length; i += SUBS_PER_ROUND) {
      let round = order.slice(i, i + SUBS_PER_ROUND);
      {
        // The other replica may be repairing from us meanwhile: its fingerprints may have
        // changed since its digest. Ask again (a few bytes) before fetching events (perhaps a lot).
        const now = new Map<string, Fingerprint>();
        for (const b of await this.ask(peer, encodeSubsQuery([...new Set(round.map((s) => s.interval))])))
          for (const f of decodeSubsReply(b)) now.set(`${f.interval}/${f.sub}`, f.fp);
        round = round.map((s) => ({ ...s, fp: now.get(`${s.interval}/${s.sub}`) ?? ZERO_FP }));
      }
      const chunk: Array<{ interval: number; sub: number }> = [];
      for (const s of round) {
        const mine = this.log.subFingerprint(s.interval, s.sub);
        if (mine.hi === s.fp.hi && mine.lo === s.fp.lo) continue;
        // The other replica has nothing there: nothing to pull, only the drop rule to apply.
        if (s.fp.hi === 0 && s.fp.lo === 0) await this.dropUnknown(s, new Set(), remote.purgedBeforeMs);
        else chunk.push(s);
      }
      if (chunk.length > 0) await this.repairSubs(peer, chunk, seq, recent);
    }
    return true;
  }

  /**
   * Pulls the events of some sub-intervals from replica `peer` (its digest `seq`; `recent`: of
   * the start-up alignment), and repairs what they show.
   */
  private async repairSubs(
    peer: string,
    chunk: ReadonlyArray<{ interval: number; sub: number }>,
    seq: number,
    recent: boolean,
  ): Promise<void> {
    const wanted: string[] = [];
    const repairs: Sample[] = [];
    const theirKeys = new Set<string>();
    let theirHorizon = 0;
    for (const b of await this.ask(peer, encodeEventsQuery(chunk))) {
      const { purgedBeforeMs, events } = decodeEventsReply(b);
      theirHorizon = Math.max(theirHorizon, purgedBeforeMs);
      for (const e of events) {
        theirKeys.add(e.key);
        this.consider(e, wanted, repairs);
      }
    }
    for (const s of chunk) repairs.push(...this.unknownThere(s, theirKeys, theirHorizon));
    if (wanted.length > 0 || repairs.length > 0) {
      const id = this.idOf(peer);
      this.owe(id, `repairing from ${id}`, seq, !recent);
    }
    await this.apply(repairs);
    await this.fetchValues(peer, wanted);
  }

  /**
   * What we hold in sub-interval `s` that the other replica lacks (`theirKeys`), older than its
   * tombstone horizon: it has deleted the key and forgotten the deletion, or we hold a write it
   * never had for longer than the retention. It will never take it; we drop it, rather than keep
   * a difference forever (docs/replication.md, "Tombstones"). Returns the deletes that drop them.
   */
  private unknownThere(
    s: { interval: number; sub: number },
    theirKeys: ReadonlySet<string>,
    theirHorizon: number,
  ): Sample[] {
    const out: Sample[] = [];
    if (theirHorizon === 0) return out;
    for (const e of this.log.eventsIn(s.interval, s.sub))
      if (!e.deleted && !theirKeys.has(e.key) && timestampMs(e.timestamp) < theirHorizon) {
        out.push(makeSample(e.key, "delete", EMPTY, "", new Timestamp(e.timestamp.time + 1n, e.timestamp.id)));
        this.dropped++;
      }
    return out;
  }

  /** The drop rule for a sub-interval the other replica holds nothing in. */
  private async dropUnknown(
    s: { interval: number; sub: number },
    theirKeys: ReadonlySet<string>,
    theirHorizon: number,
  ): Promise<void> {
    await this.apply(this.unknownThere(s, theirKeys, theirHorizon));
  }

  /** Fetches and applies the values of `wanted` from replica `peer`: batches below the query limits, a few in flight. */
  private async fetchValues(peer: string, wanted: readonly string[]): Promise<void> {
    const batches: string[][] = [];
    let batch: string[] = [];
    let bytes = 0;
    for (const key of wanted) {
      if (batch.length >= MAX_KEYS_PER_VALUES_QUERY || bytes + key.length * 3 + 2 > VALUES_QUERY_BYTES) {
        batches.push(batch);
        batch = [];
        bytes = 0;
      }
      batch.push(key);
      bytes += key.length * 3 + 2;
    }
    if (batch.length > 0) batches.push(batch);
    let next = 0;
    const fetchBatch = async (keys: string[]): Promise<void> => {
      const asked = new Set(keys);
      const samples: Sample[] = [];
      for (const b of await this.ask(peer, encodeValuesQuery(keys)))
        for (const v of decodeValuesReply(b)) {
          if (!asked.has(v.key)) continue; // not what we asked for
          const held = this.log.lookup(v.key);
          if (held !== undefined && held.timestamp.compare(v.timestamp) >= 0) continue;
          samples.push(makeSample(v.key, v.deleted ? "delete" : "put", v.payload, v.encoding, v.timestamp));
        }
      await this.apply(samples);
    };
    const worker = async (): Promise<void> => {
      while (next < batches.length) await fetchBatch(batches[next++]!);
    };
    await Promise.all(Array.from({ length: Math.min(VALUES_IN_FLIGHT, batches.length) }, worker));
  }

  /** Sorts one of the other replica's events: already ours, a deletion to apply, or a value to fetch. */
  private consider(e: LogEvent, wanted: string[], repairs: Sample[]): void {
    if (!this.holds(e.key)) {
      const scope = this.within === undefined ? this.keyExpr : `${this.keyExpr} and ${this.within}`;
      this.dropMalformed("a replica", new Error(`event on ${e.key}, outside ${scope}`));
      return;
    }
    const held = this.log.lookup(e.key);
    if (held !== undefined && held.timestamp.compare(e.timestamp) >= 0) return;
    if (e.deleted) {
      repairs.push(makeSample(e.key, "delete", EMPTY, "", e.timestamp));
      return;
    }
    // A value we know nothing about, older than our tombstone horizon: we may have deleted it
    // and forgotten the deletion. Not taken (docs/replication.md, "Tombstones").
    if (held === undefined && timestampMs(e.timestamp) < this.log.purgedBeforeMs) return;
    wanted.push(e.key);
  }

  /** Delivers repairs as samples from another router, a batch at a time. */
  private async apply(samples: readonly Sample[]): Promise<void> {
    for (let i = 0; i < samples.length; i += REPAIR_BATCH) {
      const batch = samples.slice(i, i + REPAIR_BATCH);
      const results = await Promise.allSettled(batch.map((s) => this.host.deliver(s)));
      for (const r of results) if (r.status === "fulfilled") this.repaired++;
      const failed = results.find((r) => r.status === "rejected");
      if (failed) throw (failed as PromiseRejectedResult).reason;
      // A repair the storage found outdated changed nothing, so the log did not hear of it: the
      // storage holds something as new that the log forgot (a tombstone kept longer by the
      // storage, say). The log takes what the storage holds, or the same repair would come again
      // at every exchange.
      for (const s of batch) {
        const held = this.log.lookup(s.key);
        if (held !== undefined && held.timestamp.compare(s.timestamp!) >= 0) continue;
        const stored = await this.backend.lookup(s.key);
        if (stored !== undefined) this.log.record(s.key, stored.timestamp, stored.deleted);
      }
    }
  }

  /** One alignment query to replica `peer`; its replies' payloads, or a throw on an error reply. */
  private async ask(peer: string, payload: Buffer): Promise<Buffer[]> {
    this.sent(payload);
    const replies = await this.host.session.get(peer, {
      payload,
      consolidation: "none",
      timeoutMs: QUERY_TIMEOUT_MS,
      allowedDestination: "remote",
    });
    const out: Buffer[] = [];
    for (const r of replies) {
      if (r.kind !== "ok") throw new Error(r.payload.toString("utf8").slice(0, 200));
      this.received(r.sample.payload);
      if (r.sample.key === peer) out.push(r.sample.payload);
    }
    return out;
  }

  private sent(payload: Buffer): void {
    this.traffic.messages_sent++;
    this.traffic.bytes_sent += payload.length;
  }

  private received(payload: Buffer): void {
    this.traffic.messages_received++;
    this.traffic.bytes_received += payload.length;
  }

  /** Replies to an alignment query, counted. */
  private reply(query: Query, payload: Buffer): void {
    this.sent(payload);
    query.reply(this.address, payload);
  }

  /** `<zid>/<storage>` of a replica's queryable (`@repl/<h>/align/<zid>/<storage>`). */
  private idOf(peer: string): string {
    return peer.slice(this.space.length + "/align/".length);
  }

  /**
   * Replica `id` is known to hold writes we may lack. `since`: the digest that showed it (an
   * alignment with it or a later one settles the debt); by default, now (only a later one does).
   * `forgivable`: a periodic digest showed it; a debt that was not stays unforgivable.
   */
  private owe(id: string, reason: string, since = ++this.seq, forgivable = false): void {
    if (this.owed.size === 0) this.logger.info({ reason }, "replica known to be behind");
    const was = this.owed.get(id);
    this.owed.set(id, { reason, since, forgivable: forgivable && (was === undefined || was.forgivable) });
  }

  /**
   * Drops the debt to replica `id`, which vanished while we stayed connected, when only a
   * periodic digest showed it (docs/replication.md, "Known to be behind").
   */
  private forgive(id: string): void {
    this.owed.delete(id);
    this.logger.info({ replica: id }, "a replica vanished while connected: what it held alone was never acknowledged");
    if (this.owed.size === 0) this.logger.info("replica up to date");
  }

  /** An alignment with the digest `seq` of replica `id` left nothing to pull from it. */
  private settle(id: string, seq: number): void {
    const debt = this.owed.get(id);
    if (debt === undefined || debt.since > seq) return;
    this.owed.delete(id);
    if (this.owed.size === 0) this.logger.info("replica up to date");
  }

  /** Why this replica is known to be behind (the first replica it owes), or undefined. */
  private get behindReason(): string | undefined {
    const first = this.owed.values().next();
    if (first.done) return undefined;
    const reason = first.value.reason;
    return this.owed.size === 1 ? reason : `${reason}; and ${this.owed.size - 1} more`;
  }

  private dropMalformed(from: string, err: unknown): void {
    this.malformed++;
    this.malformedSinceWarn++;
    const now = this.now();
    if (now - this.lastWarn >= WARN_EVERY_MS) {
      this.logger.warn(
        { from, err: errorMessage(err), dropped: this.malformedSinceWarn },
        "dropped a malformed replication message",
      );
      this.lastWarn = now;
      this.malformedSinceWarn = 0;
    } else this.logger.debug({ from, err: errorMessage(err) }, "dropped a malformed replication message");
  }

  /** An exchange on the next turn (a replica appeared). */
  private soon(): void {
    if (this.closed) return;
    setImmediate(() => void this.exchange());
  }

  /** The next periodic exchange: an interval from now (±10 %), or sooner while behind. */
  private schedule(): void {
    if (this.closed) return;
    if (this.timer) clearTimeout(this.timer);
    const every = this.settings.intervalMs;
    // Sooner only while a replica we owe is alive to repair from; one that is gone comes back
    // with its liveliness token, which starts an exchange.
    let retry = false;
    if (this.host.connected()) for (const id of this.owed.keys()) if (this.alive.has(id)) retry = true;
    const delay = retry ? Math.min(every, RETRY_BEHIND_MS) : every * (0.9 + Math.random() * 0.2);
    this.timer = setTimeout(() => {
      void this.exchange().finally(() => this.schedule());
    }, delay);
    this.timer.unref();
  }

  private watchConnection(): void {
    const connected = this.host.connected();
    if (connected === this.wasConnected) return;
    this.wasConnected = connected;
    if (!connected) {
      // Cut off: the replicas alive now may take writes we will not hear of until the heal.
      for (const id of this.alive) this.owe(id, `cut off from the fabric while ${id} was alive`);
      return;
    }
    this.logger.info("reconnected to the fabric: exchanging with the replicas");
    void this.exchange().finally(() => this.schedule());
  }
}

const EMPTY = Buffer.alloc(0);

/** One other replica's alignments: the digest to align with next, and the worker draining them. */
interface PeerQueue {
  next: { digest: Digest; seq: number; recent: boolean } | undefined;
  running: Promise<void> | undefined;
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
