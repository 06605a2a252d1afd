import { intersects } from "../keyexpr/index.js";
import type { Reply } from "./reply.js";
import type { Sample } from "./sample.js";
import type { Selector } from "./selector.js";
import { Slice, sortInSlices } from "./slices.js";

/**
 * How the replies to one query are merged (Zenoh 1.x): `auto` is `latest`, or `none` when the
 * selector asks for a `_time` range; `none` keeps all; `monotonic` forwards a reply when it is no
 * older (`noOlder`) than the last one forwarded for its key; `latest` keeps the newest per key
 * (the later of two the timestamps cannot order) and hands them over when the query ends. Error
 * replies are never consolidated.
 */
export type ConsolidationMode = "auto" | "none" | "monotonic" | "latest";

/** `auto` resolved for this selector. */
export function resolveConsolidation(
  mode: ConsolidationMode | undefined,
  selector: Selector,
): Exclude<ConsolidationMode, "auto"> {
  if (mode === undefined || mode === "auto") return selector.parameters.has("_time") ? "none" : "latest";
  return mode;
}

/** True when a reply for `key` may answer the query (Zenoh drops others unless `_anyke` is given). */
export function replyKeyAccepted(selector: Selector, key: string): boolean {
  return key === selector.key || selector.parameters.has("_anyke") || intersects(selector.key, key);
}

/**
 * True when `a` is no older than `b`, in zenoh's order of reply timestamps: a reply without a
 * timestamp comes before any reply with one, and two without one are equal. zenoh's session
 * compares the two `Option<Timestamp>` with `>=`, in both `monotonic` (forward when no older)
 * and `latest` (replace when no older): so between replies the timestamps cannot tell apart,
 * the later arrival wins, and a queryable answering a DELETE then a PUT for one key, neither
 * stamped, has its PUT forwarded (docs/remote-api.md, "Consolidation").
 */
export function noOlder(a: Sample, b: Sample): boolean {
  if (!b.timestamp) return true;
  if (!a.timestamp) return false;
  return a.timestamp.compare(b.timestamp) >= 0;
}

/**
 * Applies consolidation to replies as they arrive and passes them on (the remote API streams
 * replies to its clients). Call `end()` once the query is over: it hands over the replies
 * `latest` held back, then the timeout errors, as Zenoh does.
 */
export class StreamConsolidator {
  private readonly held = new Map<string, Reply & { kind: "ok" }>();
  private readonly lastSent = new Map<string, Sample>();
  private readonly timeouts: Reply[] = [];
  private ended = false;

  constructor(
    private readonly selector: Selector,
    private readonly mode: Exclude<ConsolidationMode, "auto">,
    private readonly sink: (reply: Reply) => void,
  ) {}

  add(reply: Reply): void {
    if (this.ended) return;
    if (reply.kind === "err") {
      if (reply.errorKind === "timeout" && this.mode === "latest") this.timeouts.push(reply);
      else this.sink(reply);
      return;
    }
    const key = reply.sample.key;
    if (!replyKeyAccepted(this.selector, key)) return;
    if (this.mode === "none") {
      this.sink(reply);
    } else if (this.mode === "monotonic") {
      const prev = this.lastSent.get(key);
      if (prev === undefined || noOlder(reply.sample, prev)) {
        this.lastSent.set(key, reply.sample);
        this.sink(reply);
      }
    } else {
      const prev = this.held.get(key);
      if (prev === undefined || noOlder(reply.sample, prev.sample)) this.held.set(key, reply);
    }
  }

  /** The query is over: flush what `latest` held, then the timeout errors. Later replies are dropped. */
  end(): void {
    if (this.ended) return;
    this.ended = true;
    for (const r of this.held.values()) this.sink(r);
    for (const r of this.timeouts) this.sink(r);
    this.held.clear();
    this.lastSent.clear();
  }
}

/**
 * Gathers replies and applies consolidation. Replies are kept in arrival order and consolidated
 * at the end: a stable sort by key (skipped when they came in order), then, for `latest`, one
 * pass that keeps the newest of each run of equal keys. No per-key Map: a storage's answer
 * (the common case, already one reply per key) costs one array slot per key.
 */
export class ReplyCollector {
  private readonly ok: Array<Reply & { kind: "ok" }> = [];
  private readonly errors: Reply[] = [];

  constructor(
    private readonly selector: Selector,
    private readonly consolidation: "latest" | "none",
  ) {}

  /** `matched`: the key is known to match the query (a storage's reply), so it is not checked again. */
  add(reply: Reply, matched = false): void {
    if (reply.kind === "err") {
      this.errors.push(reply);
      return;
    }
    const key = reply.sample.key;
    // Replies for keys outside the query are dropped (as Zenoh does), unless `_anyke` is given.
    if (
      !matched &&
      key !== this.selector.key &&
      !this.selector.parameters.has("_anyke") &&
      !intersects(this.selector.key, key)
    )
      return;
    this.ok.push(reply);
  }

  /** The replies sorted by key, errors last; a large answer is sorted in slices (other requests run meanwhile). */
  async result(): Promise<Reply[]> {
    const ok: Reply[] = this.ok;
    // Stable sort: within one key, arrival order is kept (`none` shows it, `latest` breaks ties by it).
    await sortInSlices(ok, byKey);
    if (this.consolidation === "latest") await keepNewest(this.ok);
    for (const e of this.errors) ok.push(e);
    return ok;
  }

  /**
   * `result()` at once, without a promise, when the answer is small enough to consolidate in one
   * go (`result()` would not slice it either); undefined for a larger one. A one-key GET through
   * another router consolidates one reply per holder: an async sort and pass cost it several
   * microtask turns and promises on the critical path.
   */
  resultNow(): Reply[] | undefined {
    const ok: Reply[] = this.ok;
    if (ok.length > SYNC_MAX) return undefined;
    if (ok.length > 1) {
      ok.sort(byKey);
      if (this.consolidation === "latest") keepNewestNow(this.ok);
    }
    for (const e of this.errors) ok.push(e);
    return ok;
  }
}

/** Most replies `resultNow` consolidates at once: far below where `sortInSlices` slices (2,048). */
const SYNC_MAX = 256;

/** `keepNewest` in one go, for a short array. */
function keepNewestNow(sorted: Array<Reply & { kind: "ok" }>): void {
  let w = 0;
  for (const r of sorted) w = keepInto(sorted, w, r);
  sorted.length = w;
}

/** One step of `keepNewest`: `r` joins the `w` replies kept so far; returns how many are kept now. */
function keepInto(sorted: Array<Reply & { kind: "ok" }>, w: number, r: Reply & { kind: "ok" }): number {
  if (w > 0 && sorted[w - 1]!.sample.key === r.sample.key) {
    if (newer(r.sample, sorted[w - 1]!.sample)) sorted[w - 1] = r;
    return w;
  }
  sorted[w] = r;
  return w + 1;
}

/**
 * Of each run of replies with the same key (in `sorted`, sorted stably by key), keeps the newest
 * (`newer`; on a tie the first to arrive), in place. A pass over the keys, in slices.
 */
async function keepNewest(sorted: Array<Reply & { kind: "ok" }>): Promise<void> {
  const n = sorted.length;
  const slice = new Slice();
  let w = 0;
  for (let i = 0; i < n; i++) {
    w = keepInto(sorted, w, sorted[i]!);
    if (slice.due()) await slice.next();
  }
  sorted.length = w;
}

function byKey(a: Reply, b: Reply): number {
  const ka = (a as { sample: Sample }).sample.key;
  const kb = (b as { sample: Sample }).sample.key;
  return ka < kb ? -1 : ka > kb ? 1 : 0;
}

/** A reply with a timestamp beats one without; between two without, the first wins. */
export function newer(a: Sample, b: Sample): boolean {
  if (!a.timestamp) return false;
  if (!b.timestamp) return true;
  return a.timestamp.compare(b.timestamp) > 0;
}
