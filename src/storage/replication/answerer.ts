/**
 * The answerer of one replica (docs/replication.md, "Anti-entropy"): its queryable's handler,
 * which answers the five alignment messages of the other replicas (`wire.ts`) from the log and,
 * for values, from the storage. A digest is news to this replica too: it queues an alignment with
 * the asker, a propagation delay later.
 */
import { Buffer } from "node:buffer";
import { errorMessage, ZestError } from "../../core/errors.js";
import type { Query } from "../../core/query.js";
import type { Aligner } from "./aligner.js";
import type { Debts } from "./debts.js";
import type { Replica } from "./replica.js";
import {
  decodeDigest,
  decodeEventsQuery,
  decodeIntervalsQuery,
  decodeSubsQuery,
  decodeValuesQuery,
  encodeDigest,
  encodeEventsReply,
  encodeIntervalsReply,
  encodeSubsReply,
  encodeValuesReply,
  Op,
  opOf,
  type ValueItem,
} from "./wire.js";

const EMPTY = Buffer.alloc(0);

/** Answers the other replicas' alignment queries. */
export class Answerer {
  constructor(
    private readonly replica: Replica,
    private readonly aligner: Aligner,
    private readonly debts: Debts,
  ) {}

  /** Answers another replica's alignment query. */
  answer(query: Query): Promise<void> | undefined {
    const payload = query.payload;
    if (payload !== undefined) this.replica.received(payload);
    if (payload === undefined) {
      query.replyError(ZestError.badRequest("an alignment query needs a payload"));
      return undefined;
    }
    try {
      switch (opOf(payload)) {
        case Op.digest: {
          const m = decodeDigest(payload);
          this.replica.reply(
            query,
            encodeDigest({
              zid: this.replica.host.session.zid,
              storage: this.replica.storage,
              digest: this.replica.log.digest(this.replica.now()),
            }),
          );
          // Their digest is news to us too: pull what they have that we lack.
          // A little later: the asker is most likely repairing from us right now, and what it
          // lacks would only show up here as differences worth nothing.
          if (m.zid !== this.replica.host.session.zid) {
            const asker = `${this.replica.space}/align/${m.zid}/${m.storage}`;
            const seq = this.debts.draw(); // received now: it says nothing of a cut that comes meanwhile
            setTimeout(() => {
              if (!this.replica.closed) void this.aligner.enqueue(asker, m.digest, seq).catch(() => undefined);
            }, this.replica.settings.propagationDelayMs).unref();
          }
          return undefined;
        }
        case Op.intervals: {
          const before = decodeIntervalsQuery(payload);
          for (const b of encodeIntervalsReply(this.replica.log.intervalsBefore(before))) this.replica.reply(query, b);
          return undefined;
        }
        case Op.subs: {
          const subs = decodeSubsQuery(payload).flatMap((i) => this.replica.log.subsOf(i));
          for (const b of encodeSubsReply(subs)) this.replica.reply(query, b);
          return undefined;
        }
        case Op.events: {
          const events = decodeEventsQuery(payload).flatMap((s) => this.replica.log.eventsIn(s.interval, s.sub));
          for (const b of encodeEventsReply(this.replica.log.purgedBeforeMs, events)) this.replica.reply(query, b);
          return undefined;
        }
        case Op.values:
          // Asynchronous: the values come from the storage. The query waits for its promise.
          return this.answerValues(query, decodeValuesQuery(payload));
        default:
          throw new Error(`unknown message type ${opOf(payload)}`);
      }
    } catch (err) {
      this.replica.dropMalformed("a query", err);
      query.replyError(ZestError.badRequest(`malformed alignment query: ${errorMessage(err)}`));
      return undefined;
    }
  }

  private async answerValues(query: Query, keys: readonly string[]): Promise<void> {
    const items: ValueItem[] = [];
    for (const key of keys) {
      if (!this.replica.holds(key)) continue;
      const held = this.replica.log.lookup(key);
      if (held === undefined) continue;
      if (held.deleted) {
        items.push({ key, timestamp: held.timestamp, deleted: true, encoding: "", payload: EMPTY });
        continue;
      }
      try {
        const found = (await this.replica.backend.query(key)).find((e) => e.key === key);
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
    for (const b of encodeValuesReply(items)) this.replica.reply(query, b);
  }
}
