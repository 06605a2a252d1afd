import { intersects } from "../keyexpr/index.js";
import type { Reply } from "./reply.js";
import type { Sample } from "./sample.js";
import type { Selector } from "./selector.js";

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
