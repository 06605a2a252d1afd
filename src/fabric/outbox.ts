/**
 * What a router sends once per event-loop turn (docs/fabric-protocol.md, "Acknowledged
 * writes"): its samples, where consecutive samples on one subject travel as one SAMPLES message,
 * and its acknowledgements, one ACKS message per publisher. Both keep the order of what they
 * were given.
 *
 * A turn's acknowledged writes on several subjects (writes on many keys) travel as one SAMPLES
 * message per router that wants any of them, on its direct subject, instead of one message per
 * subject: each message costs the publisher, every nats-server on its way and the receiver far
 * more than its bytes. Each receiver still gets the samples it is waited for in order.
 *
 * Both outboxes flush in one immediate per turn (`EndOfTurn`): the NATS client writes what was
 * published up to a microtask checkpoint in one socket write, and Node runs the microtasks between
 * two immediates, so a turn that both acknowledges writes and sends its own would otherwise cost
 * two writes, and the nats-server two wake-ups.
 */
import type { Buffer } from "node:buffer";
import { errorMessage } from "../core/errors.js";
import type { Clock } from "./clock.js";
import { type Ack, encodeAcks, encodeSamples, SAMPLES_OVERHEAD } from "./envelope.js";
import type { Inbox } from "./inbox.js";

/**
 * The end of the current event-loop turn, shared by the outboxes: `request` runs `flush` (all of
 * them, in order) once, in one immediate, however many outboxes asked.
 */
export class EndOfTurn {
  private scheduled = false;

  constructor(private readonly flush: () => void) {}

  /** Asks for the flush at the end of this turn. */
  request(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(this.run);
  }

  private readonly run = (): void => {
    this.scheduled = false;
    this.flush();
  };
}

/** How an outbox reaches the bus. */
export interface OutboxLink {
  /** Publishes now (throws when it cannot). */
  publish(subject: string, data: Buffer, reply?: string): void;
  /** Writes what was published this turn. */
  flush(): void;
  /** Largest message, protocol overhead already taken off. */
  limit(): number;
}

/** A sample waiting for the end of the turn (`ack`: a write waits for its acknowledgements). */
export interface OutSample {
  readonly seq: number;
  readonly data: Buffer;
  readonly ack: boolean;
  /** The routers the write waits for, when it is sent on its key's subject. */
  readonly targets?: readonly string[];
}

/** Consecutive samples on one subject, sent as one message. */
interface OutGroup {
  readonly subject: string;
  /** The router a direct send goes to. */
  readonly direct: string | undefined;
  readonly items: OutSample[];
  size: number;
}

/** A batch sent with a reply subject: what a "no responders" notice on it concerns. */
export interface SentBatch {
  readonly at: number;
  readonly seqs: readonly number[];
  readonly zid: string | undefined;
}

/** This router's samples, sent at the end of each turn. */
export class SampleOutbox {
  private groups: OutGroup[] = [];
  private readonly batches = new Map<number, SentBatch>();
  private batchId = 0;
  /** Samples queued this turn that are acknowledged writes whose routers are known. */
  private addressed = 0;
  /** Prefix of the direct subjects (`zest.w`). */
  private readonly directPrefix: string;

  constructor(
    private readonly inbox: Inbox,
    private readonly clock: Clock,
    private readonly link: OutboxLink,
    /** A batch registration no notice claimed after this long never will be. */
    private readonly forgetAfterMs: number,
    /** The samples of `seqs` could not be sent. */
    private readonly failed: (seqs: readonly number[], err: Error) => void,
    /** Where the flush at the end of the turn is asked for. */
    private readonly turn: EndOfTurn,
    directPrefix = "zest.w",
  ) {
    this.directPrefix = `${directPrefix}.`;
  }

  /** Queues a sample for `subject` (`direct`: the one router it is addressed to). */
  queue(subject: string, direct: string | undefined, item: OutSample): void {
    if (item.ack && (direct !== undefined || item.targets !== undefined)) this.addressed++;
    const last = this.groups[this.groups.length - 1];
    const size = item.data.length + SAMPLES_OVERHEAD;
    if (last && last.subject === subject && last.size + size <= this.link.limit()) {
      last.items.push(item);
      last.size += size;
    } else {
      this.groups.push({ subject, direct, items: [item], size: 5 + size });
    }
    this.turn.request();
  }

  /** The batch a "no responders" notice on `batch <id>` concerns (once). */
  claim(id: number): SentBatch | undefined {
    const b = this.batches.get(id);
    this.batches.delete(id);
    return b;
  }

  /** Sends what is queued. */
  readonly flush = (): void => {
    let groups = this.groups;
    if (groups.length === 0) return;
    this.groups = [];
    if (groups.length > 1 && this.addressed > 0) groups = this.byRouter(groups);
    this.addressed = 0;
    const now = this.clock.now();
    for (const [id, b] of this.batches) {
      if (now - b.at < this.forgetAfterMs) break;
      this.batches.delete(id);
    }
    for (const g of groups) {
      let data: Buffer;
      let reply: string | undefined;
      if (g.items.length === 1) {
        const it = g.items[0]!;
        data = it.data;
        if (it.ack)
          reply = this.inbox.subject(
            g.direct === undefined ? { kind: "sample", seq: it.seq } : { kind: "sample", seq: it.seq, zid: g.direct },
          );
      } else {
        data = encodeSamples(g.items.map((it) => it.data));
        const seqs = g.items.filter((it) => it.ack).map((it) => it.seq);
        if (seqs.length > 0) {
          const id = ++this.batchId;
          this.batches.set(id, { at: now, seqs, zid: g.direct });
          reply = this.inbox.subject({ kind: "batch", id });
        }
      }
      try {
        this.link.publish(g.subject, data, reply);
      } catch (err) {
        this.failed(
          g.items.filter((it) => it.ack).map((it) => it.seq),
          err instanceof Error ? err : new Error(errorMessage(err)),
        );
      }
    }
    this.link.flush();
  };

  /**
   * The turn's acknowledged writes regrouped by the router they go to (see the top of this file),
   * each router's in the order they were queued, split below the payload limit; then the writes
   * nobody is known to want, on their subjects as before. Those come last: a router that gets one
   * of them through a subscription it has not announced yet, and is also known to want other
   * samples of the turn, must not see a later sequence number before the ones it waits for (its
   * duplicate filter would drop those, and their writes would wait for it in vain). At worst it
   * drops the unannounced one, as it could miss it anyway before its announcement arrives.
   */
  private byRouter(groups: OutGroup[]): OutGroup[] {
    const open = new Map<string, OutGroup>();
    const out: OutGroup[] = [];
    const rest: OutGroup[] = [];
    const limit = this.link.limit();
    for (const g of groups) {
      for (const item of g.items) {
        const size = item.data.length + SAMPLES_OVERHEAD;
        const routers = g.direct !== undefined ? [g.direct] : item.ack ? item.targets : undefined;
        if (routers === undefined) {
          const last = rest[rest.length - 1];
          if (last && last.subject === g.subject && last.size + size <= limit) {
            last.items.push(item);
            last.size += size;
          } else rest.push({ subject: g.subject, direct: undefined, items: [item], size: 5 + size });
          continue;
        }
        for (const zid of routers) {
          let to = open.get(zid);
          if (to && to.size + size > limit) {
            out.push(to);
            to = undefined;
          }
          if (!to) {
            to = { subject: this.directPrefix + zid, direct: zid, items: [], size: 5 };
            open.set(zid, to);
          }
          to.items.push(item);
          to.size += size;
        }
      }
    }
    for (const g of open.values()) out.push(g);
    for (const g of rest) out.push(g);
    // Few keys wanted by many routers: one message per key, fanned out by NATS, is fewer.
    return out.length < groups.length ? out : groups;
  }
}

/** Acknowledgements this router owes, one ACKS message per publisher and turn. */
export class AckOutbox {
  private out = new Map<string, Ack[]>();
  /** Acknowledgements sent. */
  sent = 0;

  constructor(
    private readonly zid: string,
    private readonly inbox: Inbox,
    /** Publishes unless disconnected; false when it could not. */
    private readonly send: (subject: string, data: Buffer) => boolean,
    private readonly written: () => void,
    /** Where the flush at the end of the turn is asked for. */
    private readonly turn: EndOfTurn,
  ) {}

  add(publisher: string, ack: Ack): void {
    let list = this.out.get(publisher);
    if (!list) {
      list = [];
      this.out.set(publisher, list);
    }
    list.push(ack);
    this.turn.request();
  }

  readonly flush = (): void => {
    const out = this.out;
    if (out.size === 0) return;
    this.out = new Map();
    for (const [publisher, acks] of out) {
      if (this.send(this.inbox.acksSubjectOf(publisher), encodeAcks({ zid: this.zid, acks }))) this.sent += acks.length;
    }
    this.written();
  };
}
