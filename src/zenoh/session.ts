/**
 * One zenoh client's or peer's session on the router (docs/zenoh-protocol.md): its network
 * messages mapped onto a core `Session`, the same zenoh semantics the remote API door uses.
 * PUSH → put/delete; REQUEST → get, answered with RESPONSE and RESPONSE_FINAL; DECLARE →
 * key-expression ids, subscribers (fed with PUSH), queryables (fed with REQUEST), liveliness
 * tokens; INTEREST → the declarations the router knows, now and as they change.
 */
import { Buffer } from "node:buffer";
import type { Decision, Message } from "../access/access.js";
import { Encoding, fromZenohEncoding } from "../core/encoding.js";
import { errorMessage, ZestError } from "../core/errors.js";
import { SETTLED } from "../core/settled.js";
import type { Logger } from "../core/log.js";
import type { Connectivity } from "../core/ports.js";
import type { MatchingListener } from "../core/matching.js";
import type { Query } from "../core/query.js";
import type { Reply } from "../core/reply.js";
import { makeSample, type Sample, withSampleExtras } from "../core/sample.js";
import type { LivelinessToken, PutOptions, Queryable, Session, Subscriber } from "../core/session.js";
import { intersects } from "../keyexpr/index.js";
import { type CanonicalKey, toKeyExpr } from "../core/key.js";
import { DEFAULT_QOS_BYTE, qosByte, qosOfByte, type WireExpr } from "./codec/core.js";
import type { Declaration } from "./codec/declarations.js";
import {
  encodeDeclare,
  encodeSamplePush,
  encodeRequest,
  encodeResponseErr,
  encodeResponseFinal,
  carriedExtensions,
  encodeSampleResponse,
  type InterestMsg,
  InterestOption,
  type NetworkMsg,
  type PushMsg,
  type RequestMsg,
  type ResponseMsg,
} from "./codec/network.js";
import type { PushBody } from "./codec/zenoh.js";
import { declarationOf, InterestDeclarations, matchingNow } from "./interest-declarations.js";
import type { NetworkHandler, PeerInfo, ZenohLink } from "./link.js";
import { BOUND_BY_KEY, putLifetime, type SessionBoundKeys } from "./session-bound.js";

/** The limits of one zenoh session. */
export interface SessionLimits {
  /** Subscribers, queryables, tokens and interests together. */
  maxDeclarations: number;
  /** Key-expression ids the peer may declare. */
  maxKeyExprIds: number;
  /** Its gets in flight. */
  maxPendingGets: number;
  /** Router queries waiting on its queryables. */
  maxPendingQueries: number;
  /** The longest a get of its may run (ms). */
  maxQueryTimeoutMs: number;
}

/** Access control's decision on one message on one key expression (undefined: everything allowed). */
export type Guard = (message: Message, key: string) => Decision;

/** Zenoh's default encoding (`zenoh/bytes`), for samples that carry none. */
const DEFAULT_ENCODING = fromZenohEncoding(0, "");
const EMPTY = Buffer.alloc(0);
const NO_KEY: WireExpr = { scope: 0, suffix: "", senderMapping: false };

/** One INTEREST's future part: what it watches, to stop it on INTEREST final or close. */
interface InterestWatch {
  stop(): void;
}

export class ZenohSession implements NetworkHandler {
  private readonly keyexprs = new Map<number, string>();
  /** Keys of the declared ids used alone, resolved; cleared when any id is declared or undeclared. */
  private readonly resolvedIds = new Map<number, CanonicalKey>();
  private readonly subscribers = new Map<number, Subscriber>();
  private readonly queryables = new Map<number, Queryable>();
  private readonly tokens = new Map<number, LivelinessToken>();
  /** Keys of this peer's own tokens (with counts), never echoed back to it. */
  private readonly ownTokens = new Map<string, number>();
  private readonly interests = new Map<number, InterestWatch>();
  /** Router queries this peer's queryables are answering, by request id. */
  private readonly incoming = new Map<number, { query: Query; done: () => void }>();
  private nextRequestId = 0;
  /** Declaration ids the router gives in answers to interests. */
  private nextDeclId = 0;
  private pendingGets = 0;
  private closed = false;
  /** `session_bound.key_exprs` lists some key expression (a put may then be bound by its key). */
  private readonly bindsByKey: boolean;

  constructor(
    private readonly link: ZenohLink,
    readonly peer: PeerInfo,
    private readonly session: Session,
    private readonly connectivity: Connectivity,
    private readonly logger: Logger,
    private readonly limits: SessionLimits,
    private readonly guard?: Guard,
    /** `session_bound.key_exprs`: puts on them are bound to this session. */
    private readonly sessionBound?: SessionBoundKeys,
  ) {
    this.bindsByKey = sessionBound !== undefined && !sessionBound.empty;
  }

  /** True unless access control refuses `message` on `key` (wholly: a partial decision refuses). */
  private allowed(message: Message, key: string): boolean {
    return this.guard === undefined || this.guard(message, key) === "allow";
  }

  /** Throws `forbidden` unless access control allows `message` on all of `key`. */
  private authorize(message: Message, key: string): void {
    if (!this.allowed(message, key))
      throw ZestError.forbidden(`access control: this session may not ${message.replace(/_/g, " ")} ${key}`);
  }

  /** Subscribers, queryables, tokens and interests held. */
  get declarations(): number {
    return this.subscribers.size + this.queryables.size + this.tokens.size + this.interests.size;
  }

  onMessage(msg: NetworkMsg): void {
    switch (msg.kind) {
      case "push":
        this.onPush(msg);
        return;
      case "request":
        this.onRequest(msg);
        return;
      case "response":
        this.onResponse(msg);
        return;
      case "responseFinal":
        this.incoming.get(msg.id)?.done();
        return;
      case "declare":
        this.onDeclare(msg.decl);
        return;
      case "interest":
        this.onInterest(msg);
        return;
      case "oam":
        return;
    }
  }

  onClose(): void {
    if (this.closed) return;
    this.closed = true;
    for (const i of this.interests.values()) i.stop();
    this.interests.clear();
    for (const { done } of [...this.incoming.values()]) done();
    // Undeclares its subscribers, queryables and liveliness tokens: its tokens die with it.
    this.session.close();
  }

  // ---- key expressions ----------------------------------------------------------------------

  /**
   * The key a wire expression names: the peer's declared prefix (if any) and the suffix, canonized.
   * A declared id alone (every PUSH of a zenoh publisher) is resolved once, then looked up.
   */
  private resolve(ke: WireExpr): CanonicalKey {
    if (ke.suffix === "" && ke.scope !== 0 && ke.senderMapping) {
      const known = this.resolvedIds.get(ke.scope);
      if (known !== undefined) return known;
      const key = this.resolveNow(ke);
      // Bounded as the ids are: only a declared id resolves.
      this.resolvedIds.set(ke.scope, key);
      return key;
    }
    return this.resolveNow(ke);
  }

  private resolveNow(ke: WireExpr): CanonicalKey {
    let key = ke.suffix;
    if (ke.scope !== 0) {
      if (!ke.senderMapping) throw ZestError.badRequest(`key-expression id ${ke.scope} is not one the router declared`);
      const prefix = this.keyexprs.get(ke.scope);
      if (prefix === undefined) throw ZestError.badRequest(`unknown key-expression id ${ke.scope}`);
      key = prefix + ke.suffix;
    }
    return toKeyExpr(key, this.session.keyExprLimits);
  }

  // ---- writes -------------------------------------------------------------------------------

  private onPush(msg: PushMsg): void {
    let key: CanonicalKey;
    try {
      key = this.resolve(msg.key);
    } catch (err) {
      this.logger.info({ zid: this.peer.zid, err: errorMessage(err) }, "zenoh PUSH with a bad key expression dropped");
      return;
    }
    this.write(key, msg.body, msg.qos, msg.exts);
  }

  private write(key: CanonicalKey, b: PushBody, qos: number, exts: Buffer[] | undefined): void {
    if (this.guard !== undefined && !this.allowed(b.kind, key)) {
      this.logger.info({ zid: this.peer.zid, key, kind: b.kind }, "zenoh write refused by access control");
      return;
    }
    const put = b.kind === "put";
    // One object literal, every field in place (one shape). Without a timestamp, it is stamped
    // with the router's clock, as zenohd with timestamping on; one clock reading per batch (this
    // turn), not per write: the stamps stay unique and increasing. Payload and attachment are the
    // decoder's copies (codec/zenoh.ts), not views into the batch.
    const options: PutOptions = {
      qos: qosOfByte(qos),
      allowedDestination: "remote",
      timestamp: b.timestamp ?? this.session.clock.newTimestampInTurn(),
      encoding: put ? (b.hasEncoding ? b.encoding : DEFAULT_ENCODING) : undefined,
      attachment: b.attachment,
      sourceInfo: b.sourceInfo,
      extensions: carriedExtensions(exts, b.unknownExts),
    };
    let done: Promise<void>;
    if (put) {
      // A lifetime asked for (docs/ttl-and-leases.md): its `zest:` attachment is not handed on.
      if (b.attachment !== undefined || this.bindsByKey) {
        let life: ReturnType<typeof putLifetime>;
        try {
          life = putLifetime(key, b.attachment, this.sessionBound);
        } catch (err) {
          this.logger.info({ zid: this.peer.zid, key, err: errorMessage(err) }, "zenoh put refused: bad lifetime");
          return;
        }
        if (life !== undefined) {
          if (b.attachment && life !== BOUND_BY_KEY) options.attachment = undefined;
          Object.assign(options, life);
        }
      }
      done = this.session.putKey(key, b.payload, options);
    } else done = this.session.deleteKey(key, options);
    // Every storage took it at once (the common case): no handler to attach.
    if (done === SETTLED) return;
    done.catch((err: unknown) =>
      this.logger.info({ zid: this.peer.zid, key, err: errorMessage(err) }, "zenoh write failed"),
    );
  }

  /** Hands a sample to this peer's subscriber as a PUSH (dropped first when the peer reads slowly and it may be). */
  private sendSample(sample: Sample): void {
    if (this.guard !== undefined && !this.allowed("declare_subscriber", sample.key)) return;
    // On its QoS priority lane, so a high-priority sample is not queued behind bulk data.
    const w = this.link.startMessage(
      sample.qos?.congestionControl !== "block",
      sample.qos?.priority,
      sample.qos?.express === true,
    );
    if (w === undefined) return;
    encodeSamplePush(w, sample, qosByte(sample.qos));
    this.link.endMessage();
  }

  // ---- gets from this peer ------------------------------------------------------------------

  private onRequest(msg: RequestMsg): void {
    if (msg.body.kind === "push") {
      // A put or delete sent as a request (zenoh's "reliable write"): apply it, then end the request.
      try {
        this.write(this.resolve(msg.key), msg.body.push, msg.qos, msg.exts);
      } catch (err) {
        this.sendErr(msg.id, err);
      }
      this.sendFinal(msg.id);
      return;
    }
    const q = msg.body.query;
    let key: string;
    try {
      key = this.resolve(msg.key);
      if (this.guard !== undefined && this.guard("query", key) === "deny")
        throw ZestError.forbidden(`access control: this session may not query ${key}`);
      if (this.pendingGets >= this.limits.maxPendingGets)
        throw ZestError.unavailable(
          `this session already has ${this.limits.maxPendingGets} gets in flight (the limit)`,
        );
    } catch (err) {
      this.sendErr(msg.id, err);
      this.sendFinal(msg.id);
      return;
    }
    const timeoutMs = msg.timeoutMs === 0 ? undefined : Math.min(msg.timeoutMs, this.limits.maxQueryTimeoutMs);
    let budget = msg.budget === 0 ? Number.POSITIVE_INFINITY : msg.budget;
    this.pendingGets++;
    this.session
      .getStream(
        { key, parameters: q.parameters },
        (reply) => {
          // A query allowed in part gets the replies on keys it may read.
          if (reply.kind === "ok" && this.guard !== undefined && !this.allowed("query", reply.sample.key)) return;
          if (budget-- > 0) this.sendReply(msg.id, reply);
        },
        {
          timeoutMs,
          // zenoh's router forwards every reply; the client's session consolidates them.
          consolidation: "none",
          target: msg.target,
          allowedDestination: "remote",
          ...(q.body ? { payload: Buffer.from(q.body.payload), encoding: q.body.encoding } : {}),
          ...(q.attachment ? { attachment: Buffer.from(q.attachment) } : {}),
          sourceInfo: q.sourceInfo,
          extensions: carriedExtensions(msg.exts, q.unknownExts),
        },
      )
      .catch((err: unknown) => this.sendErr(msg.id, err))
      .finally(() => {
        this.pendingGets--;
        this.sendFinal(msg.id);
      });
  }

  private sendReply(id: number, reply: Reply): void {
    if (reply.kind === "err") {
      const w = this.link.startMessage(false);
      if (w === undefined) return;
      encodeResponseErr(w, id, NO_KEY, {
        encoding: reply.encoding,
        payload: reply.payload,
        ...(reply.sourceInfo !== undefined ? { sourceInfo: reply.sourceInfo } : {}),
      });
      this.link.endMessage();
      return;
    }
    const w = this.link.startMessage(false);
    if (w === undefined) return;
    encodeSampleResponse(w, id, reply.sample);
    this.link.endMessage();
  }

  private sendErr(id: number, err: unknown): void {
    const e = err instanceof ZestError ? err : new ZestError("internal", errorMessage(err));
    const w = this.link.startMessage(false);
    if (w === undefined) return;
    encodeResponseErr(w, id, NO_KEY, {
      encoding: Encoding.TEXT_PLAIN,
      payload: Buffer.from(`${e.kind}: ${e.message}`),
    });
    this.link.endMessage();
  }

  private sendFinal(id: number): void {
    const w = this.link.startMessage(false);
    if (w === undefined) return;
    encodeResponseFinal(w, id);
    this.link.endMessage();
  }

  // ---- queries to this peer's queryables ----------------------------------------------------

  private forwardQuery(query: Query): Promise<void> {
    if (this.closed) return Promise.resolve();
    if (this.incoming.size >= this.limits.maxPendingQueries) {
      query.replyErr(
        `unavailable: the queryable's session has ${this.limits.maxPendingQueries} queries pending (the limit)`,
        {
          errorKind: "unavailable",
        },
      );
      return Promise.resolve();
    }
    this.nextRequestId = (this.nextRequestId + 1) >>> 0;
    const id = this.nextRequestId;
    return new Promise<void>((resolve) => {
      const done = (): void => {
        if (this.incoming.get(id)?.query === query) this.incoming.delete(id);
        resolve();
      };
      this.incoming.set(id, { query, done });
      query.onFinished(done);
      const w = this.link.startMessage(false);
      if (w === undefined) {
        done();
        return;
      }
      encodeRequest(w, {
        id,
        key: { scope: 0, suffix: query.key, senderMapping: false },
        target: "all",
        exts: query.extensions?.network,
        query: {
          sourceInfo: query.sourceInfo,
          unknownExts: query.extensions?.body,
          consolidation: "auto",
          parameters: query.parameters.raw,
          ...(query.payload !== undefined || query.encoding !== undefined
            ? { body: { encoding: query.encoding ?? "", payload: query.payload ?? EMPTY } }
            : {}),
          ...(query.attachment ? { attachment: query.attachment } : {}),
        },
      });
      this.link.endMessage();
    });
  }

  private onResponse(msg: ResponseMsg): void {
    const q = this.incoming.get(msg.id)?.query;
    if (q === undefined) {
      this.logger.debug({ zid: this.peer.zid, id: msg.id }, "zenoh RESPONSE for an unknown or finished query dropped");
      return;
    }
    if (msg.body.kind === "err") {
      const e = msg.body.err;
      q.replyErr(e.payload, {
        encoding: e.encoding === "" ? DEFAULT_ENCODING : e.encoding,
        ...(e.sourceInfo !== undefined ? { sourceInfo: e.sourceInfo } : {}),
      });
      return;
    }
    let key: string;
    try {
      key = this.resolve(msg.key);
    } catch (err) {
      this.logger.info({ zid: this.peer.zid, err: errorMessage(err) }, "zenoh reply with a bad key expression dropped");
      return;
    }
    if (!this.allowed("declare_queryable", key)) {
      this.logger.info({ zid: this.peer.zid, key }, "zenoh reply on a key the session may not answer for dropped");
      return;
    }
    if (!q.parameters.has("_anyke") && key !== q.key && !intersects(q.key, key)) {
      this.logger.info(
        { zid: this.peer.zid, key, query: q.key },
        "zenoh reply outside the query's key expression dropped",
      );
      return;
    }
    const b = msg.body.push;
    const sample = withSampleExtras(
      makeSample(
        key,
        b.kind,
        b.kind === "put" ? b.payload : EMPTY,
        b.kind === "put" ? (b.hasEncoding ? b.encoding : DEFAULT_ENCODING) : Encoding.EMPTY,
        b.timestamp,
      ),
      {
        ...(b.attachment ? { attachment: b.attachment } : {}),
        ...(msg.qos !== DEFAULT_QOS_BYTE ? { qos: qosOfByte(msg.qos) } : {}),
        sourceInfo: b.sourceInfo,
        extensions: carriedExtensions(msg.exts, b.unknownExts),
      },
    );
    q.replySample(sample);
  }

  // ---- declarations -------------------------------------------------------------------------

  private checkDeclarationLimit(): void {
    if (this.declarations >= this.limits.maxDeclarations)
      throw ZestError.tooLarge(`this session already holds ${this.limits.maxDeclarations} declarations (the limit)`);
  }

  private onDeclare(d: Declaration): void {
    try {
      this.declare(d);
    } catch (err) {
      // zenoh has no refusal for a declaration: log it, and the peer's declaration stays without effect.
      this.logger.info({ zid: this.peer.zid, decl: d.kind, err: errorMessage(err) }, "zenoh declaration refused");
    }
  }

  private declare(d: Declaration): void {
    switch (d.kind) {
      case "keyexpr": {
        if (!this.keyexprs.has(d.id) && this.keyexprs.size >= this.limits.maxKeyExprIds)
          throw ZestError.tooLarge(
            `this session already declared ${this.limits.maxKeyExprIds} key-expression ids (the limit)`,
          );
        // A declared prefix need not be a whole key expression on its own: kept as written, checked on use.
        const prefix = d.key.scope === 0 ? d.key.suffix : this.resolve(d.key);
        if (prefix.length > this.session.keyExprLimits.maxLength)
          throw ZestError.tooLarge("declared key expression too long");
        this.keyexprs.set(d.id, prefix);
        this.resolvedIds.clear();
        return;
      }
      case "unkeyexpr":
        this.keyexprs.delete(d.id);
        this.resolvedIds.clear();
        return;
      case "subscriber": {
        this.checkDeclarationLimit();
        const key = this.resolve(d.key);
        if (this.guard !== undefined && this.guard("declare_subscriber", key) === "deny")
          throw ZestError.forbidden(`access control: this session may not subscribe to ${key}`);
        this.subscribers.get(d.id)?.undeclare();
        this.subscribers.set(
          d.id,
          this.session.declareSubscriber(key, (s) => this.sendSample(s), { allowedOrigin: "remote" }),
        );
        return;
      }
      case "unsubscriber":
        this.subscribers.get(d.id)?.undeclare();
        this.subscribers.delete(d.id);
        return;
      case "queryable": {
        this.checkDeclarationLimit();
        const key = this.resolve(d.key);
        this.authorize("declare_queryable", key);
        this.queryables.get(d.id)?.undeclare();
        this.queryables.set(
          d.id,
          this.session.declareQueryable(key, (q) => this.forwardQuery(q), {
            complete: d.complete,
            allowedOrigin: "remote",
          }),
        );
        return;
      }
      case "unqueryable":
        this.queryables.get(d.id)?.undeclare();
        this.queryables.delete(d.id);
        return;
      case "token": {
        this.checkDeclarationLimit();
        const key = this.resolve(d.key);
        this.authorize("liveliness_token", key);
        if (this.tokens.has(d.id)) return;
        this.ownTokens.set(key, (this.ownTokens.get(key) ?? 0) + 1);
        this.tokens.set(d.id, this.session.declareLivelinessToken(key));
        return;
      }
      case "untoken": {
        const t = this.tokens.get(d.id);
        if (t === undefined) return;
        this.tokens.delete(d.id);
        const n = (this.ownTokens.get(t.key) ?? 1) - 1;
        if (n <= 0) this.ownTokens.delete(t.key);
        else this.ownTokens.set(t.key, n);
        t.undeclare();
        return;
      }
      case "final":
        return;
    }
  }

  // ---- interests ----------------------------------------------------------------------------

  private sendDeclare(decl: Declaration, interestId?: number): void {
    const w = this.link.startMessage(false);
    if (w === undefined) return;
    encodeDeclare(w, decl, interestId);
    this.link.endMessage();
  }

  private onInterest(m: InterestMsg): void {
    if (!m.current && !m.future) {
      this.interests.get(m.id)?.stop();
      this.interests.delete(m.id);
      return;
    }
    let key = "**";
    try {
      if (m.key) key = this.resolve(m.key);
      if (m.future) this.checkDeclarationLimit();
    } catch (err) {
      this.logger.info({ zid: this.peer.zid, err: errorMessage(err) }, "zenoh INTEREST refused");
      if (m.current) this.sendDeclare({ kind: "final" }, m.id);
      return;
    }
    const restricted = m.key !== undefined;
    const aggregate = restricted && (m.options & InterestOption.AGGREGATE) !== 0;
    const stops: Array<() => void> = [];
    const interestId = m.current ? m.id : undefined;
    if ((m.options & InterestOption.SUBSCRIBERS) !== 0)
      stops.push(...this.answerDeclarations("subscribers", key, aggregate, interestId, m.future));
    if ((m.options & InterestOption.QUERYABLES) !== 0)
      stops.push(...this.answerDeclarations("queryables", key, aggregate, interestId, m.future));
    if ((m.options & InterestOption.TOKENS) !== 0) stops.push(...this.answerTokens(key, interestId, m.future));
    if (m.current) this.sendDeclare({ kind: "final" }, m.id);
    if (m.future) {
      this.interests.get(m.id)?.stop();
      this.interests.set(m.id, {
        stop: () => {
          for (const stop of stops) stop();
        },
      });
    }
  }

  /**
   * Declares the subscribers (or queryables) matching `key` that are not this peer's own: one
   * declaration of `key` itself when aggregated (what a client's publisher or querier asks, to
   * know whether anyone listens), each key otherwise. With `future`, keeps declaring and
   * undeclaring as they come and go; returns the function that stops that.
   */
  private answerDeclarations(
    kind: "subscribers" | "queryables",
    key: string,
    aggregate: boolean,
    interestId: number | undefined,
    future: boolean,
  ): Array<() => void> {
    const now = () => matchingNow(this.session, kind, key, aggregate);
    const declared = new InterestDeclarations(() => ++this.nextDeclId);
    const sync = (interest: number | undefined): void => {
      for (const c of declared.update(now()))
        this.sendDeclare(declarationOf(kind, c), c.kind === "declare" ? interest : undefined);
    };
    if (interestId !== undefined) sync(interestId);
    // Future only: what exists now is not announced, but its later removal must not be either.
    else if (future) declared.assume(now());
    if (!future) return [];
    let scheduled = false;
    const queueSync = (): void => {
      if (scheduled) return;
      scheduled = true;
      queueMicrotask(() => {
        scheduled = false;
        if (!this.closed) sync(undefined);
      });
    };
    // Aggregated subscribers follow matching flips; everything else every declaration change
    // (a queryable's completeness too: the same id is declared again with its new info).
    if (aggregate && kind === "subscribers") {
      const listener: MatchingListener = this.session.declareMatchingListener(key, kind, () => sync(undefined), {
        allowedDestination: "remote",
      });
      return [() => listener.undeclare()];
    }
    return [this.connectivity.onChange(() => queueSync())];
  }

  /** Declares the live tokens matching `key` (not this peer's own); with `future`, follows them. */
  private answerTokens(key: string, interestId: number | undefined, future: boolean): Array<() => void> {
    const ids = new Map<string, number>();
    if (interestId !== undefined) {
      for (const s of this.session.livelinessGet(key)) {
        if (this.ownTokens.has(s.key) || !this.allowed("liveliness_query", s.key)) continue;
        const id = ++this.nextDeclId;
        ids.set(s.key, id);
        this.sendDeclare({ kind: "token", id, key: { scope: 0, suffix: s.key, senderMapping: false } }, interestId);
      }
    }
    if (!future) return [];
    const sub = this.session.declareLivelinessSubscriber(key, (s) => {
      if (this.ownTokens.has(s.key) || !this.allowed("declare_liveliness_subscriber", s.key)) return;
      if (s.kind === "put") {
        if (ids.has(s.key)) return;
        const id = ++this.nextDeclId;
        ids.set(s.key, id);
        this.sendDeclare({ kind: "token", id, key: { scope: 0, suffix: s.key, senderMapping: false } });
      } else {
        const id = ids.get(s.key);
        if (id === undefined) return;
        ids.delete(s.key);
        this.sendDeclare({ kind: "untoken", id, key: { scope: 0, suffix: s.key, senderMapping: false } });
      }
    });
    return [() => sub.undeclare()];
  }
}
