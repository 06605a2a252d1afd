/**
 * Acknowledged writes, from the publisher's side: the state machine of docs/fabric-protocol.md
 * ("Acknowledged writes").
 *
 * A write waits for every router that declared a matching subscriber. A router leaves a write's
 * waiting set when it acknowledges, when it no longer declares a matching subscriber, or when it
 * is forgotten (goodbye, or `peerTimeoutMs` of silence: dead, its data with it). An ack that is
 * late by `probeAfterMs` pings the routers still waited for; a router the bus finds nobody behind
 * ("no responders") is marked unreachable in that write, which keeps waiting: its connection may
 * be failing over. When it shows life the write is resent to it. A write whose waiting set empties
 * resolves; an error acknowledgement rejects it with the receiver's error kind; `ackTimeoutMs`
 * rejects it with `timeout`. So no acknowledged write misses a live router.
 */
import type { Buffer } from "node:buffer";
import { ZestError } from "../core/errors.js";
import type { Clock, TimerHandle } from "./clock.js";
import type { Ack } from "./envelope.js";

/** How the tracker reaches other routers. */
export interface AckLink {
  /** Sends write `seq` (as first sent, `data`) again, to router `zid` only, marked as a resend. */
  resend(zid: string, seq: number, data: Buffer): void;
  /** Asks router `zid` for a sign of life. */
  ping(zid: string): void;
}

/** Timing of the state machine. */
export interface AckTimings {
  readonly ackTimeoutMs: number;
  readonly probeAfterMs: number;
}

interface PendingWrite {
  readonly seq: number;
  readonly key: string;
  readonly data: Buffer;
  readonly since: number;
  readonly waiting: Set<string>;
  /**
   * Routers of `waiting` the bus found nobody behind: resent to when they show life. Made on the
   * first such notice, like `resentAt`: most writes are acknowledged in time and need neither.
   */
  unreachable: Set<string> | undefined;
  /** When the write was last resent to each router: at most once per `probeAfterMs` each. */
  resentAt: Map<string, number> | undefined;
  readonly resolve: () => void;
  readonly reject: (err: Error) => void;
  /** When the routers still waited for were last pinged. */
  probedAt: number;
}

/** The writes waiting for acknowledgements. */
export class AckTracker {
  private readonly pending = new Map<number, PendingWrite>();
  /** Router id → the writes that wait for it while it is unreachable. */
  private readonly unreachable = new Map<string, Set<number>>();
  /** Samples sent again. */
  resent = 0;
  private tick: TimerHandle | undefined;
  /** Period of the timer: late writes are noticed within half a probe interval. */
  private readonly tickMs: number;

  constructor(
    private readonly clock: Clock,
    private readonly link: AckLink,
    private readonly timings: AckTimings,
  ) {
    this.tickMs = Math.max(1, Math.floor(Math.min(timings.probeAfterMs, timings.ackTimeoutMs) / 2));
  }

  /** Writes waiting. */
  get size(): number {
    return this.pending.size;
  }

  /** Routers write `seq` still waits for (tests, status). */
  waitingFor(seq: number): string[] {
    return [...(this.pending.get(seq)?.waiting ?? [])].sort();
  }

  /** Starts waiting for `targets` to acknowledge write `seq`. */
  track(seq: number, key: string, data: Buffer, targets: readonly string[]): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const now = this.clock.now();
      const p: PendingWrite = {
        seq,
        key,
        data,
        since: now,
        waiting: new Set(targets),
        unreachable: undefined,
        resentAt: undefined,
        resolve,
        reject,
        probedAt: now,
      };
      this.pending.set(seq, p);
      this.tick ??= this.clock.setTimeout(this.onTick, this.tickMs);
    });
  }

  /** An acknowledgement from `zid`. An error kind fails the write with the receiver's reason. */
  acked(zid: string, ack: Ack): void {
    const p = this.pending.get(ack.seq);
    if (!p?.waiting.has(zid)) return;
    if (ack.errorKind !== undefined) {
      this.settle(p, new ZestError(ack.errorKind, `router ${zid}: ${ack.message}`));
      return;
    }
    this.stopWaiting(p, zid);
  }

  /**
   * The bus found nobody for write `seq`: behind router `zid` (a direct send), or behind the key's
   * subject (every router waited for). They may be reconnecting: the write keeps waiting.
   */
  noResponders(seq: number, zid?: string): void {
    const p = this.pending.get(seq);
    if (!p) return;
    if (zid === undefined) for (const z of p.waiting) this.mark(p, z);
    else this.mark(p, zid);
  }

  /** A ping to `zid` found nobody: every write waiting for it marks it unreachable. */
  unreachableRouter(zid: string): void {
    for (const p of this.pending.values()) this.mark(p, zid);
  }

  /** Router `zid` showed life: resend the writes that found it unreachable. */
  alive(zid: string): void {
    const seqs = this.unreachable.get(zid);
    if (!seqs) return;
    this.unreachable.delete(zid);
    for (const seq of seqs) {
      const p = this.pending.get(seq);
      if (!p?.unreachable?.delete(zid)) continue;
      this.resend(p, zid);
    }
  }

  /**
   * Router `zid` reconnected (it said hello again with the same epoch): what was sent to it while
   * its connection failed over may be lost, so every write waiting for it is resent.
   */
  resendAll(zid: string): void {
    this.unreachable.delete(zid);
    for (const p of this.pending.values()) {
      if (!p.waiting.has(zid)) continue;
      p.unreachable?.delete(zid);
      this.resend(p, zid);
    }
  }

  /** Router `zid` changed its declarations: writes stop waiting for it where it no longer wants the key. */
  declarationsChanged(zid: string, wants: (key: string) => boolean): void {
    for (const p of [...this.pending.values()]) if (p.waiting.has(zid) && !wants(p.key)) this.stopWaiting(p, zid);
  }

  /** Router `zid` is forgotten: dead, its data with it. Writes stop waiting for it. */
  forgotten(zid: string): void {
    for (const p of [...this.pending.values()]) if (p.waiting.has(zid)) this.stopWaiting(p, zid);
    this.unreachable.delete(zid);
  }

  /** Fails write `seq` (it could not be sent). */
  fail(seq: number, err: Error): void {
    const p = this.pending.get(seq);
    if (p) this.settle(p, err);
  }

  /** Fails every waiting write (lost connection, shutdown). */
  failAll(error: (key: string, waiting: string) => Error): void {
    for (const p of [...this.pending.values()]) this.settle(p, error(p.key, [...p.waiting].sort().join(", ")));
    this.clock.clearTimeout(this.tick);
    this.tick = undefined;
  }

  /**
   * A router that reconnects shows life several ways at once (declarations, hello): one resend is
   * enough, and each extra copy would reach its subscribers again.
   */
  private resend(p: PendingWrite, zid: string): void {
    const now = this.clock.now();
    const last = p.resentAt?.get(zid);
    if (last !== undefined && now - last < this.timings.probeAfterMs) return;
    p.resentAt ??= new Map();
    p.resentAt.set(zid, now);
    this.resent++;
    this.link.resend(zid, p.seq, p.data);
  }

  private mark(p: PendingWrite, zid: string): void {
    if (!p.waiting.has(zid)) return;
    p.unreachable ??= new Set();
    p.unreachable.add(zid);
    let seqs = this.unreachable.get(zid);
    if (!seqs) {
      seqs = new Set();
      this.unreachable.set(zid, seqs);
    }
    seqs.add(p.seq);
  }

  private unmark(p: PendingWrite, zid: string): void {
    if (!p.unreachable?.delete(zid)) return;
    const seqs = this.unreachable.get(zid);
    if (seqs?.delete(p.seq) && seqs.size === 0) this.unreachable.delete(zid);
  }

  private stopWaiting(p: PendingWrite, zid: string): void {
    p.waiting.delete(zid);
    this.unmark(p, zid);
    if (p.waiting.size === 0) this.settle(p);
  }

  /**
   * One timer for all writes, running only while some wait (a write acknowledged in time costs
   * no timer): late writes ping the routers still waited for, every `probeAfterMs`, and fail at
   * `ackTimeoutMs`. Writes sit in the map in the order they started, so the walk stops at the
   * first one not yet late.
   */
  private readonly onTick = (): void => {
    this.tick = undefined;
    const { ackTimeoutMs, probeAfterMs } = this.timings;
    const now = this.clock.now();
    const lateAfter = Math.min(probeAfterMs, ackTimeoutMs);
    // Deleting the entry being visited (a timeout) is safe while iterating a Map.
    for (const p of this.pending.values()) {
      if (now - p.since < lateAfter) break;
      if (now - p.since >= ackTimeoutMs) {
        const who = [...p.waiting].sort().join(", ");
        this.settle(
          p,
          ZestError.timeout(`router(s) ${who} did not acknowledge the write on ${p.key} within ${ackTimeoutMs} ms`),
        );
      } else if (p.probedAt === p.since || now - p.probedAt >= probeAfterMs) {
        p.probedAt = now;
        for (const zid of p.waiting) this.link.ping(zid);
      }
    }
    if (this.pending.size > 0) this.tick = this.clock.setTimeout(this.onTick, this.tickMs);
  };

  private settle(p: PendingWrite, err?: Error): void {
    if (this.pending.get(p.seq) !== p) return;
    this.pending.delete(p.seq);
    if (p.unreachable) for (const zid of [...p.unreachable]) this.unmark(p, zid);
    if (err) p.reject(err);
    else p.resolve();
  }
}
