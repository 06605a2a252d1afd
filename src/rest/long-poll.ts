/**
 * Parked long-poll GETs (docs/long-poll.md): a `GET ?_wait=<duration>` whose `If-None-Match`
 * still matches the answer waits here until a change event on an intersecting key (or a
 * declaration) asks it to read again, or until its duration ends. Waits are bounded in count per
 * client address and in all, and a client that goes away frees its wait at once.
 */
import type { ServerResponse } from "node:http";
import { ZestError } from "../core/errors.js";
import type { ChangeEvent, ChangeFeed } from "../core/ports.js";
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

/** One parked GET. */
class Wait {
  timer: NodeJS.Timeout | undefined;
  parked = true;
  constructor(
    readonly keyExpr: string,
    readonly address: string,
    readonly res: ServerResponse,
    /** Reads again: answers, or parks anew while the ETag still matches. */
    readonly retry: () => void,
  ) {}
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
  /** Waits by key expression: a change is matched once per distinct expression, not per wait. */
  private readonly byExpr = new Map<string, Set<Wait>>();
  private readonly perAddress = new Map<string, number>();
  private readonly byResponse = new Map<ServerResponse, Wait>();
  /** Woken waits, read again together after the change event's turn. */
  private woken: Wait[] = [];
  private readonly unsubscribe: () => void;
  readonly stats: LongPollStats = { parked: 0, woken: 0, refused: 0 };

  constructor(
    changes: ChangeFeed,
    readonly limits: LongPollLimits = DEFAULT_LONG_POLL,
  ) {
    this.unsubscribe = changes.subscribe((e) => this.onChange(e));
  }

  /** Waits parked now. */
  get size(): number {
    return this.byResponse.size;
  }

  /**
   * Parks `res` on `keyExpr` for `ms`: `retry` runs once a matching change lands or the time
   * ends. Throws `unavailable` when a cap is reached (nothing is parked then).
   */
  park(keyExpr: string, address: string, res: ServerResponse, ms: number, retry: () => void): void {
    const { maxWaits, maxWaitsPerAddress } = this.limits;
    const mine = this.perAddress.get(address) ?? 0;
    if (this.byResponse.size >= maxWaits || mine >= maxWaitsPerAddress) {
      this.stats.refused++;
      throw new ZestError(
        "unavailable",
        mine >= maxWaitsPerAddress
          ? `too many long-polls from ${address} (at most ${maxWaitsPerAddress}); retry later`
          : `too many long-polls on this router (at most ${maxWaits}); retry later`,
      );
    }
    const wait = new Wait(keyExpr, address, res, retry);
    let set = this.byExpr.get(keyExpr);
    if (set === undefined) {
      set = new Set();
      this.byExpr.set(keyExpr, set);
    }
    set.add(wait);
    this.perAddress.set(address, mine + 1);
    this.byResponse.set(res, wait);
    this.stats.parked++;
    wait.timer = setTimeout(expire, ms, this, wait);
    // A client that leaves frees its wait at once (`close` fires once per response).
    if (!LISTENING.has(res)) {
      LISTENING.add(res);
      res.once("close", () => this.unpark(this.byResponse.get(res)));
    }
  }

  private onChange(e: ChangeEvent): void {
    if (this.byExpr.size === 0) return;
    const exact = this.byExpr.get(e.key);
    const everything = e.kind === "declaration" || isWild(e.key);
    for (const [expr, set] of this.byExpr) {
      if (set !== exact && !everything && !(isWild(expr) && intersects(expr, e.key))) continue;
      for (const w of set) this.wake(w);
    }
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
    for (const w of woken) if (!w.res.destroyed) w.retry();
  }

  /** Takes `w` out of every index; its timer stops. */
  unpark(w: Wait | undefined): void {
    if (w === undefined || !w.parked) return;
    w.parked = false;
    clearTimeout(w.timer);
    const set = this.byExpr.get(w.keyExpr);
    if (set !== undefined) {
      set.delete(w);
      if (set.size === 0) this.byExpr.delete(w.keyExpr);
    }
    const n = (this.perAddress.get(w.address) ?? 1) - 1;
    if (n === 0) this.perAddress.delete(w.address);
    else this.perAddress.set(w.address, n);
    if (this.byResponse.get(w.res) === w) this.byResponse.delete(w.res);
  }

  /** Stops listening; parked clients' connections are closed by the server. */
  close(): void {
    this.unsubscribe();
    for (const w of [...this.byResponse.values()]) this.unpark(w);
    this.woken = [];
  }
}

/** Responses that already carry the hub's `close` listener (a GET may park several times). */
const LISTENING = new WeakSet<ServerResponse>();

function expire(hub: LongPollHub, w: Wait): void {
  hub.unpark(w);
  if (!w.res.destroyed) w.retry();
}

function flush(hub: LongPollHub): void {
  hub.flushWoken();
}
