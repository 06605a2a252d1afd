import { KeyExpr } from "../keyexpr/index.js";
import { Encoding } from "./encoding.js";
import type { QueryableDecl, QueryHandler, QueryOptions, RouterOptions, SampleHandler, SubscriberDecl } from "./router.js";
import { Router, toKeyExpr } from "./router.js";
import type { Reply } from "./reply.js";
import type { Locality, Origin } from "./locality.js";
import { type MatchingListener, watchMatching } from "./matching.js";
import type { QueryTarget } from "./query-target.js";
import type { Qos } from "./qos.js";
import { makeSample, type Sample, withSampleExtras } from "./sample.js";
import { Parameters, splitSelector, type Selector } from "./selector.js";
import type { Timestamp } from "./timestamp.js";

/** A key expression as the API accepts it: a `KeyExpr`, or a string that is autocanonized. */
export type IntoKeyExpr = KeyExpr | string;

/** Options of `put`. */
export interface PutOptions {
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
}

/** Options of `delete`. */
export interface DeleteOptions {
  timestamp?: Timestamp;
  attachment?: Buffer;
  qos?: Qos;
  allowedDestination?: Locality;
}

/** Options of `declareSubscriber` and `declareQueryable`. */
export interface DeclareOptions {
  /** Which senders it hears: this session, other sessions (and routers), or any (default). */
  allowedOrigin?: Locality;
}

/** Options of `get` and `getStream`. */
export interface GetOptions extends Omit<QueryOptions, "origin" | "content"> {
  /** Which queryables it reaches: this session's, other sessions' (and routers'), or any (default). */
  allowedDestination?: Locality;
  /** A payload for the queryables on this router, with its encoding. */
  payload?: Buffer | Uint8Array | string;
  encoding?: Encoding;
  attachment?: Buffer;
}

/** Options of matching status: the publisher's or querier's destination, and a querier's target. */
export interface MatchingOptions {
  allowedDestination?: Locality;
  target?: QueryTarget;
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
  /** Unique per process: locality tells this session's declarations from others'. */
  readonly id: number;
  private readonly declared = new Set<{ undeclare(): void }>();
  private closed = false;

  constructor(router: Router, name = "session") {
    this.router = router;
    this.name = name;
    this.id = ++sessionIds;
  }

  /**
   * Opens a session on a new in-process router (what `zenoh.open()` is to Zenoh). Call
   * `close()` on the session and `router.close()` when done.
   */
  static async open(options: RouterOptions = {}): Promise<Session> {
    const router = new Router(options);
    await router.start();
    return new Session(router, "embedder");
  }

  /** Router id (uppercase hex). */
  get zid(): string {
    return this.router.zid;
  }

  /** Writes `payload` on `keyexpr`; resolves when every storage holding it has it. */
  put(keyexpr: IntoKeyExpr, payload: Buffer | Uint8Array | string, options: PutOptions = {}): Promise<void> {
    let key: string;
    try {
      key = toKeyExpr(keyexpr);
    } catch (err) {
      return Promise.reject(err);
    }
    const ts = options.timestamp ?? this.router.hlc.newTimestamp();
    return this.router.route(withSampleExtras(makeSample(key, "put", payload, options.encoding ?? Encoding.APP_OCTET_STREAM, ts), options), this.origin(options.allowedDestination));
  }

  /** Deletes `keyexpr` (every matching key, when wild); resolves when the storages have applied it. */
  async delete(keyexpr: IntoKeyExpr, options: DeleteOptions = {}): Promise<void> {
    const key = toKeyExpr(keyexpr);
    const ts = options.timestamp ?? this.router.hlc.newTimestamp();
    return this.router.route(withSampleExtras(makeSample(key, "delete", Buffer.alloc(0), Encoding.EMPTY, ts), options), this.origin(options.allowedDestination));
  }

  /** Queries every matching queryable (storages, evals, the admin space) and returns the replies. */
  async get(selector: IntoSelector, options: GetOptions = {}): Promise<Reply[]> {
    return this.router.query(toSelector(selector), this.queryOptions(options));
  }

  /**
   * Like `get`, but hands each reply to `onReply` as it arrives (consolidated as asked: `latest`
   * replies come at the end). Resolves once the query is over.
   */
  async getStream(selector: IntoSelector, onReply: (reply: Reply) => void, options: GetOptions = {}): Promise<void> {
    return this.router.queryStream(toSelector(selector), this.queryOptions(options), onReply);
  }

  /** Calls `handler` with every sample put or deleted on a key matching `keyexpr`. */
  declareSubscriber(keyexpr: IntoKeyExpr, handler: SampleHandler, options: DeclareOptions = {}): Subscriber {
    const decl: SubscriberDecl = { key: toKeyExpr(keyexpr), handler, owner: this.name, sessionId: this.id, allowedOrigin: options.allowedOrigin };
    this.router.addSubscriber(decl);
    return this.track(decl.key, () => this.router.removeSubscriber(decl));
  }

  /**
   * Answers queries intersecting `keyexpr` with `handler`. `complete`: it holds every key its
   * expression matches. `storage`: it answers with stored samples only, which change only when
   * written, so a read cache may keep its answers until the next write (default false).
   */
  declareQueryable(keyexpr: IntoKeyExpr, handler: QueryHandler, options: DeclareOptions & { complete?: boolean; storage?: boolean } = {}): Queryable {
    const decl: QueryableDecl = {
      key: toKeyExpr(keyexpr),
      handler,
      complete: options.complete ?? false,
      storage: options.storage ?? false,
      owner: this.name,
      sessionId: this.id,
      allowedOrigin: options.allowedOrigin,
    };
    this.router.addQueryable(decl);
    return this.track(decl.key, () => this.router.removeQueryable(decl));
  }

  /**
   * True when a subscriber (`subscribers`: what a publisher on `keyexpr` would reach) or a
   * queryable (`queryables`: what a querier would reach) matches, here or on another router.
   */
  matchingStatus(keyexpr: IntoKeyExpr, kind: "subscribers" | "queryables", options: MatchingOptions = {}): boolean {
    return this.router.hasMatching(kind, toKeyExpr(keyexpr), this.origin(options.allowedDestination), options.target);
  }

  /** Calls `handler` each time `matchingStatus(keyexpr, kind)` changes; closed with the session. */
  declareMatchingListener(keyexpr: IntoKeyExpr, kind: "subscribers" | "queryables", handler: (matching: boolean) => void, options: MatchingOptions = {}): MatchingListener {
    const key = toKeyExpr(keyexpr);
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
    const key = toKeyExpr(keyexpr);
    this.router.liveliness.addToken(key);
    return this.track(key, () => this.router.liveliness.removeToken(key));
  }

  /**
   * Calls `handler` with a PUT when a key matching `keyexpr` becomes alive and a DELETE when it
   * dies; with `history`, first with a PUT for each key alive now.
   */
  declareLivelinessSubscriber(keyexpr: IntoKeyExpr, handler: (sample: Sample) => void, options: { history?: boolean } = {}): Subscriber {
    const key = toKeyExpr(keyexpr);
    const remove = this.router.liveliness.addSubscriber(key, handler, options.history ?? false);
    return this.track(key, remove);
  }

  /** The keys matching `keyexpr` with a live token, as PUT samples (a liveliness get). */
  livelinessGet(keyexpr: IntoKeyExpr): Sample[] {
    return this.router.liveliness.aliveKeys(toKeyExpr(keyexpr)).map((k) => makeSample(k, "put", Buffer.alloc(0), Encoding.EMPTY));
  }

  private origin(destination: Locality | undefined): Origin {
    return { sessionId: this.id, destination: destination ?? "any" };
  }

  private queryOptions(options: GetOptions): QueryOptions {
    const { allowedDestination, payload, encoding, attachment, ...rest } = options;
    const content =
      payload === undefined && encoding === undefined && attachment === undefined
        ? undefined
        : { payload: payload === undefined ? undefined : makeSample("", "put", payload, "").payload, encoding, attachment };
    return { ...rest, origin: this.origin(allowedDestination), ...(content ? { content } : {}) };
  }

  /** Undeclares everything this session declared. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    for (const d of [...this.declared]) d.undeclare();
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

/** Parses a selector (`ke?params`); the key part is autocanonized, a bad one is a 400. */
export function toSelector(selector: IntoSelector): Selector {
  if (selector instanceof KeyExpr) return { key: selector.toString(), parameters: new Parameters() };
  if (typeof selector === "string") {
    const { key, parameters } = splitSelector(selector);
    return { key: toKeyExpr(key), parameters: new Parameters(parameters) };
  }
  const p = selector.parameters;
  return { key: toKeyExpr(selector.key), parameters: p instanceof Parameters ? p : new Parameters(p ?? "") };
}

let sessionIds = 0;
