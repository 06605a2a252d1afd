import { intersects } from "../keyexpr/index.js";
import type { Reply } from "./reply.js";
import type { Sample } from "./sample.js";
import type { Selector } from "./selector.js";

/**
 * How the replies to one query are merged (Zenoh 1.x): `auto` is `latest`, or `none` when the
 * selector asks for a `_time` range; `none` keeps all; `monotonic` forwards a reply only when it
 * is newer than the last one forwarded for its key; `latest` keeps the newest per key and hands
 * them over when the query ends. Error replies are never consolidated.
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
 * `a` replaces `b` for one key: the newer timestamp wins; between replies that cannot be ordered
 * by timestamp (one or both without one, or equal), the later arrival wins, so a queryable that
 * answers a DELETE then a PUT for a key is read as the PUT.
 */
function replaces(a: Sample, b: Sample): boolean {
  if (a.timestamp && b.timestamp) return a.timestamp.compare(b.timestamp) >= 0;
  return true;
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
      if (
        prev === undefined ||
        (reply.sample.timestamp && prev.timestamp && reply.sample.timestamp.compare(prev.timestamp) > 0)
      ) {
        this.lastSent.set(key, reply.sample);
        this.sink(reply);
      }
    } else {
      const prev = this.held.get(key);
      if (prev === undefined || replaces(reply.sample, prev.sample)) this.held.set(key, reply);
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
