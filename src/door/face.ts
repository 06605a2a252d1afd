/**
 * One zenoh client's face on the router (docs/architecture.md, "The zenoh face"): what zenoh's
 * router keeps per connected client, shared by both zenoh doors (the wire protocol in
 * src/zenoh/, the zenoh-ts remote API in src/remote/). It holds the client's declarations by id,
 * its gets in flight, the router queries waiting on its queryables and the checks on its
 * replies; it applies access control and the admin-space permissions (one `verdict`), the
 * lifetimes a put asks for (a `zest:` attachment, `session_bound.key_exprs`) and the limits;
 * and it releases everything when the client goes. A door keeps only its codec and what its
 * protocol alone has, and hears back through a `FaceSink`.
 */
import type { Buffer } from "node:buffer";
import type { Message } from "../access/access.js";
import { checkAdminRead, checkAdminWrite, isAdminKey } from "../access/admin-permissions.js";
import type { ClientPolicy } from "../access/client-policy.js";
import type { Encoding } from "../core/encoding.js";
import { errorMessage, ZestError } from "../core/errors.js";
import { type CanonicalKey, toKeyExpr } from "../core/key.js";
import type { Logger } from "../core/log.js";
import type { Query } from "../core/query.js";
import type { Reply } from "../core/reply.js";
import type { Sample, SourceInfo } from "../core/sample.js";
import { BOUND_BY_KEY, putLifetime, type SessionBoundKeys } from "../core/session-bound.js";
import type {
  DeclareOptions,
  DeleteOptions,
  GetOptions,
  LivelinessToken,
  PutOptions,
  Queryable,
  Session,
  Subscriber,
} from "../core/session.js";
import { SETTLED } from "../core/settled.js";
import { intersects } from "../keyexpr/index.js";
import { refusalReply } from "./errors.js";
import type { FaceLimits } from "./limits.js";

/** A per-key filter: true when what an operation delivers on `key` may reach the client. */
export type KeyFilter = (key: string) => boolean;

/**
 * The messages that read. On the admin space they need read permission; every other message
 * provides data (a write, a queryable, a token, a reply) and needs write permission. A read may be
 * allowed in part (its deliveries are filtered per key); what provides data must be allowed whole.
 * A switch, not a set: it runs on every routed put, and the set's hash lookup was 2% of that.
 */
function isRead(message: Message): boolean {
  switch (message) {
    case "query":
    case "declare_subscriber":
    case "declare_liveliness_subscriber":
    case "liveliness_query":
      return true;
    default:
      return false;
  }
}

/** How the face talks back to its door: each call is one message to the client. */
export interface FaceSink {
  /** A sample for the client's subscriber `subscriberId`. */
  sample(subscriberId: number, sample: Sample): void;
  /** A reply (or an error reply) to the client's get `getId`. */
  reply(getId: number, reply: Reply): void;
  /** The end of the client's get `getId`. */
  final(getId: number): void;
  /**
   * A router query for the client's queryable `queryableId`, named `queryId` in the client's
   * replies. False when it could not be sent (the query then ends for this queryable).
   */
  query(queryableId: number, queryId: number, query: Query): boolean;
  /** Stop reading the client until `resume` (back-pressure); a door that cannot, has neither. */
  pause?(): void;
  resume?(): void;
}

export interface FaceOptions {
  /** The client's own core session: everything the face declares is released with it. */
  readonly session: Session;
  /** What the client may do (the edge policy's decision for it). */
  readonly policy: ClientPolicy;
  readonly limits: FaceLimits;
  /** Tagged with the client's name (zid or connection id). */
  readonly logger: Logger;
  readonly sink: FaceSink;
  /** `session_bound.key_exprs`: puts on them are bound to the client's session. */
  readonly sessionBound?: SessionBoundKeys | undefined;
  /**
   * Routing once per face, as zenoh's router does for a wire client: a sample (or a query) reaches
   * the client once however many of its subscribers (or queryables) match, and the client hands it
   * to each of them. Off for the remote API, whose messages name the one subscriber or queryable a
   * message is for.
   */
  readonly oncePerFace?: boolean;
  /**
   * A declaration id the client uses again: `replace` the earlier declaration (zenoh's wire
   * protocol) or `refuse` it with `conflict` (the remote API).
   */
  readonly redeclare: "replace" | "refuse";
  /** Declarations the door holds itself (publishers, interests…), counted against the limit. */
  readonly doorDeclarations?: () => number;
}

interface IncomingQuery {
  readonly query: Query;
  readonly done: () => void;
}

/** The options of a client's get, as its door decoded them. */
export interface FaceGet extends Omit<GetOptions, "timeoutMs"> {
  readonly parameters: string;
  /** The client's timeout (ms): 0 for the router's default; clamped to `maxQueryTimeoutMs`. */
  readonly timeoutMs: number;
  /** The most replies to hand on (zenoh's budget); undefined: all. */
  readonly budget?: number;
}

export class Face {
  readonly session: Session;
  readonly policy: ClientPolicy;
  readonly #limits: FaceLimits;
  /** Gets in flight at which the client is no longer read. */
  readonly #pauseAt: number;
  readonly #logger: Logger;
  readonly #sink: FaceSink;
  readonly #sessionBound: SessionBoundKeys | undefined;
  readonly #oncePerFace: boolean;
  readonly #replace: boolean;
  readonly #doorDeclarations: (() => number) | undefined;
  readonly #subscribers = new Map<number, Subscriber>();
  readonly #queryables = new Map<number, Queryable>();
  readonly #tokens = new Map<number, LivelinessToken>();
  readonly #livelinessSubscribers = new Map<number, Subscriber>();
  /** Keys of the client's own tokens, with counts (a token is never echoed back to its owner). */
  readonly #ownTokens = new Map<string, number>();
  /** Router queries the client's queryables are answering, by the id the client replies with. */
  readonly #incoming = new Map<number, IncomingQuery>();
  #nextQueryId = 0;
  #pendingGets = 0;
  /** The key of the client's last put, which its policy allowed. */
  #lastPutKey: string | undefined;
  /** The sample last handed to the client (routing once per face). */
  #lastSample: Sample | undefined;
  #closed = false;

  constructor(options: FaceOptions) {
    this.session = options.session;
    this.policy = options.policy;
    this.#limits = options.limits;
    this.#pauseAt = Math.min(options.limits.pauseAtPendingGets, options.limits.maxPendingGets);
    this.#logger = options.logger;
    this.#sink = options.sink;
    this.#sessionBound = options.sessionBound?.empty === false ? options.sessionBound : undefined;
    this.#oncePerFace = options.oncePerFace === true;
    this.#replace = options.redeclare === "replace";
    this.#doorDeclarations = options.doorDeclarations;
  }

  /** True once the client is gone and everything released. */
  get closed(): boolean {
    return this.#closed;
  }

  /** Declarations held: the face's and the door's own. */
  get declarations(): number {
    return (
      this.#subscribers.size +
      this.#queryables.size +
      this.#tokens.size +
      this.#livelinessSubscribers.size +
      (this.#doorDeclarations?.() ?? 0)
    );
  }

  /** Gets of the client's in flight. */
  get pendingGets(): number {
    return this.#pendingGets;
  }

  // ---- keys and access ----------------------------------------------------------------------

  /** `raw` canonized with the router's limits (throws `bad_input` for an invalid key expression). */
  key(raw: string): CanonicalKey {
    return toKeyExpr(raw, this.session.keyExprLimits);
  }

  /**
   * The decision on `message` over the canonical `key`: `true` for all of it, or a per-key filter
   * for a read allowed in part. Throws the refusal (`forbidden`, or `unauthenticated` when
   * credentials could help) otherwise. The admin space's permissions come first.
   */
  verdict(message: Message, key: string): true | KeyFilter {
    const read = isRead(message);
    if (isAdminKey(key)) {
      const { admin, loopback } = this.policy;
      if (read) checkAdminRead(admin, key);
      else checkAdminWrite(admin, key, loopback);
    }
    const decision = this.policy.decide(message, key);
    if (decision === "allow") return true;
    if (decision === "deny") throw this.policy.refusal(`${message.replace(/_/g, " ")} ${key}`);
    if (!read)
      throw this.policy.refusal(`${message.replace(/_/g, " ")} ${key}: it reaches keys outside the allowed ones`);
    return (k) => this.policy.decide(message, k) === "allow";
  }

  /** Throws the refusal unless `message` is allowed on all of `key`. */
  authorize(message: Message, key: string): void {
    if (this.verdict(message, key) !== true)
      throw this.policy.refusal(`${message.replace(/_/g, " ")} ${key}: it reaches keys outside the allowed ones`);
  }

  /** True when `message` is allowed on all of `key` (for checks per delivery; never throws). */
  allows(message: Message, key: string): boolean {
    try {
      return this.verdict(message, key) === true;
    } catch {
      return false;
    }
  }

  /** Throws `too_large` when the client holds as many declarations as it may. */
  checkDeclarationLimit(): void {
    if (this.declarations >= this.#limits.maxDeclarations)
      throw ZestError.tooLarge(`this client already holds ${this.#limits.maxDeclarations} declarations (the limit)`);
  }

  // ---- writes -------------------------------------------------------------------------------

  /**
   * A put from the client on the canonical `key`. Throws (nothing written) when access or the
   * admin permissions refuse it or its `zest:` attachment is malformed. A `zest:` attachment or
   * `session_bound.key_exprs` gives it a lifetime (the attachment is then not handed on). What
   * the storages answer later is logged: zenoh writes are fire-and-forget. `options` is the
   * door's own object, completed in place.
   */
  put(key: CanonicalKey, payload: Buffer, options: PutOptions): void {
    // The client's policy is fixed for its connection: a key allowed once stays allowed (a
    // publisher's puts repeat one key, and the check was a tenth of the door's work per put).
    if (key !== this.#lastPutKey) {
      this.authorize("put", key);
      this.#lastPutKey = key;
    }
    const attachment = options.attachment;
    if (attachment !== undefined || this.#sessionBound !== undefined) {
      const life = putLifetime(key, attachment, this.#sessionBound);
      if (life !== undefined) {
        if (attachment !== undefined && life !== BOUND_BY_KEY) options.attachment = undefined;
        Object.assign(options, life);
      }
    }
    this.#settle(this.session.putKey(key, payload, options), key);
  }

  /** A delete from the client on the canonical `key` (refusals as `put`). */
  delete(key: CanonicalKey, options: DeleteOptions): void {
    this.authorize("delete", key);
    this.#settle(this.session.deleteKey(key, options), key);
  }

  #settle(done: Promise<void>, key: string): void {
    // Every storage took it at once (the common case): no handler to attach.
    if (done === SETTLED) return;
    done.catch((err: unknown) => this.#logger.info({ key, err: errorMessage(err) }, "zenoh write failed"));
  }

  // ---- the client's gets --------------------------------------------------------------------

  /**
   * A get of the client's on the canonical `key`: its replies (those on keys it may read, within
   * its budget) go to `sink.reply`, then one `sink.final`. A refusal (access, the gets-in-flight
   * limit) is an error reply and a final.
   */
  get(getId: number, key: CanonicalKey, g: FaceGet): void {
    let filter: KeyFilter | undefined;
    try {
      const v = this.verdict("query", key);
      if (v !== true) filter = v;
      if (this.#pendingGets >= this.#limits.maxPendingGets)
        throw ZestError.unavailable(
          `this client already has ${this.#limits.maxPendingGets} gets in flight (the limit)`,
        );
    } catch (err) {
      this.#sink.reply(getId, refusalReply(err));
      this.#sink.final(getId);
      return;
    }
    const { parameters, timeoutMs, budget, ...options } = g;
    let left = budget ?? Number.POSITIVE_INFINITY;
    // Back-pressure: at the mark, the client is not read until one of its gets ends.
    if (++this.#pendingGets === this.#pauseAt) this.#sink.pause?.();
    // The final goes out in the call that ends the query: when a queryable client's final ends
    // it, before any answer read after that one is routed, as zenohd keeps them in order
    // (zenoh-ext's advanced subscriber loses history otherwise; docs/zenoh-protocol.md).
    this.session.streamGet(
      { key, parameters },
      (reply) => {
        if (filter !== undefined && reply.kind === "ok" && !filter(reply.sample.key)) return;
        if (left-- > 0) this.#sink.reply(getId, reply);
      },
      (err) => {
        if (err !== undefined) this.#sink.reply(getId, refusalReply(err));
        if (this.#pendingGets-- === this.#pauseAt && !this.#closed) this.#sink.resume?.();
        this.#sink.final(getId);
      },
      { ...options, timeoutMs: timeoutMs === 0 ? undefined : Math.min(timeoutMs, this.#limits.maxQueryTimeoutMs) },
    );
  }

  // ---- declarations -------------------------------------------------------------------------

  /** Checks a new declaration of `id` in `map`: within the limit, and (unless replaced) a fresh id. */
  #declaring(map: Map<number, unknown>, id: number): void {
    if (!this.#replace && map.has(id)) throw ZestError.conflict(`id ${id} is already declared`);
    this.checkDeclarationLimit();
  }

  /** A subscriber of the client's on the canonical `key` (allowed in part: samples filtered per key). */
  declareSubscriber(id: number, key: CanonicalKey, options: DeclareOptions = {}): void {
    this.#declaring(this.#subscribers, id);
    const v = this.verdict("declare_subscriber", key);
    const filter = v === true ? undefined : v;
    const sink = this.#sink;
    const handler = this.#oncePerFace
      ? (s: Sample) => {
          if (s === this.#lastSample) return;
          this.#lastSample = s;
          if (filter === undefined || filter(s.key)) sink.sample(id, s);
        }
      : filter === undefined
        ? (s: Sample) => sink.sample(id, s)
        : (s: Sample) => void (filter(s.key) && sink.sample(id, s));
    this.#subscribers.get(id)?.undeclare();
    this.#subscribers.set(id, this.session.declareSubscriber(key, handler, options));
  }

  /** Undeclares subscriber `id`; false when the client has none by that id. */
  undeclareSubscriber(id: number): boolean {
    return this.#undeclare(this.#subscribers, id);
  }

  /** A queryable of the client's on the canonical `key`: router queries reach it through `sink.query`. */
  declareQueryable(id: number, key: CanonicalKey, options: DeclareOptions & { complete?: boolean } = {}): void {
    this.#declaring(this.#queryables, id);
    this.authorize("declare_queryable", key);
    this.#queryables.get(id)?.undeclare();
    this.#queryables.set(
      id,
      this.session.declareQueryable(key, (q) => this.#forwardQuery(id, q), options),
    );
  }

  /** Undeclares queryable `id`; false when the client has none by that id. */
  undeclareQueryable(id: number): boolean {
    return this.#undeclare(this.#queryables, id);
  }

  /** A liveliness token of the client's on the canonical `key` (a token id used again is kept as it is, when replacing). */
  declareToken(id: number, key: CanonicalKey): void {
    if (this.#replace && this.#tokens.has(id)) return;
    this.#declaring(this.#tokens, id);
    this.authorize("liveliness_token", key);
    this.#ownTokens.set(key, (this.#ownTokens.get(key) ?? 0) + 1);
    this.#tokens.set(id, this.session.declareLivelinessToken(key));
  }

  /** Undeclares token `id` (its subscribers see it go); false when the client has none by that id. */
  undeclareToken(id: number): boolean {
    const t = this.#tokens.get(id);
    if (t === undefined) return false;
    this.#tokens.delete(id);
    const n = (this.#ownTokens.get(t.key) ?? 1) - 1;
    if (n <= 0) this.#ownTokens.delete(t.key);
    else this.#ownTokens.set(t.key, n);
    t.undeclare();
    return true;
  }

  /** True when `key` is one of the client's own live tokens. */
  ownsToken(key: string): boolean {
    return this.#ownTokens.has(key);
  }

  /**
   * A liveliness subscriber of the client's on the canonical `key`: token samples (with the live
   * tokens first, with `history`) go to `deliver`, filtered per key when allowed in part.
   */
  declareLivelinessSubscriber(id: number, key: CanonicalKey, history: boolean, deliver: (s: Sample) => void): void {
    this.#declaring(this.#livelinessSubscribers, id);
    const v = this.verdict("declare_liveliness_subscriber", key);
    const handler = v === true ? deliver : (s: Sample) => void (v(s.key) && deliver(s));
    this.#livelinessSubscribers.get(id)?.undeclare();
    this.#livelinessSubscribers.set(id, this.session.declareLivelinessSubscriber(key, handler, { history }));
  }

  /** Undeclares liveliness subscriber `id`; false when the client has none by that id. */
  undeclareLivelinessSubscriber(id: number): boolean {
    return this.#undeclare(this.#livelinessSubscribers, id);
  }

  /** The live tokens on the canonical `key` the client may see (a liveliness get). */
  livelinessGet(key: CanonicalKey): Sample[] {
    const v = this.verdict("liveliness_query", key);
    const samples = this.session.livelinessGet(key);
    return v === true ? samples : samples.filter((s) => v(s.key));
  }

  #undeclare(map: Map<number, { undeclare(): void }>, id: number): boolean {
    const d = map.get(id);
    if (d === undefined) return false;
    map.delete(id);
    d.undeclare();
    return true;
  }

  // ---- router queries to the client's queryables --------------------------------------------

  /** Hands `query` to the client's queryable; it ends on the client's final, or the query's end. */
  #forwardQuery(queryableId: number, query: Query): Promise<void> {
    if (this.#closed) return Promise.resolve();
    // Once per face: the client's session hands the query to each of its queryables itself.
    if (this.#oncePerFace && query.round !== undefined && !query.round.first(this)) return Promise.resolve();
    if (this.#incoming.size >= this.#limits.maxPendingQueries) {
      query.replyErr(
        `unavailable: the queryable's client has ${this.#limits.maxPendingQueries} queries pending (the limit)`,
        { errorKind: "unavailable" },
      );
      return Promise.resolve();
    }
    this.#nextQueryId = (this.#nextQueryId + 1) >>> 0;
    const queryId = this.#nextQueryId;
    return new Promise<void>((resolve) => {
      const done = (): void => {
        if (this.#incoming.get(queryId)?.query === query) this.#incoming.delete(queryId);
        resolve();
      };
      this.#incoming.set(queryId, { query, done });
      query.onFinished(done);
      if (!this.#sink.query(queryableId, queryId, query)) done();
    });
  }

  /**
   * The query a reply of the client's is for, and the reply's key, or undefined when the reply is
   * dropped (and logged): an unknown or finished query, an invalid key (`keyOf` throws), a key
   * outside the query without `_anyke`, or a key the client may not answer for
   * (`declare_queryable` on the reply's key: a reply may name keys its queryable's does not reach).
   */
  replyTarget(queryId: number, keyOf: () => string): { query: Query; key: CanonicalKey } | undefined {
    const query = this.#incoming.get(queryId)?.query;
    if (query === undefined) {
      this.#logger.debug({ queryId }, "zenoh reply for an unknown or finished query dropped");
      return undefined;
    }
    let key: CanonicalKey;
    try {
      key = this.key(keyOf());
    } catch (err) {
      this.#logger.info({ err: errorMessage(err) }, "zenoh reply with an invalid key expression dropped");
      return undefined;
    }
    if (!query.parameters.has("_anyke") && key !== query.key && !intersects(query.key, key)) {
      this.#logger.info({ key, query: query.key }, "zenoh reply outside the query's key expression dropped");
      return undefined;
    }
    if (!this.allows("declare_queryable", key)) {
      this.#logger.info({ key, query: query.key }, "zenoh reply on a key the client may not answer for dropped");
      return undefined;
    }
    return { query, key };
  }

  /**
   * An error reply of the client's to query `queryId` (dropped when the query is unknown or
   * finished), with its source info when the client gave one.
   */
  replyErr(queryId: number, payload: Buffer, encoding: Encoding, sourceInfo?: SourceInfo): void {
    this.#incoming
      .get(queryId)
      ?.query.replyErr(payload, sourceInfo === undefined ? { encoding } : { encoding, sourceInfo });
  }

  /**
   * The client's final for query `queryId`: that query is done for its queryable, now (the
   * querier's get may end in this call, its final sent before the client's next answer).
   */
  finishQuery(queryId: number): void {
    // Its finished listener is the query's `done`.
    this.#incoming.get(queryId)?.query.finish();
  }

  // ---- release ------------------------------------------------------------------------------

  /** Releases everything: queries waiting on the client end, its declarations go (its tokens' subscribers see DELETE). */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    for (const q of [...this.#incoming.values()]) q.done();
    this.#incoming.clear();
    this.#subscribers.clear();
    this.#queryables.clear();
    this.#tokens.clear();
    this.#ownTokens.clear();
    this.#livelinessSubscribers.clear();
    this.#lastSample = undefined;
    // The session undeclares all it declared: subscribers, queryables, tokens, listeners.
    this.session.close();
  }
}
