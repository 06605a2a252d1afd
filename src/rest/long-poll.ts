/**
 * Parked long-poll GETs (docs/long-poll.md): a `GET ?_wait=<duration>` whose `If-None-Match`
 * still matches the answer waits here until a change on an intersecting key (or a declaration)
 * asks it to read again, or until its duration ends. Waits are bounded in count per client
 * address and in all, and a client that goes away frees its wait at once.
 *
 * A parked wait costs one small object and one set entry: its deadline sits in one heap shared
 * by all waits (one timer for the earliest), its client's departure is heard through one shared
 * listener, and it is read again through the reader that parked it (no closure per wait).
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { performance } from "node:perf_hooks";
import { ZestError } from "../core/errors.js";
import type { ChangeEvent } from "../core/ports.js";
import type { Session, Subscriber } from "../core/session.js";
import { intersects, isWild } from "../keyexpr/index.js";

/** Bounds of long-poll waits (`plugins.rest.long_poll`). */
export interface LongPollLimits {
  /** Longest `_wait` accepted, in ms (300,000). */
  readonly maxWaitMs: number;
  /** Parked waits in all (10,000). */
  readonly maxWaits: number;
  /** Parked waits per client address (1,000). */
  readonly maxWaitsPerAddress: number;
}

export const DEFAULT_LONG_POLL: LongPollLimits = { maxWaitMs: 300_000, maxWaits: 10_000, maxWaitsPerAddress: 1_000 };

/** Longest `_wait` value read, in characters. */
const MAX_WAIT_TEXT = 16;
const WAIT_FORMAT = /^(\d{1,9})(ms|s|m)?$/;
/**
 * How long a key expression stays subscribed on a router in a cluster after its last wait
 * left, so that a client polling in a loop does not re-announce a subscriber to every router
 * on each round.
 */
const LINGER_MS = 60_000;
/** Most idle subscribed key expressions kept (the oldest goes first). */
const MAX_LINGERING = 1024;

/**
 * A `_wait` value in ms: `<n>ms`, `<n>s`, `<n>m`, or a bare `<n>` (seconds, as Consul reads it).
 * Throws `bad_input` with a one-line reason when malformed or over `maxMs`.
 */
export function parseWait(text: string, maxMs: number): number {
  const m = text.length <= MAX_WAIT_TEXT ? WAIT_FORMAT.exec(text) : null;
  if (m === null)
    throw ZestError.badRequest(`_wait takes a duration such as 500ms, 30s or 5m, not "${text.slice(0, 32)}"`);
  const n = Number(m[1]);
  const ms = m[2] === "ms" ? n : m[2] === "m" ? n * 60_000 : n * 1000;
  if (ms > maxMs) throw ZestError.badRequest(`_wait is at most ${maxMs} ms on this router`);
  return ms;
}

/** What reads a parked GET again: the read path that parked it. */
export interface LongPollReader {
  /** Reads the GET again: answers it, or parks it anew while its ETag still matches. */
  retry(req: IncomingMessage, res: ServerResponse, deadline: number): void;
}

/** A key expression with long-polls on it: a change is matched once per expression, not per wait. */
class Watch {
  readonly waits = new Set<Wait>();
  /** Bumped by each change on the expression: a read that began before one reads again. */
  changes = 0;
  /** Long-poll reads in flight on the expression (between `begin` and `park` or `release`). */
  readers = 0;
  /** On a router in a cluster: the subscriber through which other routers' writes reach it. */
  sub: Subscriber | undefined;
  /** When the last wait or reader left (`performance.now()`), while lingering. */
  idleSince = 0;
  constructor(
    readonly hub: LongPollHub,
    readonly expr: string,
  ) {}
}

/** One parked GET. */
class Wait {
  /** Place in the deadline heap; -1 once unparked. */
  slot = -1;
  constructor(
    readonly watch: Watch,
    readonly address: string,
    readonly req: IncomingMessage,
    readonly res: ServerResponse,
    /** End of the `_wait` (`performance.now()` time). */
    readonly deadline: number,
    readonly reader: LongPollReader,
  ) {}
}

/**
 * A long-poll read in flight, from before its answer is read to its parking: a change that lands
 * meanwhile sends it to read again rather than park on an answer already old.
 */
export interface LongPollTicket {
  readonly watch: Watch;
  readonly seen: number;
  /** True once parked or released. */
  done: boolean;
}

/** Counters read by the metrics. */
export interface LongPollStats {
  /** Waits parked so far. */
  parked: number;
  /** Waits ended by a change that matched (the GET read again). */
  woken: number;
  /** Waits refused for the caps. */
  refused: number;
}

/** The parked long-polls of one REST server, woken by the router's change events. */
export class LongPollHub {
  private readonly watches = new Map<string, Watch>();
  /** Watches without waits or readers that keep their subscriber a while (insertion order: oldest first). */
  private readonly idle = new Map<string, Watch>();
  private readonly perAddress = new Map<string, number>();
  /** Parked waits, earliest deadline first (a binary heap; `Wait.slot` is each one's place). */
  private readonly heap: Wait[] = [];
  private timer: NodeJS.Timeout | undefined;
  /** The deadline the timer is set for. */
  private timerAt = Number.POSITIVE_INFINITY;
  private sweeper: NodeJS.Timeout | undefined;
  /** Woken waits, read again together after the change event's turn. */
  private woken: Wait[] = [];
  private readonly unsubscribe: () => void;
  /** Waits heard from other routers through a subscriber per key expression. */
  private readonly clustered: boolean;
  readonly stats: LongPollStats = { parked: 0, woken: 0, refused: 0 };

  constructor(
    private readonly session: Session,
    readonly limits: LongPollLimits = DEFAULT_LONG_POLL,
  ) {
    this.clustered = session.interest.clustered;
    this.unsubscribe = session.changes.subscribe((e) => this.onChange(e));
  }

  /** Waits parked now. */
  get size(): number {
    return this.heap.length;
  }

  /** Key expressions watched now (parked on, being read, or lingering). */
  get watched(): number {
    return this.watches.size;
  }

  /**
   * Starts a long-poll read on `keyExpr`, before its answer is read: the ticket goes to `park`,
   * or to `release` when the GET is answered at once.
   */
  begin(keyExpr: string): LongPollTicket {
    let watch = this.watches.get(keyExpr);
    if (watch === undefined) {
      watch = new Watch(this, keyExpr);
      this.watches.set(keyExpr, watch);
      // On a router in a cluster a write made elsewhere publishes no change event here unless a
      // storage here holds its key: a subscriber hears it, as an SSE stream does. It is declared
      // before the read, so no write that the read misses can pass unheard.
      if (this.clustered) watch.sub = this.session.declareSubscriber(keyExpr, () => this.changed(watch!));
    } else if (watch.idleSince !== 0) {
      watch.idleSince = 0;
      this.idle.delete(keyExpr);
    }
    watch.readers++;
    return { watch, seen: watch.changes, done: false };
  }

  /** Ends a ticket whose GET was answered without parking. Idempotent. */
  release(ticket: LongPollTicket): void {
    if (ticket.done) return;
    ticket.done = true;
    ticket.watch.readers--;
    this.maybeIdle(ticket.watch);
  }

  /**
   * Parks `res` until `deadline` (`performance.now()` time): `reader.retry` runs once a matching
   * change lands or the time ends. When a change landed since the ticket began, the GET reads
   * again at once instead. Throws `unavailable` when a cap is reached (nothing is parked then).
   */
  park(
    ticket: LongPollTicket,
    address: string,
    req: IncomingMessage,
    res: ServerResponse,
    deadline: number,
    reader: LongPollReader,
  ): void {
    const { maxWaits, maxWaitsPerAddress } = this.limits;
    const mine = this.perAddress.get(address) ?? 0;
    if (this.heap.length >= maxWaits || mine >= maxWaitsPerAddress) {
      this.stats.refused++;
      throw new ZestError(
        "unavailable",
        mine >= maxWaitsPerAddress
          ? `too many long-polls from ${address} (at most ${maxWaitsPerAddress}); retry later`
          : `too many long-polls on this router (at most ${maxWaits}); retry later`,
      );
    }
    const { watch, seen } = ticket;
    const wait = new Wait(watch, address, req, res, deadline, reader);
    ticket.done = true;
    watch.readers--;
    this.perAddress.set(address, mine + 1);
    watch.waits.add(wait);
    this.push(wait);
    this.stats.parked++;
    const known = PARKED.get(res);
    PARKED.set(res, wait);
    // A client that leaves frees its wait at once (`close` fires once per response; a GET may
    // park several times, with one listener).
    if (known === undefined) res.on("close", onResponseClose);
    if (watch.changes !== seen) this.wake(wait);
  }

  private onChange(e: ChangeEvent): void {
    if (this.watches.size === 0) return;
    if (e.kind === "declaration" || isWild(e.key)) {
      for (const w of this.watches.values()) this.changed(w);
      return;
    }
    const exact = this.watches.get(e.key);
    if (exact !== undefined) this.changed(exact);
    for (const w of this.watches.values())
      if (w !== exact && isWild(w.expr) && intersects(w.expr, e.key)) this.changed(w);
  }

  /** A change on `watch`'s expression: its waits read again. */
  private changed(watch: Watch): void {
    watch.changes++;
    for (const w of watch.waits) this.wake(w);
  }

  private wake(w: Wait): void {
    this.unpark(w);
    this.stats.woken++;
    if (this.woken.length === 0) setImmediate(flush, this);
    this.woken.push(w);
  }

  /** Reads the woken waits again, outside the change event (its listeners must be quick). */
  flushWoken(): void {
    const woken = this.woken;
    this.woken = [];
    for (const w of woken) if (!w.res.destroyed) w.reader.retry(w.req, w.res, w.deadline);
  }

  /** Takes `w` out of every index. */
  unpark(w: Wait): void {
    if (w.slot === -1) return;
    this.remove(w);
    const watch = w.watch;
    watch.waits.delete(w);
    const n = (this.perAddress.get(w.address) ?? 1) - 1;
    if (n === 0) this.perAddress.delete(w.address);
    else this.perAddress.set(w.address, n);
    if (PARKED.get(w.res) === w) PARKED.set(w.res, null);
    this.maybeIdle(watch);
  }

  /** A watch left without waits or readers is dropped, or lingers with its subscriber. */
  private maybeIdle(watch: Watch): void {
    if (watch.readers > 0 || watch.waits.size > 0) return;
    if (watch.sub === undefined) {
      this.watches.delete(watch.expr);
      return;
    }
    watch.idleSince = performance.now();
    this.idle.set(watch.expr, watch);
    if (this.idle.size > MAX_LINGERING) this.drop(this.idle.values().next().value!);
    if (this.sweeper === undefined) {
      this.sweeper = setInterval(sweep, LINGER_MS / 4, this);
      this.sweeper.unref();
    }
  }

  /** Drops the watches idle for longer than the linger time. */
  sweepIdle(): void {
    const old = performance.now() - LINGER_MS;
    for (const w of this.idle.values()) {
      if (w.idleSince > old) break; // insertion order: the rest are younger
      this.drop(w);
    }
    if (this.idle.size === 0 && this.sweeper !== undefined) {
      clearInterval(this.sweeper);
      this.sweeper = undefined;
    }
  }

  private drop(watch: Watch): void {
    this.idle.delete(watch.expr);
    this.watches.delete(watch.expr);
    watch.sub?.undeclare();
  }

  /** Ends the waits whose deadline passed; they read again (and answer `304` unless changed). */
  expire(): void {
    this.timer = undefined;
    this.timerAt = Number.POSITIVE_INFINITY;
    const now = performance.now();
    const heap = this.heap;
    while (heap.length > 0 && heap[0]!.deadline <= now) {
      const w = heap[0]!;
      this.unpark(w);
      if (!w.res.destroyed) w.reader.retry(w.req, w.res, w.deadline);
    }
    this.arm();
  }

  /** Stops listening; parked clients' connections are closed by the server. */
  close(): void {
    this.unsubscribe();
    for (const w of [...this.heap]) this.unpark(w);
    for (const w of [...this.watches.values()]) w.sub?.undeclare();
    this.watches.clear();
    this.idle.clear();
    this.woken = [];
    if (this.timer !== undefined) clearTimeout(this.timer);
    if (this.sweeper !== undefined) clearInterval(this.sweeper);
  }

  // ---- the deadline heap ----------------------------------------------------------------------

  private push(w: Wait): void {
    const heap = this.heap;
    w.slot = heap.length;
    heap.push(w);
    this.up(w.slot);
    if (w.deadline < this.timerAt) this.arm();
  }

  private remove(w: Wait): void {
    const heap = this.heap;
    const i = w.slot;
    const last = heap.pop()!;
    w.slot = -1;
    if (last !== w) {
      heap[i] = last;
      last.slot = i;
      this.down(i);
      this.up(last.slot);
    }
    // The timer stays set for a deadline that may be gone: `expire` then finds none due and re-arms.
  }

  /** Sets the timer for the earliest deadline. */
  private arm(): void {
    const first = this.heap[0];
    if (first === undefined || first.deadline === this.timerAt) return;
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timerAt = first.deadline;
    this.timer = setTimeout(expireDue, Math.max(0, Math.ceil(first.deadline - performance.now())), this);
  }

  private up(i: number): void {
    const heap = this.heap;
    const w = heap[i]!;
    while (i > 0) {
      const p = (i - 1) >> 1;
      const parent = heap[p]!;
      if (parent.deadline <= w.deadline) break;
      heap[i] = parent;
      parent.slot = i;
      i = p;
    }
    heap[i] = w;
    w.slot = i;
  }

  private down(i: number): void {
    const heap = this.heap;
    const n = heap.length;
    const w = heap[i]!;
    for (;;) {
      let c = 2 * i + 1;
      if (c >= n) break;
      if (c + 1 < n && heap[c + 1]!.deadline < heap[c]!.deadline) c++;
      const child = heap[c]!;
      if (child.deadline >= w.deadline) break;
      heap[i] = child;
      child.slot = i;
      i = c;
    }
    heap[i] = w;
    w.slot = i;
  }
}

/**
 * The wait each response is parked in now (null between two parkings): `onResponseClose`, one
 * listener shared by every response, finds it here.
 */
const PARKED = new WeakMap<ServerResponse, Wait | null>();

function onResponseClose(this: ServerResponse): void {
  const w = PARKED.get(this);
  if (w) w.watch.hub.unpark(w);
}

function flush(hub: LongPollHub): void {
  hub.flushWoken();
}

function expireDue(hub: LongPollHub): void {
  hub.expire();
}

function sweep(hub: LongPollHub): void {
  hub.sweepIdle();
}
