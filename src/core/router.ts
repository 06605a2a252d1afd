import { SETTLED } from "./settled.js";
import { randomBytes } from "node:crypto";
import { isWild, KeTrie, keyExprLimits, type KeyExprLimits } from "../keyexpr/index.js";
import { errorMessage, ZestError } from "./errors.js";
import type { DeclarationKind, Fabric, FabricHost, JoinedNetwork, QueryableInfo, RemoteDeclaration } from "./fabric.js";
import { silentLogger, type Logger } from "./log.js";
import { newer, ReplyCollector, resolveConsolidation, StreamConsolidator } from "./consolidate.js";
import { checkLimits } from "./key.js";
import { Liveliness } from "./liveliness.js";
import { Leases } from "./leases.js";
import { Encoding } from "./encoding.js";
import { Buffer } from "node:buffer";
import { FROM_ANOTHER_ROUTER, type Locality, localityMatches, type Origin } from "./locality.js";
import { Query, type QueryContent, QueryRound } from "./query.js";
import { type QueryTarget, selectQueryables } from "./query-target.js";
import type { Consolidation, Reply } from "./reply.js";
import { ChangeFeed, type Connectivity } from "./ports.js";
import { makeSample, type Sample, type WriteCondition } from "./sample.js";
import { Parameters, type Selector } from "./selector.js";
import { HLC, idFromZenohId, idToZenohId } from "./timestamp.js";
import { cancel, type Deadline, schedule } from "./deadlines.js";

const EMPTY = Buffer.alloc(0);
const ROUTE_CACHE_MAX = 65_536;
/** The parameters of a default query (none): `Parameters` is read-only once parsed. */
const NO_PARAMETERS = new Parameters("");

/**
 * A subscriber callback. A returned promise is awaited by the put: rejecting it fails the put.
 * Storages (declared with `storage: true`) also get the write's condition, if any.
 */
export type SampleHandler = (sample: Sample, condition?: WriteCondition) => void | Promise<void>;
/** A queryable callback. The query is final when the returned promise settles. */
export type QueryHandler = (query: Query) => void | Promise<void>;

/** @internal a subscriber as the routing index holds it */
export interface SubscriberDecl {
  readonly key: string;
  readonly handler: SampleHandler;
  readonly owner: string;
  /** A storage: the only subscribers a conditional write reaches before it is accepted. */
  readonly storage?: boolean;
  /** A storage's shared store (`StorageBackend.store`): see docs/conditional-writes.md, "Shared stores". */
  readonly store?: string;
  /** `Session.id` of the declaring session (locality). */
  readonly sessionId?: number;
  /** Which senders it hears (default any). */
  readonly allowedOrigin?: Locality;
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
  /** `Session.id` of the declaring session (locality). */
  readonly sessionId?: number;
  /** Which queriers it answers (default any). */
  readonly allowedOrigin?: Locality;
  /**
   * A storage's synchronous read of one plain key: its stored value, or null when it holds none
   * (see `Router.readStored`).
   */
  readonly peek?: (key: string) => Sample | null;
  /**
   * A storage's answer to a default query on a key expression, in batches sorted by key (see
   * `Router.scanStored`).
   */
  readonly scan?: (keyExpr: string) => AsyncIterable<readonly Sample[]>;
}

/** Where a query's replies go; `matched`: a storage's reply, whose key its index already matched. */
type ReplySink = (r: Reply, matched?: boolean) => void;

/** The end of a query: called once, with the error when it failed. */
export type QueryEnd = (err?: unknown) => void;

/** A `QueryEnd` that settles a promise. */
function settleWith(resolve: () => void, reject: (err: unknown) => void): QueryEnd {
  return (err) => (err === undefined ? resolve() : reject(err));
}

/** Options of a query. */
export interface QueryOptions {
  /** Milliseconds before the query gives up on late queryables (default: the router's, 10 s). */
  timeoutMs?: number;
  /** `latest` (default, unless `_time` is given) keeps the newest reply per key; `none` keeps all. */
  consolidation?: Consolidation;
  /** Which queryables it reaches (default `all`; Zenoh clients default to `best_matching`). */
  target?: QueryTarget;
  /** The querying session and where the query may go (set by `Session`). */
  origin?: Origin;
  /** Payload, encoding and attachment handed to the queryables on this router. */
  content?: QueryContent;
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
  /** A zenoh network this router joined (set by the zenoh door's joiner), for what crosses the fabric. */
  joinedNetwork: JoinedNetwork | undefined;
  /** Change events: storages publish their applied writes, the router its declarations. */
  readonly changes = new ChangeFeed();
  /** Size limits on the key expressions this router accepts. */
  readonly keyExprLimits: KeyExprLimits;
  private readonly subscribers = new KeTrie<SubscriberDecl>();
  /** The storages of shared stores among `subscribers` (`SubscriberDecl.store`), declared apart. */
  private readonly storeSubscribers = new Set<SubscriberDecl>();
  private readonly queryablesIndex = new KeTrie<QueryableDecl>();
  private fabricStarted = false;
  /**
   * Matching subscribers per concrete key, as Zenoh caches data routes: a put on a known key
   * costs one Map lookup instead of a trie walk. Cleared whenever a subscriber comes or goes.
   */
  private readonly routes = new Map<string, SubscriberDecl[]>();
  /** The plain key routed last and its subscribers: a publisher's writes repeat one key (no hash lookup then). */
  private lastRouteKey: string | undefined;
  private lastRoute: SubscriberDecl[] = [];
  /** Plain key → its queryables' `peek`s when all of them can (null: some cannot); see `readStored`. Cleared on any queryable declaration. */
  private readonly peeks = new Map<string, Array<(key: string) => Sample | null> | null>();
  /** Liveliness tokens and subscribers of this router. */
  readonly liveliness: Liveliness;
  /** Leases granted on this router (docs/ttl-and-leases.md). */
  readonly leases: Leases;
  private readonly declarationListeners = new Set<() => void>();

  constructor(options: RouterOptions = {}) {
    const zid = options.zid ?? randomBytes(16).toString("hex");
    if (!/^[0-9a-fA-F]{1,32}$/.test(zid) || zid.length % 2 !== 0) {
      throw ZestError.badRequest(
        `invalid router id "${zid}": expected 1 to 16 bytes of hex (an even number of digits)`,
      );
    }
    // Canonical form (no leading zero bytes): the form zenoh prints and peers read off the wire.
    this.zid = idFromZenohId(idToZenohId(zid));
    this.hlc = new HLC(this.zid);
    this.logger = options.logger ?? silentLogger;
    this.queryTimeoutMs = options.queryTimeoutMs ?? 10_000;
    this.fabric = options.fabric;
    this.keyExprLimits = keyExprLimits(options.keyExprLimits);
    // Other routers learn this router's token keys with its declarations (docs/fabric-protocol.md).
    this.liveliness = new Liveliness(this.logger, () => this.fabric?.declarationsChanged());
    this.leases = new Leases((keys, id) => this.deleteLeased(keys, id));
  }

  /** Deletes the keys of a lease that ended, each with a fresh timestamp, everywhere. */
  private deleteLeased(keys: readonly string[], leaseId: string): void {
    this.logger.debug({ lease: leaseId, keys: keys.length }, "lease ended: deleting its keys");
    for (const key of keys) {
      const sample = makeSample(key, "delete", EMPTY, Encoding.EMPTY, this.hlc.newTimestamp());
      this.route(sample).catch((err: unknown) =>
        this.logger.warn({ key, lease: leaseId, err: errorMessage(err) }, "deleting a leased key failed"),
      );
    }
  }

  /**
   * Calls `listener` whenever a subscriber or queryable comes or goes, here or (as the fabric
   * learns it) on another router. Returns the function that stops it.
   */
  onDeclarationsChanged(listener: () => void): () => void {
    this.declarationListeners.add(listener);
    return () => void this.declarationListeners.delete(listener);
  }

  /** The connectivity port front doors are handed (peers, where links go, change notification). */
  connectivity(): Connectivity {
    return {
      peers: () => this.fabric?.peers?.() ?? [],
      server: () => {
        const server = this.fabric?.status().detail?.server;
        return typeof server === "string" ? server : undefined;
      },
      onChange: (listener) => this.onDeclarationsChanged(listener),
    };
  }

  private declarationsChanged(): void {
    for (const l of this.declarationListeners) l();
  }

  /**
   * True when a subscriber (`kind` subscribers) or queryable reachable from `origin` matches
   * `key`, here or on another router (matching status).
   */
  hasMatching(kind: "subscribers" | "queryables", key: string, origin: Origin, target: QueryTarget = "all"): boolean {
    if (kind === "subscribers") {
      if (this.subscribers.intersecting(key).some((s) => localityMatches(origin, s.sessionId, s.allowedOrigin)))
        return true;
      return origin.destination !== "session_local" && (this.fabric?.hasSubscriber?.(key) ?? false);
    }
    if (selectQueryables(this.queryablesIndex.intersecting(key), key, target, origin).selected.length > 0) return true;
    if (origin.destination === "session_local" || !this.fabric) return false;
    return target === "all_complete"
      ? (this.fabric.completeQueryables?.(key).length ?? 0) > 0
      : (this.fabric.hasQueryable?.(key) ?? false);
  }

  /**
   * The key expressions of the subscribers (or queryables) reachable from `origin` that
   * intersect `key`: this router's, and `key` itself when another router has one (the fabric
   * tells whether, not which; left out without `withFabric`). What a zenoh INTEREST is answered
   * with (docs/zenoh-protocol.md).
   */
  matchingDeclarationKeys(
    kind: "subscribers" | "queryables",
    key: string,
    origin: Origin,
    withFabric = true,
  ): string[] {
    const index: KeTrie<SubscriberDecl | QueryableDecl> =
      kind === "subscribers" ? this.subscribers : this.queryablesIndex;
    const keys = new Set<string>();
    for (const d of index.intersecting(key)) if (localityMatches(origin, d.sessionId, d.allowedOrigin)) keys.add(d.key);
    if (withFabric && origin.destination !== "session_local" && this.fabric) {
      const remote = kind === "subscribers" ? this.fabric.hasSubscriber?.(key) : this.fabric.hasQueryable?.(key);
      if (remote) keys.add(key);
    }
    return [...keys];
  }

  /**
   * The queryables reachable from `origin` that intersect `key`, by key expression, each with
   * whether one there is complete (zenoh's queryable info, merged per key as zenohd merges it: a
   * key is complete when any of its queryables is). Another router's count as `key` itself,
   * complete when the fabric knows a complete one including it (left out without `withFabric`).
   * What a zenoh INTEREST in queryables is answered with (docs/zenoh-protocol.md).
   */
  matchingQueryableInfos(key: string, origin: Origin, withFabric = true): Map<string, boolean> {
    const infos = new Map<string, boolean>();
    for (const d of this.queryablesIndex.intersecting(key)) {
      if (!localityMatches(origin, d.sessionId, d.allowedOrigin)) continue;
      infos.set(d.key, infos.get(d.key) === true || d.complete);
    }
    if (withFabric && origin.destination !== "session_local" && this.fabric?.hasQueryable?.(key)) {
      const complete = (this.fabric.completeQueryables?.(key).length ?? 0) > 0;
      infos.set(key, infos.get(key) === true || complete);
    }
    return infos;
  }

  /**
   * The declarations of `kind` other routers of the fabric announced that intersect `key`, each
   * with its router (and completeness); undefined when the fabric cannot tell which (only whether).
   */
  remoteDeclarations(key: string, kind: DeclarationKind): readonly RemoteDeclaration[] | undefined {
    if (!this.fabric) return [];
    return this.fabric.declarations?.(key, kind);
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
    this.leases.close();
    if (this.fabric && this.fabricStarted) {
      this.fabricStarted = false;
      await this.fabric.close();
    }
  }

  /** @internal */
  addSubscriber(decl: SubscriberDecl): void {
    this.subscribers.add(decl.key, decl);
    if (decl.store !== undefined) this.storeSubscribers.add(decl);
    this.forgetRoutes();
    this.declared(decl.key, false);
  }
  /** @internal */
  removeSubscriber(decl: SubscriberDecl): void {
    this.forgetRoutes();
    this.storeSubscribers.delete(decl);
    if (this.subscribers.delete(decl.key, decl)) this.declared(decl.key, false);
  }
  /** @internal */
  addQueryable(decl: QueryableDecl): void {
    this.queryablesIndex.add(decl.key, decl);
    this.peeks.clear();
    this.declared(decl.key);
  }
  /** @internal */
  removeQueryable(decl: QueryableDecl): void {
    if (this.queryablesIndex.delete(decl.key, decl)) {
      this.peeks.clear();
      this.declared(decl.key);
    }
  }

  /**
   * A declaration changed. Only a queryable's changes what a query answers, so only it publishes
   * a change event (a subscriber's would send every long-poll to read again for nothing).
   */
  private declared(key: string, answers = true): void {
    if (answers) this.changes.publish({ key, kind: "declaration" });
    this.fabric?.declarationsChanged();
    this.declarationsChanged();
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
   * publish change events. Evals, the admin space and other routers may answer differently at any
   * time, timestamped or not.
   */
  storagesOnly(key: string): boolean {
    if (this.fabric) return false;
    for (const q of this.queryablesIndex.intersecting(key)) if (!q.storage) return false;
    return true;
  }

  /**
   * The answer a default query (no parameters, no payload, `latest` consolidation) on the plain
   * key `key` would get, read synchronously, when every queryable it reaches is a local storage
   * that can `peek` and answers any querier; undefined otherwise (the caller runs the query). A
   * GET of one stored key then skips building a query, its deadline and its collector.
   */
  readStored(key: string): Reply[] | undefined {
    if (this.fabric || isWild(key)) return undefined;
    const peeks = this.peeksOf(key);
    if (peeks === null) return undefined;
    let best: Sample | undefined;
    for (const peek of peeks) {
      const s = peek(key);
      if (s !== null && (best === undefined || newer(s, best))) best = s;
    }
    return best === undefined ? [] : [{ kind: "ok", sample: best }];
  }

  /**
   * The answer a default query (no parameters, no payload, `latest` consolidation, target `all`)
   * on the plain key `key` gets when no queryable on this router reaches it, so only other
   * routers answer: the fabric's query alone (its gather, its timeout and error replies), its
   * replies consolidated as `query` does, without the local dispatch (no `Query`, no deadline of
   * its own, no `Promise.all`). Undefined when a local queryable reaches the key, the key is wild
   * or there is no fabric: the caller runs the query. What a one-key GET through a router that
   * holds nothing of the key costs (docs/cluster.md, "What crosses routers").
   */
  readRemoteOnly(key: string): Promise<Reply[]> | undefined {
    const fabric = this.fabric;
    if (fabric === undefined || isWild(key)) return undefined;
    // Cached per key, cleared on any queryable declaration: empty when no local queryable reaches it.
    const peeks = this.peeksOf(key);
    if (peeks === null || peeks.length > 0) return undefined;
    const selector: Selector = { key, parameters: NO_PARAMETERS };
    const collector = new ReplyCollector(selector, "latest");
    return fabric
      .query(selector, this.queryTimeoutMs, (r) => collector.add(r), { target: "all" })
      .then(() => collector.resultNow() ?? collector.result());
  }

  /**
   * The answer a default query (no parameters, no payload, `latest` consolidation) on `keyExpr`
   * would get, as batches sorted by key, when the only queryable it reaches is a local storage
   * that can `scan` and answers any querier (so there is nothing to merge); undefined otherwise
   * (the caller runs the query). A wide GET is then written out batch by batch, never held whole.
   */
  scanStored(keyExpr: string): AsyncIterable<readonly Sample[]> | undefined {
    if (this.fabric) return undefined;
    const reached = this.queryablesIndex.intersecting(keyExpr);
    if (reached.length !== 1) return undefined;
    const q = reached[0]!;
    if (q.scan === undefined || (q.allowedOrigin !== undefined && q.allowedOrigin !== "any")) return undefined;
    return q.scan(keyExpr);
  }

  /**
   * The `peek`s of every local queryable a query on the plain key `key` reaches, when each is a
   * storage that can peek and answers any querier (another router included); null otherwise.
   */
  private peeksOf(key: string): Array<(key: string) => Sample | null> | null {
    let peeks = this.peeks.get(key);
    if (peeks === undefined) {
      peeks = [];
      for (const q of this.queryablesIndex.intersecting(key)) {
        if (q.peek === undefined || (q.allowedOrigin !== undefined && q.allowedOrigin !== "any")) {
          peeks = null;
          break;
        }
        peeks.push(q.peek);
      }
      if (this.peeks.size >= ROUTE_CACHE_MAX) this.peeks.clear();
      this.peeks.set(key, peeks);
    }
    return peeks;
  }

  /**
   * What `answerRemote` would reply, unconsolidated, to another router's default query (target
   * `all`, no parameters, no content) on the plain key `key`, read synchronously from the local
   * storages' `peek`s; undefined when that is not possible (the fabric then runs the query).
   */
  private readForRemote(key: string): Reply[] | undefined {
    if (isWild(key)) return undefined;
    try {
      checkLimits(key, this.keyExprLimits);
      const peeks = this.peeksOf(key);
      if (peeks === null) return undefined;
      const replies: Reply[] = [];
      for (const peek of peeks) {
        const s = peek(key);
        if (s !== null) replies.push({ kind: "ok", sample: s });
      }
      return replies;
    } catch {
      // Over a limit, or a storage that cannot read now: the query path words the error.
      return undefined;
    }
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
  route(sample: Sample, origin?: Origin): Promise<void> {
    let pending = this.deliver(sample, origin);
    if (this.fabric && origin?.destination !== "session_local") {
      const net = this.joinedNetwork;
      const fromNetwork = net !== undefined && origin !== undefined && origin.sessionId === net.sessionId;
      // Of the routers joined to the network, one passes its samples on (docs/zenoh-network.md).
      if (!fromNetwork || net.bridging) {
        pending ??= [];
        pending.push(this.fabric.publish(this.withHeldIn(sample, origin), fromNetwork));
      }
    }
    return settle(pending);
  }

  /**
   * Delivers a sample to this router's subscribers only, as if it came from another router: how
   * a storage's replication applies a repair (docs/replication.md), so that storages decide it by
   * last-writer-wins and subscribers see an ordinary change. Resolves when the acknowledging
   * subscribers have it; rejects with the first of their errors.
   */
  deliverLocal(sample: Sample): Promise<void> {
    if (sample.timestamp) this.hlc.observe(sample.timestamp);
    return settle(this.deliver(sample, FROM_ANOTHER_ROUTER));
  }

  /**
   * Routes a conditional write: first to the storages on this router holding the key, each of
   * which checks `condition` atomically with the write; once all of them accepted it, to every
   * other subscriber here and elsewhere as an ordinary sample. Rejects with the first refusal
   * (`precondition_failed` when a condition failed), and with `not_supported` when no storage
   * here holds the key. See docs/storage-contract.md.
   */
  routeConditional(sample: Sample, condition: WriteCondition): Promise<void> {
    const subs = this.matchingSubscribers(sample.key);
    // Every storage decides, even after one refused; a storage that decided at once (the memory
    // volume) costs no promise, so the common case settles without waiting a turn.
    const outcomes: Array<Promise<void> | undefined> = [];
    let waiting = false;
    for (const s of subs) {
      if (s.storage !== true) continue;
      let r: Promise<void> | undefined;
      try {
        r = s.handler(sample, condition) ?? undefined;
      } catch (err) {
        r = Promise.reject(err);
      }
      if (r !== undefined) waiting = true;
      outcomes.push(r);
    }
    if (outcomes.length === 0)
      return Promise.reject(
        new ZestError("not_supported", `a conditional write needs a storage on this router holding ${sample.key}`),
      );
    if (!waiting) return this.routeAccepted(sample, subs);
    return Promise.allSettled(outcomes).then((settled) => {
      // The first refusal, in storage order.
      for (const o of settled) if (o.status === "rejected") throw o.reason;
      return this.routeAccepted(sample, subs);
    });
  }

  /** A conditional write every storage here accepted: to the other subscribers, here and elsewhere. */
  private routeAccepted(sample: Sample, subs: readonly SubscriberDecl[]): Promise<void> {
    const pending: Promise<void>[] = [];
    for (const sub of subs) {
      if (sub.storage === true) continue;
      try {
        const r = sub.handler(sample);
        if (r) pending.push(r);
      } catch (err) {
        this.logger.error({ key: sample.key, subscriber: sub.key, err: errorMessage(err) }, "subscriber failed");
      }
    }
    if (this.fabric) pending.push(this.fabric.publish(this.withHeldIn(sample, undefined)));
    if (pending.length === 0) return SETTLED;
    return pending.length === 1 ? pending[0]! : Promise.all(pending).then(ignore);
  }

  /**
   * The subscribers as other routers see them: the key expressions of those that must
   * acknowledge every write (`plain`), and each storage of a shared store with its store, which
   * need not acknowledge a write the store already holds (docs/conditional-writes.md).
   */
  private subscriberDeclarations(): { plain: string[]; stores: Array<{ key: string; store: string }> } {
    const stores: Array<{ key: string; store: string }> = [];
    const storeKeys = new Set<string>();
    for (const d of this.storeSubscribers) {
      if (!stores.some((s) => s.key === d.key && s.store === d.store)) stores.push({ key: d.key, store: d.store! });
      storeKeys.add(d.key);
    }
    const plain: string[] = [];
    for (const key of new Set(this.subscribers.keys())) {
      if (!storeKeys.has(key) || this.subscribers.including(key).some((d) => d.key === key && d.store === undefined))
        plain.push(key);
    }
    return { plain, stores };
  }

  /**
   * The copy of a local write the fabric sends: it names the shared stores this router's
   * storages write it to (`Sample.heldIn`), whose storages on other routers then have nothing
   * to write, nor the writer to wait for (docs/conditional-writes.md, "Shared stores"). Only the
   * storages `deliver` gave the write to (`origin`, as there) count: the write fails if one of
   * them cannot store it.
   */
  private withHeldIn(sample: Sample, origin: Origin | undefined): Sample {
    let stores: string[] | undefined;
    if (sample.timestamp !== undefined && !isWild(sample.key))
      for (const sub of this.matchingSubscribers(sample.key)) {
        if (sub.store === undefined || stores?.includes(sub.store) === true) continue;
        if (
          (origin !== undefined || sub.allowedOrigin !== undefined) &&
          !localityMatches(origin, sub.sessionId, sub.allowedOrigin)
        )
          continue;
        stores ??= [];
        stores.push(sub.store);
      }
    if (stores !== undefined) return { ...sample, heldIn: stores };
    if (sample.heldIn === undefined) return sample;
    // Another router's word on what its stores hold says nothing of this write's.
    const { heldIn: _theirs, ...own } = sample;
    return own;
  }

  private matchingSubscribers(key: string): SubscriberDecl[] {
    if (key === this.lastRouteKey) return this.lastRoute;
    let subs = this.routes.get(key);
    if (subs === undefined) {
      subs = this.subscribers.intersecting(key);
      if (isWild(key)) return subs;
      // Bounded: a stream of distinct keys must not grow the cache without end.
      if (this.routes.size >= ROUTE_CACHE_MAX) this.routes.clear();
      this.routes.set(key, subs);
    }
    this.lastRouteKey = key;
    this.lastRoute = subs;
    return subs;
  }

  /** A subscriber came or went: every cached route is stale. */
  private forgetRoutes(): void {
    this.routes.clear();
    this.lastRouteKey = undefined;
    this.lastRoute = [];
  }

  /** Hands `sample` to the matching subscribers here; the promises of those that did not take it at once, if any. */
  private deliver(sample: Sample, origin: Origin | undefined): Promise<void>[] | undefined {
    // Made only when a subscriber answers with a promise: most writes (the memory volume) make none.
    let pending: Promise<void>[] | undefined;
    for (const sub of this.matchingSubscribers(sample.key)) {
      if (
        (origin !== undefined || sub.allowedOrigin !== undefined) &&
        !localityMatches(origin, sub.sessionId, sub.allowedOrigin)
      )
        continue;
      try {
        const r = sub.handler(sample);
        if (r) {
          pending ??= [];
          pending.push(r);
        }
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
    const consolidation = resolveConsolidation(options.consolidation, selector);
    const collector = new ReplyCollector(selector, consolidation === "none" ? "none" : "latest");
    await new Promise<void>((resolve, reject) =>
      this.dispatchQuery(
        selector,
        options,
        (r: Reply, matched?: boolean): void => collector.add(r, matched),
        settleWith(resolve, reject),
      ),
    );
    return await collector.result();
  }

  /**
   * Runs a query like `query`, but hands each reply to `onReply` as it arrives, consolidated as
   * `options.consolidation` says (`latest` replies come when the query ends). Resolves when the
   * query is over: every queryable reached has finished, or the timeout passed.
   */
  queryStream(selector: Selector, options: QueryOptions, onReply: (reply: Reply) => void): Promise<void> {
    return new Promise<void>((resolve, reject) =>
      this.streamQuery(selector, options, onReply, settleWith(resolve, reject)),
    );
  }

  /**
   * `queryStream` without its promise: `onEnd` is called once, with the error if the query
   * failed, in the very call that ends it. When a client's queryable was the last at work, that
   * is the call that reads its final, so a door sends the querier's final before routing anything
   * read after it (docs/zenoh-protocol.md, "Order of replies and finals").
   */
  streamQuery(selector: Selector, options: QueryOptions, onReply: (reply: Reply) => void, onEnd: QueryEnd): void {
    let consolidator: StreamConsolidator | undefined;
    let over = false;
    const end: QueryEnd = (err) => {
      if (over) return;
      over = true;
      consolidator?.end();
      onEnd(err);
    };
    try {
      const c = new StreamConsolidator(selector, resolveConsolidation(options.consolidation, selector), onReply);
      consolidator = c;
      this.dispatchQuery(selector, options, (r) => c.add(r), end);
    } catch (err) {
      // Thrown by `onEnd` itself: not the query's failure.
      if (over) throw err;
      // Nothing was dispatched (a bad option): the query ends here.
      end(err ?? new Error("the query failed"));
    }
  }

  /** Dispatches a query here and to the fabric; `onEnd` once all are over, or at the first failure. */
  private dispatchQuery(selector: Selector, options: QueryOptions, onReply: ReplySink, onEnd: QueryEnd): void {
    const timeoutMs = options.timeoutMs ?? this.queryTimeoutMs;
    const { selected, exclusive } = this.selectLocal(selector, options);
    const fabric = exclusive || options.origin?.destination === "session_local" ? undefined : this.fabric;
    // Best matching with no complete queryable here: one on another router answers alone (docs/fabric-protocol.md).
    const remoteOnly =
      fabric !== undefined &&
      options.target === "best_matching" &&
      (fabric.completeQueryables?.(selector.key).length ?? 0) > 0;
    if (!fabric) {
      this.runQueryables(remoteOnly ? [] : selected, selector, timeoutMs, onReply, options, onEnd);
      return;
    }
    // Two parts, the local queryables and the other routers; the first failure ends the query.
    let left = 2;
    const part = (err?: unknown): void => {
      if (left <= 0) return;
      if (err !== undefined) left = 0;
      else if (--left > 0) return;
      onEnd(err);
    };
    fabric.query(selector, timeoutMs, onReply, { target: options.target ?? "all", content: options.content }).then(
      () => part(),
      (err: unknown) => part(err ?? new Error("the fabric's query failed")),
    );
    this.runQueryables(remoteOnly ? [] : selected, selector, timeoutMs, onReply, options, part);
  }

  /** The local queryables a query reaches; `exclusive`: a best-matching query found its complete one here. */
  private selectLocal(selector: Selector, options: QueryOptions): { selected: QueryableDecl[]; exclusive: boolean } {
    const candidates = this.queryablesIndex.intersecting(selector.key);
    return options.target === undefined && options.origin === undefined
      ? { selected: candidates, exclusive: false }
      : selectQueryables(candidates, selector.key, options.target ?? "all", options.origin ?? FROM_ANOTHER_ROUTER);
  }

  /**
   * Runs the queryables a query reached; `onEnd()` once every one is over (finished, or timed out
   * with an error reply), in the call that finishes the last (`Query.finish`).
   */
  private runQueryables(
    matching: QueryableDecl[],
    selector: Selector,
    timeoutMs: number,
    onReply: ReplySink,
    options: QueryOptions,
    onEnd: QueryEnd,
    /** Set for a query from another router: its zid, or "" when it did not say. */
    fromRouter?: string,
  ): void {
    if (matching.length === 0) {
      onEnd();
      return;
    }
    const queries: Query[] = [];
    const fromStorage = (r: Reply): void => onReply(r, true);
    const round = matching.length > 1 ? new QueryRound() : undefined;
    let left = matching.length;
    let deadline: Deadline | undefined;
    const ended = (): void => {
      if (--left > 0) return;
      if (deadline !== undefined) cancel(deadline);
      onEnd();
    };
    for (const q of matching) {
      const query = new Query(selector, q.storage ? fromStorage : onReply, options.content, options.target, ended);
      if (fromRouter !== undefined) {
        query.fromAnotherRouter = true;
        if (fromRouter !== "") query.fromRouter = fromRouter;
      }
      query.round = round;
      queries.push(query);
      void runQueryable(q, query, this.logger).finally(() => query.finish());
    }
    // Every queryable may have finished already (a client's that could not be reached).
    if (left === 0) return;
    deadline = schedule(timeoutMs, () => {
      deadline = undefined;
      for (let i = 0; i < queries.length; i++) {
        const q = queries[i]!;
        if (q.finished) continue;
        q.replyErr(`Timeout: queryable on ${matching[i]!.key} did not answer within ${timeoutMs} ms`, {
          errorKind: "timeout",
        });
        q.finish();
      }
    });
  }

  /** The router as its fabric sees it. */
  private host(): FabricHost {
    return {
      zid: this.zid,
      keyExprLimits: this.keyExprLimits,
      deliverRemote: async (sample, network) => {
        // Another router may run with other limits; what it sends is held to ours.
        checkLimits(sample.key, this.keyExprLimits);
        if (sample.timestamp) this.hlc.observe(sample.timestamp);
        // Joined to that network too, this router had the sample from it directly.
        if (network === true && this.joinedNetwork?.open === true) return;
        const pending = this.deliver(sample, FROM_ANOTHER_ROUTER);
        if (pending !== undefined) await Promise.all(pending);
      },
      answerRemote: (selector, timeoutMs, onReply, remote = {}) => {
        try {
          checkLimits(selector.key, this.keyExprLimits);
        } catch (err) {
          return Promise.reject(err);
        }
        const options: QueryOptions = {
          origin: FROM_ANOTHER_ROUTER,
          target: remote.target ?? "all",
          content: remote.content,
        };
        return new Promise<void>((resolve) =>
          this.runQueryables(
            this.selectLocal(selector, options).selected,
            selector,
            timeoutMs,
            onReply,
            options,
            () => resolve(),
            remote.from?.toUpperCase() ?? "",
          ),
        );
      },
      readRemote: (key) => this.readForRemote(key),
      remoteDeclarationsChanged: (change) => {
        if (change.kind === "token") this.liveliness.remoteChanged(change.zid, change.added, change.removed);
        // Every kind: connectivity listeners also learn here that a router came or went.
        this.declarationsChanged();
      },
      livelinessTokens: () => this.liveliness.localKeys(),
      subscriberKeys: () => [...new Set(this.subscribers.keys())],
      subscriberDeclarations: () => this.subscriberDeclarations(),
      queryables: () => {
        const byKey = new Map<string, QueryableInfo>();
        for (const key of this.queryablesIndex.keys()) {
          // Session-local queryables do not count as complete for other routers' targets.
          const complete = this.queryablesIndex
            .including(key)
            .some((q) => q.key === key && q.complete && q.allowedOrigin !== "session_local");
          byKey.set(key, { key, complete });
        }
        return [...byKey.values()];
      },
    };
  }
}

function ignore(): void {}

/** One promise for what is pending: `SETTLED` for nothing, the one itself, or all of them. */
function settle(pending: Promise<void>[] | undefined): Promise<void> {
  if (pending === undefined || pending.length === 0) return SETTLED;
  return pending.length === 1 ? pending[0]! : Promise.all(pending).then(ignore);
}

async function runQueryable(decl: QueryableDecl, query: Query, logger: Logger): Promise<void> {
  try {
    await decl.handler(query);
  } catch (err) {
    logger.warn({ key: query.key, queryable: decl.key, err: errorMessage(err) }, "queryable failed");
    query.replyError(err);
  }
}
