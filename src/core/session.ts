import { isWild, KeyExpr, type KeyExprLimits } from "../keyexpr/index.js";
import { Encoding } from "./encoding.js";
import { ZestError } from "./errors.js";
import type { ChangeFeed, Clock, Interest } from "./ports.js";
import type { QueryableDecl, QueryHandler, QueryOptions, RouterOptions, SampleHandler, SubscriberDecl } from "./router.js";
import { Router, toKeyExpr } from "./router.js";
import type { Reply } from "./reply.js";
import { makeSample, type Sample, type WriteCondition } from "./sample.js";
import { Parameters, splitSelector, type Selector } from "./selector.js";
import type { Timestamp } from "./timestamp.js";

/** A key expression as the API accepts it: a `KeyExpr`, or a string that is autocanonized. */
export type IntoKeyExpr = KeyExpr | string;

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
}

/** Options of `delete`. */
export interface DeleteOptions extends ConditionOptions {
  timestamp?: Timestamp;
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
  private readonly declared = new Set<{ undeclare(): void }>();
  private closed = false;

  constructor(router: Router, name = "session") {
    this.router = router;
    this.name = name;
    this.clock = router.hlc;
    this.changes = router.changes;
    this.interest = {
      hasSubscriber: (key) => router.hasSubscriber(key),
      storagesOnly: (key) => router.storagesOnly(key),
      get clustered() {
        return router.fabric !== undefined;
      },
    };
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

  /**
   * Writes `payload` on `keyexpr`; resolves when every storage holding it has it. With
   * `ifVersion` or `ifAbsent`, rejects with `precondition_failed` when the condition fails.
   */
  put(keyexpr: IntoKeyExpr, payload: Buffer | Uint8Array | string, options: PutOptions = {}): Promise<void> {
    let key: string;
    try {
      key = toKeyExpr(keyexpr, this.router.keyExprLimits);
    } catch (err) {
      return Promise.reject(err);
    }
    const ts = options.timestamp ?? this.router.hlc.newTimestamp();
    return this.route(makeSample(key, "put", payload, options.encoding ?? Encoding.APP_OCTET_STREAM, ts), options);
  }

  /**
   * Deletes `keyexpr` (every matching key, when wild); resolves when the storages have applied
   * it. Conditions as for `put`.
   */
  async delete(keyexpr: IntoKeyExpr, options: DeleteOptions = {}): Promise<void> {
    const key = toKeyExpr(keyexpr, this.router.keyExprLimits);
    const ts = options.timestamp ?? this.router.hlc.newTimestamp();
    return this.route(makeSample(key, "delete", Buffer.alloc(0), Encoding.EMPTY, ts), options);
  }

  private route(sample: Sample, options: ConditionOptions): Promise<void> {
    if (options.ifVersion === undefined && !options.ifAbsent) return this.router.route(sample);
    let condition: WriteCondition;
    try {
      condition = conditionOf(sample.key, options);
    } catch (err) {
      return Promise.reject(err);
    }
    return this.router.routeConditional(sample, condition);
  }

  /** Queries every matching queryable (storages, evals, the admin space) and returns the replies. */
  async get(selector: IntoSelector, options: QueryOptions = {}): Promise<Reply[]> {
    return this.router.query(toSelector(selector, this.router.keyExprLimits), options);
  }

  /**
   * Calls `handler` with every sample put or deleted on a key matching `keyexpr`. `storage`: it
   * stores what it gets, and is the only kind of subscriber that receives conditional writes
   * (with their condition) before they are accepted (default false).
   */
  declareSubscriber(keyexpr: IntoKeyExpr, handler: SampleHandler, options: { storage?: boolean } = {}): Subscriber {
    const decl: SubscriberDecl = { key: toKeyExpr(keyexpr, this.router.keyExprLimits), handler, owner: this.name, storage: options.storage ?? false };
    this.router.addSubscriber(decl);
    return this.track(decl.key, () => this.router.removeSubscriber(decl));
  }

  /**
   * Answers queries intersecting `keyexpr` with `handler`. `complete`: it holds every key its
   * expression matches. `storage`: it answers with stored samples only, which change only when
   * written, so a read cache may keep its answers until the next write (default false).
   */
  declareQueryable(keyexpr: IntoKeyExpr, handler: QueryHandler, options: { complete?: boolean; storage?: boolean } = {}): Queryable {
    const decl: QueryableDecl = { key: toKeyExpr(keyexpr, this.router.keyExprLimits), handler, complete: options.complete ?? false, storage: options.storage ?? false, owner: this.name };
    this.router.addQueryable(decl);
    return this.track(decl.key, () => this.router.removeQueryable(decl));
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

/** The condition of a write's options; a conditional write names one key. */
function conditionOf(key: string, options: ConditionOptions): WriteCondition {
  if (options.ifVersion !== undefined && options.ifAbsent) throw ZestError.badRequest("give either ifVersion or ifAbsent, not both");
  if (isWild(key)) throw ZestError.badRequest(`a conditional write names one key, not a key expression with wildcards (${key})`);
  if (options.ifVersion !== undefined) {
    if (options.ifVersion.length === 0 || options.ifVersion.length > 256) throw ZestError.badRequest("ifVersion must be 1 to 256 characters");
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
