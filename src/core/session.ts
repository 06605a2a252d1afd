import { Buffer } from "node:buffer";
import { type IntoKeyExpr, isWild, KeyExpr, type KeyExprLimits } from "../keyexpr/index.js";
import { storageCondition, type WriteIf, writeOnRead } from "./conditional-write.js";
import { Encoding } from "./encoding.js";
import { ZestError } from "./errors.js";
import type { ChangeFeed, Clock, Interest } from "./ports.js";
import type {
  QueryableDecl,
  QueryEnd,
  QueryHandler,
  QueryOptions,
  RouterOptions,
  SampleHandler,
  SubscriberDecl,
} from "./router.js";
import { touchesReplication } from "./internal-keys.js";
import { type CanonicalKey, toKeyExpr } from "./key.js";
import { Router } from "./router.js";
import type { Reply } from "./reply.js";
import { SETTLED } from "./settled.js";
import type { Locality, Origin } from "./locality.js";
import { type MatchingListener, watchMatching } from "./matching.js";
import type { QueryTarget } from "./query-target.js";
import type { Qos } from "./qos.js";
import {
  makeSample,
  type Sample,
  type SourceInfo,
  type WireExtensions,
  type WriteCondition,
  withDeadline,
  withSampleExtras,
} from "./sample.js";
import { Parameters, splitSelector, type Selector } from "./selector.js";
import { deadlineOf, MAX_TTL_MS, MIN_TTL_MS, validDeadline } from "./lifetime.js";
import type { Timestamp } from "./timestamp.js";
import type { Leases } from "./leases.js";

/** A key expression as the API accepts it (declared in keyexpr/): a `KeyExpr`, or a string that is autocanonized. */
export type { IntoKeyExpr } from "../keyexpr/index.js";

/**
 * A condition making a write conditional (at most one of them): it then reaches only the
 * storages on this router holding the key, each applying it only if the condition holds there,
 * atomically; otherwise the write rejects with `precondition_failed` (docs/storage-contract.md).
 */
export interface ConditionOptions {
  /** Apply only if the key still holds this version (a `StoredLookup.version`, an ETag). */
  ifVersion?: string;
  /** Apply only if the key holds no value (absent, or deleted). */
  ifAbsent?: boolean;
}

/** Options of `put`. */
export interface PutOptions extends ConditionOptions {
  /** Default `application/octet-stream`. */
  encoding?: Encoding;
  /** Default: a fresh timestamp from the router's clock. */
  timestamp?: Timestamp;
  /** Bytes travelling beside the payload, handed to subscribers as they are. */
  attachment?: Buffer;
  /** Priority, congestion control and express, handed to subscribers as they are. */
  qos?: Qos;
  /** Which subscribers it reaches: this session's, other sessions' (and routers'), or any (default). */
  allowedDestination?: Locality;
  /**
   * Lifetime in milliseconds: the storages delete the key `ttl` after the write's timestamp
   * (docs/ttl-and-leases.md). Absent: permanent (a later put without it makes a key permanent again).
   */
  ttl?: number;
  /** The absolute deadline (Unix ms) instead of `ttl`, as another router computed it. */
  deadline?: number;
  /** A lease on this router (`Leases.grant`): the key is deleted when the lease ends. */
  lease?: string;
  /** Bound to this session: the key is deleted when the session closes. */
  sessionBound?: boolean;
  /** Who sent it first (zenoh's source info), handed to subscribers as it is. */
  sourceInfo?: SourceInfo;
  /** Wire extensions a door forwards unread (zenoh's timestamp stack...), handed on as they are. */
  extensions?: WireExtensions;
}

/** Options of `delete`. */
export interface DeleteOptions extends ConditionOptions {
  timestamp?: Timestamp;
  attachment?: Buffer;
  qos?: Qos;
  allowedDestination?: Locality;
  sourceInfo?: SourceInfo;
  extensions?: WireExtensions;
}

/** Options of `putIf`: the condition and the timestamp are its own. */
export type ConditionalPutOptions = Pick<PutOptions, "encoding" | "attachment" | "qos" | "ttl" | "lease">;

/** Options of `deleteIf`. */
export type ConditionalDeleteOptions = Pick<DeleteOptions, "attachment" | "qos">;

/** Options of `declareSubscriber` and `declareQueryable`. */
export interface DeclareOptions {
  /** Which senders it hears: this session, other sessions (and routers), or any (default). */
  allowedOrigin?: Locality;
}

/** Options of `get` and `getStream`. */
export interface GetOptions extends Omit<QueryOptions, "origin" | "content"> {
  /** Which queryables it reaches: this session's, other sessions' (and routers'), or any (default). */
  allowedDestination?: Locality;
  /** A payload for the queryables the query reaches (on other routers too), with its encoding. */
  payload?: Buffer | Uint8Array | string;
  encoding?: Encoding;
  attachment?: Buffer;
  /** Who sent the query (zenoh's source info), handed to the queryables as it is. */
  sourceInfo?: SourceInfo;
  /** Wire extensions of the query a door forwards unread, handed to the queryables as they are. */
  extensions?: WireExtensions;
}

/** Options of matching status: the publisher's or querier's destination, and a querier's target. */
export interface MatchingOptions {
  allowedDestination?: Locality;
  target?: QueryTarget;
  /** `matchingKeys` and `matchingQueryables` only: false leaves other routers' out (true by default). */
  fabric?: boolean;
}

/** A declared liveliness token; `undeclare()` ends it (idempotent). */
export interface LivelinessToken {
  readonly key: string;
  undeclare(): void;
}

/** A declared subscriber; `undeclare()` stops it (idempotent). */
export interface Subscriber {
  readonly key: string;
  undeclare(): void;
}

/** A declared queryable; `undeclare()` stops it (idempotent). */
export interface Queryable {
  readonly key: string;
  undeclare(): void;
}

/** A selector as the API accepts it: `ke?params`, or an object. */
export type IntoSelector = string | KeyExpr | { key: IntoKeyExpr; parameters?: string | Parameters };

/**
 * A session on a router: the API every part of zest (REST, storages, admin, plugins) and every
 * embedder uses. Shaped like the Zenoh TypeScript client.
 */
export class Session {
  readonly router: Router;
  /** Name shown in the admin space (`rest`, `storage_manager`, a plugin's name...). */
  readonly name: string;
  /** The router's clock. */
  readonly clock: Clock;
  /** The router's change events (storages publish, read caches subscribe). */
  readonly changes: ChangeFeed;
  /** Who takes writes on a key, and whether only storages answer it. */
  readonly interest: Interest;
  /** Unique per process: locality tells this session's declarations from others'. */
  readonly id: number;
  private readonly declared = new Set<{ undeclare(): void }>();
  private closed = false;
  /** The lease of this session's session-bound writes, once it made one. */
  private ownLease: string | undefined;
  /**
   * A router-internal session (the storage manager's, an embedder's own): it may query and answer
   * in the routers' own key spaces (`core/internal-keys.ts`); a front door's session may not.
   */
  readonly internal: boolean;
  /** Where this session's writes and queries come from, one per destination: made once, not per call. */
  private readonly origins: { readonly [L in Locality]: Origin };

  constructor(router: Router, name = "session", options: { internal?: boolean } = {}) {
    this.router = router;
    this.name = name;
    this.internal = options.internal ?? false;
    this.clock = router.hlc;
    this.changes = router.changes;
    const internal = this.internal;
    this.interest = {
      hasSubscriber: (key) => router.hasSubscriber(key),
      storagesOnly: (key) => router.storagesOnly(key),
      readStored: (key) => router.readStored(key),
      // A client's session is refused the routers' own key space: `get` words that refusal.
      readRemote: (key) => (!internal && touchesReplication(key) ? undefined : router.readRemoteOnly(key)),
      scanStored: (keyExpr) => router.scanStored(keyExpr),
      get clustered() {
        return router.fabric !== undefined;
      },
    };
    this.id = ++sessionIds;
    const id = this.id;
    this.origins = {
      any: Object.freeze({ sessionId: id, destination: "any" }),
      remote: Object.freeze({ sessionId: id, destination: "remote" }),
      session_local: Object.freeze({ sessionId: id, destination: "session_local" }),
    };
  }

  /**
   * Opens a session on a new in-process router (what `zenoh.open()` is to Zenoh). Call
   * `close()` on the session and `router.close()` when done.
   */
  static async open(options: RouterOptions = {}): Promise<Session> {
    const router = new Router(options);
    await router.start();
    return new Session(router, "embedder", { internal: true });
  }

  /** The size limits on key expressions the router accepts (front doors check paths with them). */
  get keyExprLimits(): KeyExprLimits {
    return this.router.keyExprLimits;
  }

  /** The leases of this router (docs/ttl-and-leases.md). */
  get leases(): Leases {
    return this.router.leases;
  }

  /** Router id (uppercase hex). */
  get zid(): string {
    return this.router.zid;
  }

  /**
   * Writes `payload` on `keyexpr`; resolves when every storage holding it has it. With
   * `ifVersion` or `ifAbsent`, rejects with `precondition_failed` when the condition fails.
   */
  put(keyexpr: IntoKeyExpr, payload: Buffer | Uint8Array | string, options: PutOptions = {}): Promise<void> {
    let key: CanonicalKey;
    try {
      key = toKeyExpr(keyexpr, this.router.keyExprLimits);
    } catch (err) {
      return Promise.reject(err);
    }
    return this.putKey(key, payload, options);
  }

  /**
   * `put` on a key a front door made already (`toKeyExpr` with this session's `keyExprLimits`):
   * it is not canonized again. Returns `SETTLED` when every storage took the write at once.
   */
  putKey(key: CanonicalKey, payload: Buffer | Uint8Array | string, options: PutOptions = {}): Promise<void> {
    const ts = options.timestamp ?? this.router.hlc.newTimestamp();
    const encoding = options.encoding ?? Encoding.APP_OCTET_STREAM;
    let sample: Sample;
    if (lifeless(options)) {
      // The common case in one object: no lifetime, so no copy of the sample to add it.
      if (this.router.leases.size > 0) this.router.leases.wrote(key, undefined);
      sample = makeSample(key, "put", payload, encoding, ts, options);
    } else {
      try {
        sample = this.withLifetime(makeSample(key, "put", payload, encoding, ts), options);
      } catch (err) {
        return Promise.reject(err);
      }
    }
    return this.route(sample, options, this.origin(options.allowedDestination));
  }

  /**
   * A put's sample with its extras and the deadline its options give it, its key bound to the
   * lease they name (or unbound from any: docs/ttl-and-leases.md). Only for options that are not
   * `lifeless` (`putKey` makes the others in one object). Throws on a bad lifetime.
   */
  private withLifetime(base: Sample, options: PutOptions): Sample {
    const deadline = this.deadline(base.timestamp!, options);
    // A TTL alone (a REST `?_ttl=`) takes one object, not an options object and a copy.
    const sample =
      deadline !== undefined &&
      options.attachment === undefined &&
      options.qos === undefined &&
      options.sourceInfo === undefined &&
      options.extensions === undefined
        ? withDeadline(base, deadline)
        : withSampleExtras(base, {
            attachment: options.attachment,
            qos: options.qos,
            deadline,
            sourceInfo: options.sourceInfo,
            extensions: options.extensions,
          });
    this.bind(base.key, options);
    return sample;
  }

  /** The deadline a put's options ask for, checked. */
  private deadline(ts: Timestamp, options: PutOptions): number | undefined {
    if (options.ttl !== undefined) {
      if (!Number.isSafeInteger(options.ttl) || options.ttl < MIN_TTL_MS || options.ttl > MAX_TTL_MS)
        throw ZestError.badRequest(`ttl must be a whole number of milliseconds from ${MIN_TTL_MS} to ${MAX_TTL_MS}`);
      return deadlineOf(ts, options.ttl);
    }
    if (options.deadline !== undefined && !validDeadline(options.deadline))
      throw ZestError.badRequest("deadline must be a time in Unix milliseconds");
    return options.deadline;
  }

  /** Attaches the key to the lease the options name (or to this session's). */
  private bind(key: string, options: PutOptions): void {
    if (options.lease === undefined && !options.sessionBound) {
      if (this.router.leases.size > 0) this.router.leases.wrote(key, undefined);
      return;
    }
    if (options.lease !== undefined && options.sessionBound)
      throw ZestError.badRequest("a write is bound to a lease or to its session, not both");
    if (isWild(key))
      throw ZestError.badRequest(
        `a write bound to a lease names one key, not a key expression with wildcards (${key})`,
      );
    const lease = options.lease ?? this.sessionLease();
    this.router.leases.wrote(key, lease);
  }

  /** This session's own lease, revoked when it closes (created on first use). */
  private sessionLease(): string {
    if (this.ownLease === undefined) {
      this.ownLease = this.router.leases.grantSession(`session.${this.id}`);
    }
    return this.ownLease;
  }

  /**
   * Deletes `keyexpr` (every matching key, when wild); resolves when the storages have applied
   * it. Conditions as for `put`.
   */
  async delete(keyexpr: IntoKeyExpr, options: DeleteOptions = {}): Promise<void> {
    return this.deleteKey(toKeyExpr(keyexpr, this.router.keyExprLimits), options);
  }

  /**
   * `delete` on a key a front door made already (`toKeyExpr` with this session's
   * `keyExprLimits`): it is not canonized again. Returns `SETTLED` when every storage took it at once.
   */
  deleteKey(key: CanonicalKey, options: DeleteOptions = {}): Promise<void> {
    try {
      const ts = options.timestamp ?? this.router.hlc.newTimestamp();
      if (this.router.leases.size > 0) this.router.leases.wrote(key, undefined);
      return this.route(
        withSampleExtras(makeSample(key, "delete", EMPTY, Encoding.EMPTY, ts), options),
        options,
        this.origin(options.allowedDestination),
      );
    } catch (err) {
      return Promise.reject(err);
    }
  }

  private route(sample: Sample, options: ConditionOptions, origin: Origin): Promise<void> {
    if (options.ifVersion === undefined && !options.ifAbsent) return this.router.route(sample, origin);
    let condition: WriteCondition;
    try {
      condition = conditionOf(sample.key, options);
    } catch (err) {
      return Promise.reject(err);
    }
    return this.router.routeConditional(sample, condition);
  }

  /**
   * Writes `payload` on one key only if `condition` holds (docs/conditional-writes.md), the one
   * meaning every front door gives a conditional write: `ifMatch` one of some versions, or any
   * value (`"*"`); `ifAbsent`. The written sample's timestamp is the key's new version (the
   * ETag REST answers); it is returned as is when every storage took the write at once (the
   * memory volume), so a door can answer in the same turn, and as a promise otherwise. A
   * condition that fails rejects with `precondition_failed` and changes nothing.
   */
  putIf(
    keyexpr: IntoKeyExpr,
    payload: Buffer | Uint8Array | string,
    condition: WriteIf,
    options: ConditionalPutOptions = {},
  ): Timestamp | Promise<Timestamp> {
    return this.writeIf("put", keyexpr, payload, options.encoding ?? Encoding.APP_OCTET_STREAM, condition, options);
  }

  /** Deletes one key only if `condition` (`ifMatch`) holds; as `putIf`, the tombstone's timestamp. */
  deleteIf(
    keyexpr: IntoKeyExpr,
    condition: WriteIf,
    options: ConditionalDeleteOptions = {},
  ): Timestamp | Promise<Timestamp> {
    return this.writeIf("delete", keyexpr, EMPTY, Encoding.EMPTY, condition, options);
  }

  private writeIf(
    kind: "put" | "delete",
    keyexpr: IntoKeyExpr,
    payload: Buffer | Uint8Array | string,
    encoding: Encoding,
    condition: WriteIf,
    options: ConditionalPutOptions,
  ): Timestamp | Promise<Timestamp> {
    let key: string;
    let single: WriteCondition | undefined;
    try {
      key = toKeyExpr(keyexpr, this.router.keyExprLimits);
      single = storageCondition(key, condition, kind === "delete");
    } catch (err) {
      return Promise.reject(err);
    }
    if (single !== undefined) return this.writeOn(kind, key, payload, encoding, options, single);
    const versions = (condition as { ifMatch: "*" | readonly string[] }).ifMatch;
    return writeOnRead(
      key,
      versions,
      () => this.get(key),
      (c) => this.writeOn(kind, key, payload, encoding, options, c),
    );
  }

  /** One conditional write, stamped now; the timestamp once every storage here took it. */
  private writeOn(
    kind: "put" | "delete",
    key: string,
    payload: Buffer | Uint8Array | string,
    encoding: Encoding,
    options: ConditionalPutOptions,
    condition: WriteCondition,
  ): Timestamp | Promise<Timestamp> {
    const ts = this.router.hlc.newTimestamp();
    const base = makeSample(key, kind, payload, encoding, ts);
    let sample: Sample;
    try {
      // A conditional put keeps or gives a lifetime as `put` does (docs/ttl-and-leases.md).
      sample = kind === "delete" ? withSampleExtras(base, options) : this.withLifetime(base, options);
    } catch (err) {
      return Promise.reject(err);
    }
    const written = this.router.routeConditional(sample, condition);
    return written === SETTLED ? ts : written.then(() => ts);
  }

  /** Queries every matching queryable (storages, evals, the admin space) and returns the replies. */
  async get(selector: IntoSelector, options: GetOptions = {}): Promise<Reply[]> {
    return this.router.query(this.selectorOf(selector), this.queryOptions(options));
  }

  /**
   * Like `get`, but hands each reply to `onReply` as it arrives (consolidated as asked: `latest`
   * replies come at the end). Resolves once the query is over.
   */
  async getStream(selector: IntoSelector, onReply: (reply: Reply) => void, options: GetOptions = {}): Promise<void> {
    return this.router.queryStream(this.selectorOf(selector), this.queryOptions(options), onReply);
  }

  /**
   * `getStream` without its promise, for a door that sends its client a final: `onEnd` is called
   * once (with the error, if the query failed or was refused) in the very call that ends the
   * query, so no reply routed after it can overtake that final (docs/zenoh-protocol.md,
   * "Order of replies and finals").
   */
  streamGet(selector: IntoSelector, onReply: (reply: Reply) => void, onEnd: QueryEnd, options: GetOptions = {}): void {
    let sel: Selector;
    let opts: QueryOptions;
    try {
      sel = this.selectorOf(selector);
      opts = this.queryOptions(options);
    } catch (err) {
      onEnd(err ?? new Error("the query was refused"));
      return;
    }
    this.router.streamQuery(sel, opts, onReply, onEnd);
  }

  /** The selector of a query; one that reaches a router-internal key space needs an internal session. */
  private selectorOf(selector: IntoSelector): Selector {
    const sel = toSelector(selector, this.router.keyExprLimits);
    if (!this.internal && touchesReplication(sel.key))
      throw ZestError.forbidden(
        `${sel.key} is the routers' own (replication, docs/replication.md): no client queries it`,
      );
    return sel;
  }

  /**
   * Calls `handler` with every sample put or deleted on a key matching `keyexpr`. `storage`: it
   * stores what it gets, and is the only kind of subscriber that receives conditional writes
   * (with their condition) before they are accepted (default false). `store`: a storage's shared
   * store (`StorageBackend.store`), shared by other routers' storages (docs/conditional-writes.md,
   * "Shared stores").
   */
  declareSubscriber(
    keyexpr: IntoKeyExpr,
    handler: SampleHandler,
    options: DeclareOptions & { storage?: boolean; store?: string | undefined } = {},
  ): Subscriber {
    const storage = options.storage ?? false;
    const decl: SubscriberDecl = {
      key: toKeyExpr(keyexpr, this.router.keyExprLimits),
      handler,
      owner: this.name,
      storage,
      sessionId: this.id,
      allowedOrigin: options.allowedOrigin,
      ...(storage && options.store !== undefined ? { store: options.store } : {}),
    };
    this.router.addSubscriber(decl);
    return this.track(decl.key, () => this.router.removeSubscriber(decl));
  }

  /**
   * Answers queries intersecting `keyexpr` with `handler`. `complete`: it holds every key its
   * expression matches. `storage`: it answers with stored samples only, which change only when
   * written, so a read cache may keep its answers until the next write (default false).
   */
  declareQueryable(
    keyexpr: IntoKeyExpr,
    handler: QueryHandler,
    options: DeclareOptions & {
      complete?: boolean;
      storage?: boolean;
      peek?: (key: string) => Sample | null;
      scan?: (keyExpr: string) => AsyncIterable<readonly Sample[]>;
    } = {},
  ): Queryable {
    const key = toKeyExpr(keyexpr, this.router.keyExprLimits);
    // A client's queryable there could pose as a replica and feed storages values.
    if (!this.internal && touchesReplication(key))
      throw ZestError.forbidden(
        `${key} is the routers' own (replication, docs/replication.md): no client answers there`,
      );
    const decl: QueryableDecl = {
      key,
      handler,
      complete: options.complete ?? false,
      storage: options.storage ?? false,
      owner: this.name,
      sessionId: this.id,
      allowedOrigin: options.allowedOrigin,
      peek: options.peek,
      scan: options.scan,
    };
    this.router.addQueryable(decl);
    return this.track(decl.key, () => this.router.removeQueryable(decl));
  }

  /**
   * True when a subscriber (`subscribers`: what a publisher on `keyexpr` would reach) or a
   * queryable (`queryables`: what a querier would reach) matches, here or on another router.
   */
  matchingStatus(keyexpr: IntoKeyExpr, kind: "subscribers" | "queryables", options: MatchingOptions = {}): boolean {
    return this.router.hasMatching(
      kind,
      toKeyExpr(keyexpr, this.router.keyExprLimits),
      this.origin(options.allowedDestination),
      options.target,
    );
  }

  /**
   * The key expressions of the subscribers (`subscribers`) or queryables a publisher or querier
   * on `keyexpr` would reach; another router's count as `keyexpr` itself (zenoh's INTEREST).
   */
  matchingKeys(keyexpr: IntoKeyExpr, kind: "subscribers" | "queryables", options: MatchingOptions = {}): string[] {
    return this.router.matchingDeclarationKeys(
      kind,
      toKeyExpr(keyexpr, this.router.keyExprLimits),
      this.origin(options.allowedDestination),
      options.fabric ?? true,
    );
  }

  /**
   * The queryables a querier on `keyexpr` would reach, by key expression, each with whether one
   * there is complete (`Router.matchingQueryableInfos`).
   */
  matchingQueryables(keyexpr: IntoKeyExpr, options: MatchingOptions = {}): Map<string, boolean> {
    return this.router.matchingQueryableInfos(
      toKeyExpr(keyexpr, this.router.keyExprLimits),
      this.origin(options.allowedDestination),
      options.fabric ?? true,
    );
  }

  /** Calls `handler` each time `matchingStatus(keyexpr, kind)` changes; closed with the session. */
  declareMatchingListener(
    keyexpr: IntoKeyExpr,
    kind: "subscribers" | "queryables",
    handler: (matching: boolean) => void,
    options: MatchingOptions = {},
  ): MatchingListener {
    const key = toKeyExpr(keyexpr, this.router.keyExprLimits);
    const origin = this.origin(options.allowedDestination);
    const listener = watchMatching(
      () => this.router.hasMatching(kind, key, origin, options.target),
      handler,
      (changed) => this.router.onDeclarationsChanged(changed),
    );
    const handle = this.track(key, () => listener.undeclare());
    return {
      get matching() {
        return listener.matching;
      },
      undeclare: () => handle.undeclare(),
    };
  }

  /** Declares a liveliness token on `keyexpr`: alive until undeclared or the session closes. */
  declareLivelinessToken(keyexpr: IntoKeyExpr): LivelinessToken {
    const key = toKeyExpr(keyexpr, this.router.keyExprLimits);
    this.router.liveliness.addToken(key);
    return this.track(key, () => this.router.liveliness.removeToken(key));
  }

  /**
   * Calls `handler` with a PUT when a key matching `keyexpr` becomes alive and a DELETE when it
   * dies; with `history`, first with a PUT for each key alive now.
   */
  declareLivelinessSubscriber(
    keyexpr: IntoKeyExpr,
    handler: (sample: Sample) => void,
    options: { history?: boolean } = {},
  ): Subscriber {
    const key = toKeyExpr(keyexpr, this.router.keyExprLimits);
    const remove = this.router.liveliness.addSubscriber(key, handler, options.history ?? false);
    return this.track(key, remove);
  }

  /** The keys matching `keyexpr` with a live token, as PUT samples (a liveliness get). */
  livelinessGet(keyexpr: IntoKeyExpr): Sample[] {
    return this.router.liveliness
      .aliveKeys(toKeyExpr(keyexpr, this.router.keyExprLimits))
      .map((k) => makeSample(k, "put", Buffer.alloc(0), Encoding.EMPTY));
  }

  private origin(destination: Locality | undefined): Origin {
    return destination === undefined || destination === "any"
      ? this.origins.any
      : destination === "remote"
        ? this.origins.remote
        : this.origins.session_local;
  }

  private queryOptions(options: GetOptions): QueryOptions {
    const { allowedDestination, payload, encoding, attachment, sourceInfo, extensions, ...rest } = options;
    const content =
      payload === undefined &&
      encoding === undefined &&
      attachment === undefined &&
      sourceInfo === undefined &&
      extensions === undefined
        ? undefined
        : {
            payload: payload === undefined ? undefined : makeSample("", "put", payload, "").payload,
            encoding,
            attachment,
            sourceInfo,
            extensions,
          };
    return { ...rest, origin: this.origin(allowedDestination), ...(content ? { content } : {}) };
  }

  /** Undeclares everything this session declared. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    for (const d of [...this.declared]) d.undeclare();
    if (this.ownLease !== undefined) this.router.leases.revoke(this.ownLease);
  }

  private track(key: string, remove: () => void): Subscriber {
    let done = false;
    const handle = {
      key,
      undeclare: () => {
        if (done) return;
        done = true;
        this.declared.delete(handle);
        remove();
      },
    };
    this.declared.add(handle);
    return handle;
  }
}

const EMPTY = Buffer.alloc(0);

/** True when a put's options give it no lifetime: no TTL, deadline, lease or session binding. */
function lifeless(options: PutOptions): boolean {
  return (
    options.ttl === undefined && options.deadline === undefined && options.lease === undefined && !options.sessionBound
  );
}

/** The condition of a write's options; a conditional write names one key. */
function conditionOf(key: string, options: ConditionOptions): WriteCondition {
  if (options.ifVersion !== undefined && options.ifAbsent)
    throw ZestError.badRequest("give either ifVersion or ifAbsent, not both");
  if (isWild(key))
    throw ZestError.badRequest(`a conditional write names one key, not a key expression with wildcards (${key})`);
  if (options.ifVersion !== undefined) {
    if (options.ifVersion.length === 0 || options.ifVersion.length > 256)
      throw ZestError.badRequest("ifVersion must be 1 to 256 characters");
    return { ifVersion: options.ifVersion };
  }
  return { ifAbsent: true };
}

/** Parses a selector (`ke?params`); the key part is autocanonized and held to `limits`, a bad one is a 400 (414 when too long). */
export function toSelector(selector: IntoSelector, limits?: KeyExprLimits): Selector {
  if (selector instanceof KeyExpr) return { key: toKeyExpr(selector, limits), parameters: new Parameters() };
  if (typeof selector === "string") {
    const { key, parameters } = splitSelector(selector);
    return { key: toKeyExpr(key, limits), parameters: new Parameters(parameters) };
  }
  const p = selector.parameters;
  return { key: toKeyExpr(selector.key, limits), parameters: p instanceof Parameters ? p : new Parameters(p ?? "") };
}

let sessionIds = 0;
