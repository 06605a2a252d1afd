import { randomBytes } from "node:crypto";
import { canonize, checkKeyExprLimits, DEFAULT_KEYEXPR_LIMITS, intersects, isWild, KeTrie, keyExprLimits, type KeyExprLimits } from "../keyexpr/index.js";
import { errorMessage, toZestError, ZestError } from "./errors.js";
import type { Fabric, FabricHost, QueryableInfo } from "./fabric.js";
import { silentLogger, type Logger } from "./log.js";
import { Query } from "./query.js";
import type { Consolidation, Reply } from "./reply.js";
import type { Sample } from "./sample.js";
import type { Selector } from "./selector.js";
import { HLC } from "./timestamp.js";
import { cancel, schedule } from "./deadlines.js";
import { sortInSlices } from "./slices.js";

const RESOLVED: Promise<void> = Promise.resolve();
const ROUTE_CACHE_MAX = 65_536;

/** A subscriber callback. A returned promise is awaited by the put: rejecting it fails the put. */
export type SampleHandler = (sample: Sample) => void | Promise<void>;
/** A queryable callback. The query is final when the returned promise settles. */
export type QueryHandler = (query: Query) => void | Promise<void>;

/** @internal a subscriber as the routing index holds it */
export interface SubscriberDecl {
  readonly key: string;
  readonly handler: SampleHandler;
  readonly owner: string;
}

/** @internal a queryable as the routing index holds it */
export interface QueryableDecl {
  readonly key: string;
  readonly handler: QueryHandler;
  readonly complete: boolean;
  /**
   * Answers with stored samples only, for keys its query matches (a storage): see
   * `Router.storagesOnly`; its replies are not matched against the query again.
   */
  readonly storage: boolean;
  readonly owner: string;
}

/** Options of a query. */
export interface QueryOptions {
  /** Milliseconds before the query gives up on late queryables (default: the router's, 10 s). */
  timeoutMs?: number;
  /** `latest` (default, unless `_time` is given) keeps the newest reply per key; `none` keeps all. */
  consolidation?: Consolidation;
}

/** Router construction options. */
export interface RouterOptions {
  /** Router id as hex (random 16 bytes by default); shown uppercase. */
  zid?: string;
  /** Default query timeout in milliseconds (10 000). */
  queryTimeoutMs?: number;
  fabric?: Fabric;
  logger?: Logger;
  /**
   * Size limits on every key expression that enters this router: API calls, REST paths, samples
   * and queries from other routers (default `DEFAULT_KEYEXPR_LIMITS`: 4096 bytes, 512 chunks).
   */
  keyExprLimits?: Partial<KeyExprLimits>;
}

/**
 * The router: one routing index of subscribers and queryables, a hybrid logical clock, and an
 * optional fabric to other routers. Sessions are handles onto it.
 */
export class Router {
  /** Router id, uppercase hex. */
  readonly zid: string;
  readonly hlc: HLC;
  readonly logger: Logger;
  readonly queryTimeoutMs: number;
  readonly fabric: Fabric | undefined;
  /** Size limits on the key expressions this router accepts. */
  readonly keyExprLimits: KeyExprLimits;
  private readonly subscribers = new KeTrie<SubscriberDecl>();
  private readonly queryablesIndex = new KeTrie<QueryableDecl>();
  private fabricStarted = false;
  private version = 0;
  /**
   * Matching subscribers per concrete key, as Zenoh caches data routes: a put on a known key
   * costs one Map lookup instead of a trie walk. Cleared whenever a subscriber comes or goes.
   */
  private readonly routes = new Map<string, SubscriberDecl[]>();

  constructor(options: RouterOptions = {}) {
    const zid = options.zid ?? randomBytes(16).toString("hex");
    if (!/^[0-9a-fA-F]{1,32}$/.test(zid) || zid.length % 2 !== 0) {
      throw ZestError.badRequest(`invalid router id "${zid}": expected 1 to 16 bytes of hex (an even number of digits)`);
    }
    this.zid = zid.toUpperCase();
    this.hlc = new HLC(this.zid);
    this.logger = options.logger ?? silentLogger;
    this.queryTimeoutMs = options.queryTimeoutMs ?? 10_000;
    this.fabric = options.fabric;
    this.keyExprLimits = keyExprLimits(options.keyExprLimits);
  }

  /** Joins the fabric, if any. */
  async start(): Promise<void> {
    if (this.fabric && !this.fabricStarted) {
      this.fabricStarted = true;
      await this.fabric.start(this.host());
    }
  }

  /** Leaves the fabric. */
  async close(): Promise<void> {
    if (this.fabric && this.fabricStarted) {
      this.fabricStarted = false;
      await this.fabric.close();
    }
  }

  /**
   * A counter that moves whenever what a query could answer may have changed: a write routed
   * through here (before delivery and again once stored), a sample from another router, a
   * declaration. Read caches compare it; it says nothing about writes other routers did not send.
   */
  get dataVersion(): number {
    return this.version;
  }

  /** Marks the data as changed (storages call it after applying a write). */
  touch(): void {
    this.version++;
  }

  /** @internal */
  addSubscriber(decl: SubscriberDecl): void {
    this.subscribers.add(decl.key, decl);
    this.routes.clear();
    this.version++;
    this.fabric?.declarationsChanged();
  }
  /** @internal */
  removeSubscriber(decl: SubscriberDecl): void {
    this.version++;
    this.routes.clear();
    if (this.subscribers.delete(decl.key, decl)) this.fabric?.declarationsChanged();
  }
  /** @internal */
  addQueryable(decl: QueryableDecl): void {
    this.queryablesIndex.add(decl.key, decl);
    this.version++;
    this.fabric?.declarationsChanged();
  }
  /** @internal */
  removeQueryable(decl: QueryableDecl): void {
    this.version++;
    if (this.queryablesIndex.delete(decl.key, decl)) this.fabric?.declarationsChanged();
  }

  /**
   * True when a subscriber on this router, or one another router announced through the fabric,
   * matches `key`: a write there is taken by someone (the REST layer refuses admin writes that
   * nobody takes).
   */
  hasSubscriber(key: string): boolean {
    return this.matchingSubscribers(key).length > 0 || (this.fabric?.hasSubscriber?.(key) ?? false);
  }

  /**
   * True when every queryable a query on `key` reaches is a storage on this router (declared
   * with `storage: true`), so its answer changes only through writes and declarations, which
   * move `dataVersion`. Evals, the admin space and other routers may answer differently at any
   * time, timestamped or not.
   */
  storagesOnly(key: string): boolean {
    if (this.fabric) return false;
    for (const q of this.queryablesIndex.intersecting(key)) if (!q.storage) return false;
    return true;
  }

  /** Number of subscribers declared on this router. */
  get subscriberCount(): number {
    return this.subscribers.size;
  }

  /**
   * Routes a local sample to every matching subscriber here and, through the fabric, elsewhere.
   * Resolves when every acknowledging subscriber (storages, the admin space) has it; rejects with
   * the first of their errors.
   */
  route(sample: Sample): Promise<void> {
    this.version++;
    const pending = this.deliver(sample);
    if (this.fabric) pending.push(this.fabric.publish(sample));
    if (pending.length === 0) {
      this.version++;
      return RESOLVED;
    }
    // Again once stored: a read that ran while the write was in flight must not be kept.
    return (pending.length === 1 ? pending[0]! : Promise.all(pending)).then(
      () => {
        this.version++;
      },
      (err: unknown) => {
        this.version++;
        throw err;
      },
    );
  }

  private matchingSubscribers(key: string): SubscriberDecl[] {
    let subs = this.routes.get(key);
    if (subs === undefined) {
      subs = this.subscribers.intersecting(key);
      if (!isWild(key)) {
        // Bounded: a stream of distinct keys must not grow the cache without end.
        if (this.routes.size >= ROUTE_CACHE_MAX) this.routes.clear();
        this.routes.set(key, subs);
      }
    }
    return subs;
  }

  private deliver(sample: Sample): Promise<void>[] {
    const pending: Promise<void>[] = [];
    for (const sub of this.matchingSubscribers(sample.key)) {
      try {
        const r = sub.handler(sample);
        if (r) pending.push(r);
      } catch (err) {
        this.logger.error({ key: sample.key, subscriber: sub.key, err: errorMessage(err) }, "subscriber failed");
      }
    }
    return pending;
  }

  /**
   * Runs a query against every matching queryable, here and elsewhere, and returns the
   * consolidated replies sorted by key. Queryables that miss the timeout add an error reply
   * (kind `timeout`); the replies that did arrive are kept.
   */
  async query(selector: Selector, options: QueryOptions = {}): Promise<Reply[]> {
    const timeoutMs = options.timeoutMs ?? this.queryTimeoutMs;
    const consolidation = options.consolidation ?? (selector.parameters.has("_time") ? "none" : "latest");
    const collector = new ReplyCollector(selector, consolidation);
    const onReply = (r: Reply, matched?: boolean): void => collector.add(r, matched);
    const tasks: Promise<void>[] = [this.answerLocal(selector, timeoutMs, onReply)];
    if (this.fabric) tasks.push(this.fabric.query(selector, timeoutMs, onReply));
    await Promise.all(tasks);
    return await collector.result();
  }

  /**
   * Runs the local queryables only (also what remote routers get). `onReply` learns, with
   * `matched`, that a reply comes from a storage, whose index already matched its key.
   */
  private answerLocal(selector: Selector, timeoutMs: number, onReply: (r: Reply, matched?: boolean) => void): Promise<void> {
    const matching = this.queryablesIndex.intersecting(selector.key);
    if (matching.length === 0) return Promise.resolve();
    const queries: Query[] = [];
    const fromStorage = (r: Reply): void => onReply(r, true);
    const runs = matching.map((q) => {
      const query = new Query(selector, q.storage ? fromStorage : onReply);
      queries.push(query);
      return runQueryable(q, query, this.logger).finally(() => query.finish());
    });
    return new Promise<void>((resolve) => {
      let left = runs.length;
      const deadline = schedule(timeoutMs, () => {
        for (let i = 0; i < queries.length; i++) {
          const q = queries[i]!;
          if (q.finished) continue;
          q.replyErr(`Timeout: queryable on ${matching[i]!.key} did not answer within ${timeoutMs} ms`, { errorKind: "timeout" });
          q.finish();
        }
        resolve();
      });
      for (const run of runs) {
        void run.then(() => {
          if (--left === 0) {
            cancel(deadline);
            resolve();
          }
        });
      }
    });
  }

  /** The router as its fabric sees it. */
  private host(): FabricHost {
    return {
      zid: this.zid,
      deliverRemote: async (sample) => {
        // Another router may run with other limits; what it sends is held to ours.
        checkLimits(sample.key, this.keyExprLimits);
        if (sample.timestamp) this.hlc.observe(sample.timestamp);
        this.version++;
        const pending = this.deliver(sample);
        try {
          if (pending.length > 0) await Promise.all(pending);
        } finally {
          this.version++;
        }
      },
      answerRemote: (selector, timeoutMs, onReply) => {
        try {
          checkLimits(selector.key, this.keyExprLimits);
        } catch (err) {
          return Promise.reject(err);
        }
        return this.answerLocal(selector, timeoutMs, onReply);
      },
      subscriberKeys: () => [...new Set(this.subscribers.keys())],
      queryables: () => {
        const byKey = new Map<string, QueryableInfo>();
        for (const key of this.queryablesIndex.keys()) {
          const complete = this.queryablesIndex.including(key).some((q) => q.key === key && q.complete);
          byKey.set(key, { key, complete });
        }
        return [...byKey.values()];
      },
    };
  }
}

async function runQueryable(decl: QueryableDecl, query: Query, logger: Logger): Promise<void> {
  try {
    await decl.handler(query);
  } catch (err) {
    logger.warn({ key: query.key, queryable: decl.key, err: errorMessage(err) }, "queryable failed");
    query.replyError(err);
  }
}

/** Gathers replies and applies consolidation. */
class ReplyCollector {
  private readonly latest = new Map<string, Reply & { kind: "ok" }>();
  private readonly all: Reply[] = [];
  private readonly errors: Reply[] = [];

  constructor(
    private readonly selector: Selector,
    private readonly consolidation: Consolidation,
  ) {}

  /** `matched`: the key is known to match the query (a storage's reply), so it is not checked again. */
  add(reply: Reply, matched = false): void {
    if (reply.kind === "err") {
      this.errors.push(reply);
      return;
    }
    const key = reply.sample.key;
    // Replies for keys outside the query are dropped (as Zenoh does), unless `_anyke` is given.
    if (!matched && key !== this.selector.key && !this.selector.parameters.has("_anyke") && !intersects(this.selector.key, key)) return;
    if (this.consolidation === "none") {
      this.all.push(reply);
      return;
    }
    const prev = this.latest.get(key);
    if (!prev || newer(reply.sample, prev.sample)) this.latest.set(key, reply);
  }

  /** The replies sorted by key; a large answer is sorted in slices (other requests run meanwhile). */
  async result(): Promise<Reply[]> {
    const ok = this.consolidation === "none" ? this.all : [...this.latest.values()];
    // Stable sort: within one key, `none` keeps arrival order.
    await sortInSlices(ok, byKey);
    return this.errors.length === 0 ? ok : [...ok, ...this.errors];
  }
}

function byKey(a: Reply, b: Reply): number {
  const ka = (a as { sample: Sample }).sample.key;
  const kb = (b as { sample: Sample }).sample.key;
  return ka < kb ? -1 : ka > kb ? 1 : 0;
}

/** A reply with a timestamp beats one without; between two without, the first wins. */
function newer(a: Sample, b: Sample): boolean {
  if (!a.timestamp) return false;
  if (!b.timestamp) return true;
  return a.timestamp.compare(b.timestamp) > 0;
}

/** Throws a ZestError (`too_long`, or `bad_input` for too many chunks) when `ke` breaks `limits`. */
function checkLimits(ke: string, limits: KeyExprLimits): void {
  try {
    checkKeyExprLimits(ke, limits);
  } catch (err) {
    throw toZestError(err);
  }
}

/**
 * Canonizes a user-given key expression held to `limits`; throws a ZestError: `bad_input`
 * naming the broken rule, `too_long` past the length limit, `bad_input` past the chunk limit.
 */
export function toKeyExpr(ke: string | { toString(): string }, limits: KeyExprLimits = DEFAULT_KEYEXPR_LIMITS): string {
  const s = ke.toString();
  // Checked before canonizing, so canonization's cost is bounded too.
  checkLimits(s, limits);
  const known = canonical.get(s);
  if (known !== undefined) {
    if (known.length > s.length) checkLimits(known, limits);
    return known;
  }
  let c: string;
  try {
    c = canonize(s);
  } catch (err) {
    throw toZestError(err);
  }
  // Canonizing can lengthen (an in-chunk `*` becomes `$*`).
  if (c.length > s.length) checkLimits(c, limits);
  // Bounded: a stream of distinct keys must not grow it without end.
  if (canonical.size >= CANONICAL_CACHE_MAX) canonical.clear();
  canonical.set(s, c);
  return c;
}

/** Recently canonized key expressions: hot keys are written (and validated) again and again. */
const canonical = new Map<string, string>();
const CANONICAL_CACHE_MAX = 4096;
