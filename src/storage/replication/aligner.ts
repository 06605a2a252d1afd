/**
 * The per-peer aligner of one replica (docs/replication.md, "Anti-entropy"): one worker per other
 * replica drains the digests received from it, newest replacing one not taken yet, and pulls what
 * each shows this replica lacks: the fingerprints of the differing eras, then the events of the
 * differing sub-intervals, then the values of the keys whose newest event is the other's. The
 * repairs go to this router's subscribers like samples from another router; the drop rule of
 * "Tombstones" applies to what the other has forgotten. What it finds and settles goes to `Debts`.
 */
import { Buffer } from "node:buffer";
import { errorMessage } from "../../core/errors.js";
import { makeSample, type Sample } from "../../core/sample.js";
import { Timestamp } from "../../core/timestamp.js";
import type { Debts } from "./debts.js";
import { type Digest, type Fingerprint, type LogEvent, timestampMs } from "./log.js";
import type { Replica } from "./replica.js";
import {
  decodeEventsReply,
  decodeIntervalsReply,
  decodeSubsReply,
  decodeValuesReply,
  encodeEventsQuery,
  encodeIntervalsQuery,
  encodeSubsQuery,
  encodeValuesQuery,
  MAX_ITEMS_PER_QUERY,
  MAX_KEYS_PER_VALUES_QUERY,
} from "./wire.js";

/** Repairs delivered together before the next batch (bounds the promises held at once). */
const REPAIR_BATCH = 1_000;
/** Most bytes of keys asked for in one `values` query. */
const VALUES_QUERY_BYTES = 128 * 1024;
/** Sub-intervals whose events one round fetches (newest first; see `alignWith`). */
const SUBS_PER_ROUND = 8;
const ZERO_FP: Fingerprint = { hi: 0, lo: 0 };
/** `values` queries to one replica in flight at once. */
const VALUES_IN_FLIGHT = 4;
const EMPTY = Buffer.alloc(0);

/** One other replica's alignments: the digest to align with next, and the worker draining them. */
interface PeerQueue {
  next: { digest: Digest; seq: number; recent: boolean } | undefined;
  running: Promise<void> | undefined;
}

/** The workers that align one replica with each of the others. */
export class Aligner {
  /**
   * Per other replica (its queryable's key): the latest digest of it to align with, and the
   * worker draining them. Each replica has its own worker, so that a slow one holds up no other.
   */
  private readonly queues = new Map<string, PeerQueue>();
  /** The replicas a start-up alignment (every sub-interval compared) completed with (`<zid>/<storage>`). */
  readonly alignedAtStart = new Set<string>();
  /** Repairs applied. */
  repaired = 0;
  /** Old values dropped (docs/replication.md, "Tombstones"). */
  dropped = 0;

  constructor(
    private readonly replica: Replica,
    private readonly debts: Debts,
  ) {}

  /** Resolves once every worker is idle. */
  async idle(): Promise<void> {
    await Promise.all([...this.queues.values()].map((q) => q.running));
  }

  /**
   * Queues an alignment with replica `peer`'s digest, received when `seq` was drawn; `recent`
   * compares its youngest sub-intervals too. Resolves once that replica's worker is idle.
   */
  enqueue(peer: string, digest: Digest, seq = this.debts.draw(), recent = false): Promise<void> {
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
    const id = this.replica.idOf(peer);
    try {
      while (q.next !== undefined && !this.replica.closed) {
        const { digest, seq, recent } = q.next;
        q.next = undefined;
        try {
          // Repaired from it: whatever it held that we lacked is ours now.
          if (await this.alignWith(peer, digest, seq, recent)) {
            this.debts.settle(id, seq);
            if (recent) this.alignedAtStart.add(id);
          }
        } catch (err) {
          this.replica.logger.warn({ peer, err: errorMessage(err) }, "replica alignment failed");
          // Already gone, with us connected: what it held alone it never acknowledged.
          this.debts.failed(id, errorMessage(err), seq, recent, this.replica.host.connected());
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
    if (!this.replica.log.comparable(remote)) {
      this.replica.dropMalformed(
        peer,
        new Error("its replication settings (interval, sub_intervals, hot, warm) differ from ours"),
      );
      return false;
    }
    const diff = this.replica.log.compare(remote, this.replica.now(), { recent });
    const intervals = new Set(diff.warmIntervals);
    if (diff.cold) {
      const before = remote.current - remote.hot - remote.warm + 1;
      const theirs = new Map<number, { hi: number; lo: number }>();
      for (const b of await this.replica.ask(peer, encodeIntervalsQuery(before)))
        for (const i of decodeIntervalsReply(b)) theirs.set(i.interval, i.fp);
      for (const [i, fp] of theirs) {
        const mine = this.replica.log.intervalFingerprint(i);
        if (mine.hi !== fp.hi || mine.lo !== fp.lo) intervals.add(i);
      }
      for (const mine of this.replica.log.intervalsBefore(before))
        if (!theirs.has(mine.interval)) intervals.add(mine.interval);
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
      for (const b of await this.replica.ask(peer, encodeSubsQuery(chunk)))
        for (const s of decodeSubsReply(b)) theirs.set(`${s.interval}/${s.sub}`, s.fp);
      for (const interval of chunk) {
        const mine = new Map(this.replica.log.subsOf(interval).map((s) => [`${s.interval}/${s.sub}`, s]));
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
        for (const b of await this.replica.ask(peer, encodeSubsQuery([...new Set(round.map((s) => s.interval))])))
          for (const f of decodeSubsReply(b)) now.set(`${f.interval}/${f.sub}`, f.fp);
        round = round.map((s) => ({ ...s, fp: now.get(`${s.interval}/${s.sub}`) ?? ZERO_FP }));
      }
      const chunk: Array<{ interval: number; sub: number }> = [];
      for (const s of round) {
        const mine = this.replica.log.subFingerprint(s.interval, s.sub);
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
    for (const b of await this.replica.ask(peer, encodeEventsQuery(chunk))) {
      const { purgedBeforeMs, events } = decodeEventsReply(b);
      theirHorizon = Math.max(theirHorizon, purgedBeforeMs);
      for (const e of events) {
        theirKeys.add(e.key);
        this.consider(e, wanted, repairs);
      }
    }
    for (const s of chunk) repairs.push(...this.unknownThere(s, theirKeys, theirHorizon));
    if (wanted.length > 0 || repairs.length > 0) this.debts.repairing(this.replica.idOf(peer), seq, recent);
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
    for (const e of this.replica.log.eventsIn(s.interval, s.sub))
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
      for (const b of await this.replica.ask(peer, encodeValuesQuery(keys)))
        for (const v of decodeValuesReply(b)) {
          if (!asked.has(v.key)) continue; // not what we asked for
          const held = this.replica.log.lookup(v.key);
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
    if (!this.replica.holds(e.key)) {
      const scope =
        this.replica.within === undefined ? this.replica.keyExpr : `${this.replica.keyExpr} and ${this.replica.within}`;
      this.replica.dropMalformed("a replica", new Error(`event on ${e.key}, outside ${scope}`));
      return;
    }
    const held = this.replica.log.lookup(e.key);
    if (held !== undefined && held.timestamp.compare(e.timestamp) >= 0) return;
    if (e.deleted) {
      repairs.push(makeSample(e.key, "delete", EMPTY, "", e.timestamp));
      return;
    }
    // A value we know nothing about, older than our tombstone horizon: we may have deleted it
    // and forgotten the deletion. Not taken (docs/replication.md, "Tombstones").
    if (held === undefined && timestampMs(e.timestamp) < this.replica.log.purgedBeforeMs) return;
    wanted.push(e.key);
  }

  /** Delivers repairs as samples from another router, a batch at a time. */
  private async apply(samples: readonly Sample[]): Promise<void> {
    for (let i = 0; i < samples.length; i += REPAIR_BATCH) {
      const batch = samples.slice(i, i + REPAIR_BATCH);
      const results = await Promise.allSettled(batch.map((s) => this.replica.host.deliver(s)));
      for (const r of results) if (r.status === "fulfilled") this.repaired++;
      const failed = results.find((r) => r.status === "rejected");
      if (failed) throw (failed as PromiseRejectedResult).reason;
      // A repair the storage found outdated changed nothing, so the log did not hear of it: the
      // storage holds something as new that the log forgot (a tombstone kept longer by the
      // storage, say). The log takes what the storage holds, or the same repair would come again
      // at every exchange.
      for (const s of batch) {
        const held = this.replica.log.lookup(s.key);
        if (held !== undefined && held.timestamp.compare(s.timestamp!) >= 0) continue;
        const stored = await this.replica.backend.lookup(s.key);
        if (stored !== undefined) this.replica.log.record(s.key, stored.timestamp, stored.deleted);
      }
    }
  }
}
