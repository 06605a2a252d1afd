/**
 * One zenoh client's or peer's session on the router (docs/zenoh-protocol.md): its network
 * messages mapped onto a core `Session`, the same zenoh semantics the remote API door uses.
 * PUSH → put/delete; REQUEST → get, answered with RESPONSE and RESPONSE_FINAL; DECLARE →
 * key-expression ids, subscribers (fed with PUSH), queryables (fed with REQUEST), liveliness
 * tokens; INTEREST → the declarations the router knows, now and as they change.
 */
import { Buffer } from "node:buffer";
import type { ClientPolicy } from "../access/client-policy.js";
import { Encoding, fromZenohEncoding } from "../core/encoding.js";
import { errorMessage, ZestError } from "../core/errors.js";
import type { CanonicalKey } from "../core/key.js";
import type { Logger } from "../core/log.js";
import type { Connectivity } from "../core/ports.js";
import type { Query } from "../core/query.js";
import type { Reply } from "../core/reply.js";
import { makeSample, type Sample, withSampleExtras } from "../core/sample.js";
import type { SessionBoundKeys } from "../core/session-bound.js";
import type { PutOptions, Session } from "../core/session.js";
import type { Timestamp } from "../core/timestamp.js";
import { refusalReply } from "../door/errors.js";
import { Face, type FaceSink } from "../door/face.js";
import type { FaceLimits } from "../door/limits.js";
import { DEFAULT_QOS_BYTE, qosByte, qosOfByte, type WireExpr } from "./codec/core.js";
import type { Declaration } from "./codec/declarations.js";
import {
  encodeDeclare,
  encodeRequest,
  encodeResponseErr,
  carriedExtensions,
  encodeResponseFinal,
  encodeSampleResponse,
  encodeSamplePush,
  type InterestMsg,
  type NetworkMsg,
  type PushMsg,
  type RequestMsg,
  type ResponseMsg,
} from "./codec/network.js";
import { mappedWireKey, namedWireKey, type WireKey } from "./codec/wire-key.js";
import type { PushBody } from "./codec/zenoh.js";
import { Interests } from "./interests.js";
import type { NetworkHandler, PeerInfo, ZenohLink } from "./transport/transport.js";

/** The limits of one zenoh session: its face's, and the key-expression ids only the wire protocol has. */
export interface SessionLimits extends FaceLimits {
  /** Key-expression ids the peer may declare. */
  maxKeyExprIds: number;
  /**
   * How long (ms) a session may hold congestion control BLOCK publishers back without its lanes
   * moving before it is closed, as zenohd's `block.wait_before_close` closes a transport whose
   * queue has no room for that long: one stalled subscriber cannot stop its publishers for good.
   */
  blockWaitBeforeCloseMs: number;
}

/** Zenoh's default encoding (`zenoh/bytes`), for samples that carry none. */
const DEFAULT_ENCODING = fromZenohEncoding(0, "");
const EMPTY = Buffer.alloc(0);
const NO_KEY: WireExpr = { scope: 0, suffix: "", senderMapping: false };

/**
 * Bytes waiting in a session's output lanes beyond which the zenoh sessions whose congestion
 * control BLOCK samples go there are no longer read, until it is back under half of it: what
 * zenoh's router does, its publisher's reader blocked on the subscriber's full queue
 * (docs/zenoh-protocol.md, "Output: priority lanes").
 */
export const BLOCK_QUEUE_BYTES = 256 * 1024;

/** The zenoh session whose PUSH is being routed now (its samples reach subscribers synchronously). */
let writing: ZenohSession | undefined;

/** Keys kept with the way they are named to the peer (`wireKeyOf`). */
const OUT_KEYS_MAX = 4096;

export class ZenohSession implements NetworkHandler, FaceSink {
  /** The client's face: declarations, gets, queries to its queryables, access and limits. */
  readonly face: Face;
  private readonly keyexprs = new Map<number, string>();
  /** Keys of the declared ids used alone, resolved; cleared when any id is declared or undeclared. */
  private readonly resolvedIds = new Map<number, CanonicalKey>();
  /**
   * How keys are named to the peer (`wireKeyOf`): by one of its declared ids, or null for in
   * full; cleared with `resolvedIds`. The key named last is held apart (no hash lookup then).
   */
  private readonly outKeys = new Map<string, WireKey | null>();
  private lastOutKey: string | undefined;
  private lastOutWireKey: WireKey | undefined;
  /** The answers to this peer's INTERESTs. */
  private readonly interests: Interests;
  private readonly session: Session;
  private readonly logger: Logger;
  /** This router's stamp for a ROUTE record in a timestamp stack (codec/timestamp-stack.ts). */
  private readonly stamp = (): Timestamp => this.session.clock.newTimestamp();
  private readonly maxKeyExprIds: number;
  /** Not read because too many of its gets are in flight (`pause`). */
  private pausedForGets = false;
  /** The sessions whose full output lanes this one's BLOCK samples wait for (not read meanwhile). */
  private readonly blockedBy = new Set<ZenohSession>();
  /** The sessions not read until this one's output lanes drain. */
  private readonly blocking = new Set<ZenohSession>();
  /** Closes this session when its lanes do not move while it holds BLOCK publishers back. */
  private stallTimer: NodeJS.Timeout | undefined;
  private readonly blockWaitBeforeCloseMs: number;

  constructor(
    private readonly link: ZenohLink,
    readonly peer: PeerInfo,
    session: Session,
    readonly connectivity: Connectivity,
    logger: Logger,
    limits: SessionLimits,
    policy: ClientPolicy,
    /** `session_bound.key_exprs`: puts on them are bound to this session. */
    sessionBound?: SessionBoundKeys,
  ) {
    this.session = session;
    this.logger = logger.child({ zid: peer.zid });
    this.maxKeyExprIds = limits.maxKeyExprIds;
    this.blockWaitBeforeCloseMs = limits.blockWaitBeforeCloseMs;
    this.face = new Face({
      session,
      policy,
      limits,
      logger: this.logger,
      sessionBound,
      sink: this,
      oncePerFace: true,
      redeclare: "replace",
      doorDeclarations: () => this.interests.size,
    });
    link.onPumped = () => this.drained();
    this.interests = new Interests(this.face, session, connectivity, (decl, interestId) => {
      const w = this.link.startMessage(false);
      if (w === undefined) return;
      encodeDeclare(w, decl, interestId);
      this.link.endMessage();
    });
  }

  /** Subscribers, queryables, tokens and interests held. */
  get declarations(): number {
    return this.face.declarations;
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
        // The getter's final goes out in this call when it was the last answer awaited (Face.finishQuery).
        this.face.finishQuery(msg.id);
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
    this.releaseBlocked();
    if (this.face.closed) return;
    this.interests.close();
    this.face.close();
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

  /**
   * The key as the router names it to the peer, as zenoh's router does (`get_best_key`): by the
   * peer's own id for the longest prefix of it the peer declared that ends where a chunk ends,
   * the rest as the suffix, or else in full. A zenoh session reads a PUSH on its own id
   * with a lookup, and one named in full by parsing the key and matching it against each of its
   * subscribers (docs/zenoh-protocol.md, "Key expressions on the way out").
   */
  private wireKeyOf(key: string): WireKey {
    if (key === this.lastOutKey && this.lastOutWireKey !== undefined) return this.lastOutWireKey;
    let k: WireKey | null | undefined = null;
    if (this.keyexprs.size > 0) {
      k = this.outKeys.get(key);
      if (k === undefined) {
        k = this.bestDeclared(key);
        if (this.outKeys.size >= OUT_KEYS_MAX) this.outKeys.clear();
        this.outKeys.set(key, k);
      }
    }
    const out = k ?? namedWireKey(key);
    this.lastOutKey = key;
    this.lastOutWireKey = out;
    return out;
  }

  private bestDeclared(key: string): WireKey | null {
    let best = -1;
    let bestLength = 0;
    for (const [id, prefix] of this.keyexprs) {
      const n = prefix.length;
      // The later of two equal prefixes wins, as zenoh keeps the last id declared for a resource.
      if (n > 0 && n >= bestLength && key.startsWith(prefix) && (key.length === n || key.charCodeAt(n) === 0x2f)) {
        best = id;
        bestLength = n;
      }
    }
    return best < 0 ? null : mappedWireKey(best, key.slice(bestLength));
  }

  /** Forgets what the declared ids resolved to, both ways (an id was declared or undeclared). */
  private forgetResolved(): void {
    this.resolvedIds.clear();
    this.outKeys.clear();
    this.lastOutKey = undefined;
    this.lastOutWireKey = undefined;
  }

  private resolveNow(ke: WireExpr): CanonicalKey {
    let key = ke.suffix;
    if (ke.scope !== 0) {
      if (!ke.senderMapping) throw ZestError.badRequest(`key-expression id ${ke.scope} is not one the router declared`);
      const prefix = this.keyexprs.get(ke.scope);
      if (prefix === undefined) throw ZestError.badRequest(`unknown key-expression id ${ke.scope}`);
      key = prefix + ke.suffix;
    }
    return this.face.key(key);
  }

  // ---- writes -------------------------------------------------------------------------------

  private onPush(msg: PushMsg): void {
    let key: CanonicalKey;
    try {
      key = this.resolve(msg.key);
    } catch (err) {
      this.logger.info({ err: errorMessage(err) }, "zenoh PUSH with a bad key expression dropped");
      return;
    }
    try {
      this.write(key, msg.body, msg.qos, msg.exts);
    } catch (err) {
      // zenoh has no answer to a PUSH: a refusal is logged.
      this.logger.info({ key, kind: msg.body.kind, err: errorMessage(err) }, "zenoh write refused");
    }
  }

  /** A put or delete through the face; throws its refusal. */
  private write(key: CanonicalKey, b: PushBody, qos: number, exts: Buffer[] | undefined): void {
    // One object literal, every field in place (one shape). Without a timestamp, it is stamped
    // with the router's clock, as zenohd with timestamping on; one clock reading per batch (this
    // turn), not per write: the stamps stay unique and increasing. Payload and attachment are the
    // decoder's copies (codec/zenoh.ts), not views into the batch.
    const put = b.kind === "put";
    const options: PutOptions = {
      qos: qosOfByte(qos),
      allowedDestination: "remote",
      timestamp: b.timestamp ?? this.session.clock.newTimestampInTurn(),
      encoding: put ? (b.hasEncoding ? b.encoding : DEFAULT_ENCODING) : undefined,
      attachment: b.attachment,
      sourceInfo: b.sourceInfo,
      extensions: carriedExtensions(exts, b.unknownExts, this.stamp),
    };
    const outer = writing;
    writing = this;
    try {
      if (put) this.face.put(key, b.payload, options);
      else this.face.delete(key, options);
    } finally {
      writing = outer;
    }
  }

  /** FaceSink: a sample for this peer's subscribers as one PUSH (dropped first when the peer reads slowly and it may be). */
  sample(_subscriberId: number, sample: Sample): void {
    // On its QoS priority lane, so a high-priority sample is not queued behind bulk data.
    const block = sample.qos?.congestionControl === "block";
    const w = this.link.startMessage(!block, sample.qos?.priority, sample.qos?.express === true);
    if (w === undefined) return;
    encodeSamplePush(w, sample, qosByte(sample.qos), this.wireKeyOf(sample.key));
    this.link.endMessage();
    if (block && writing !== undefined && writing !== this && this.link.queuedBytes > BLOCK_QUEUE_BYTES)
      this.block(writing);
  }

  // ---- congestion control BLOCK -------------------------------------------------------------

  /** `from`'s BLOCK samples wait for this session's lanes: it is not read until they drain. */
  private block(from: ZenohSession): void {
    if (this.blocking.has(from)) return;
    if (this.blocking.size === 0) this.armStallTimer();
    this.blocking.add(from);
    from.blockedBy.add(this);
    from.updateReading();
  }

  /** The lanes were handed to the wire: below half the mark, the sessions waiting for this one are read again. */
  private drained(): void {
    if (this.blocking.size === 0) return;
    if (this.link.queuedBytes <= BLOCK_QUEUE_BYTES / 2) this.releaseBlocked();
    // The peer reads, if slowly: it gets the whole wait again, as zenohd waits per batch.
    else this.armStallTimer();
  }

  private armStallTimer(): void {
    clearTimeout(this.stallTimer);
    this.stallTimer = setTimeout(() => this.stalled(), this.blockWaitBeforeCloseMs);
    this.stallTimer.unref();
  }

  /** The peer read nothing while BLOCK publishers waited for it: closed, so they are read again (onClose). */
  private stalled(): void {
    this.stallTimer = undefined;
    if (this.blocking.size === 0) return;
    this.logger.warn(
      { queued: this.link.queuedBytes, waitedMs: this.blockWaitBeforeCloseMs, publishers: this.blocking.size },
      "zenoh session closed: it read nothing while congestion control BLOCK publishers waited for it",
    );
    this.link.close();
  }

  private releaseBlocked(): void {
    clearTimeout(this.stallTimer);
    this.stallTimer = undefined;
    for (const s of this.blocking) {
      s.blockedBy.delete(this);
      s.updateReading();
    }
    this.blocking.clear();
  }

  /** Reads the peer unless too many of its gets are in flight or its BLOCK samples wait for another session. */
  private updateReading(): void {
    if (this.pausedForGets || this.blockedBy.size > 0) this.link.pauseReading();
    else this.link.resumeReading();
  }

  // ---- gets from this peer ------------------------------------------------------------------

  private onRequest(msg: RequestMsg): void {
    if (msg.body.kind === "push") {
      // A put or delete sent as a request (zenoh's "reliable write"): apply it, then end the request.
      try {
        this.write(this.resolve(msg.key), msg.body.push, msg.qos, msg.exts);
      } catch (err) {
        this.reply(msg.id, refusalReply(err));
      }
      this.final(msg.id);
      return;
    }
    const q = msg.body.query;
    let key: CanonicalKey;
    try {
      key = this.resolve(msg.key);
    } catch (err) {
      this.reply(msg.id, refusalReply(err));
      this.final(msg.id);
      return;
    }
    this.face.get(msg.id, key, {
      parameters: q.parameters,
      timeoutMs: msg.timeoutMs,
      ...(msg.budget === 0 ? {} : { budget: msg.budget }),
      // zenoh's router forwards every reply; the client's session consolidates them.
      consolidation: "none",
      target: msg.target,
      allowedDestination: "remote",
      ...(q.body ? { payload: Buffer.from(q.body.payload), encoding: q.body.encoding } : {}),
      ...(q.attachment ? { attachment: Buffer.from(q.attachment) } : {}),
      sourceInfo: q.sourceInfo,
      extensions: carriedExtensions(msg.exts, q.unknownExts, this.stamp),
    });
  }

  /** FaceSink: a reply to this peer's get `id` as a RESPONSE. */
  reply(id: number, reply: Reply): void {
    const w = this.link.startMessage(false);
    if (w === undefined) return;
    if (reply.kind === "err")
      encodeResponseErr(w, id, NO_KEY, {
        encoding: reply.encoding,
        payload: reply.payload,
        ...(reply.sourceInfo !== undefined ? { sourceInfo: reply.sourceInfo } : {}),
      });
    else encodeSampleResponse(w, id, reply.sample);
    this.link.endMessage();
  }

  /** FaceSink: too many gets of this peer's in flight: it is not read until one ends. */
  pause(): void {
    this.pausedForGets = true;
    this.updateReading();
  }

  resume(): void {
    this.pausedForGets = false;
    this.updateReading();
  }

  /** FaceSink: the end of this peer's get `id` (RESPONSE_FINAL). */
  final(id: number): void {
    const w = this.link.startMessage(false);
    if (w === undefined) return;
    encodeResponseFinal(w, id);
    this.link.endMessage();
  }

  // ---- queries to this peer's queryables ----------------------------------------------------

  /** FaceSink: a router query for this peer's queryables as a REQUEST (the id is the face's). */
  query(_queryableId: number, id: number, query: Query): boolean {
    const w = this.link.startMessage(false);
    if (w === undefined) return false;
    encodeRequest(w, {
      id,
      key: { scope: 0, suffix: query.key, senderMapping: false },
      // zenohd hands the querier's target on: the client picks among its own queryables by it.
      target: query.target,
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
    return true;
  }

  private onResponse(msg: ResponseMsg): void {
    if (msg.body.kind === "err") {
      const e = msg.body.err;
      this.face.replyErr(
        msg.id,
        Buffer.from(e.payload),
        e.encoding === "" ? DEFAULT_ENCODING : e.encoding,
        e.sourceInfo,
      );
      return;
    }
    const target = this.face.replyTarget(msg.id, () => this.resolve(msg.key));
    if (target === undefined) return;
    const b = msg.body.push;
    const sample = withSampleExtras(
      makeSample(
        target.key,
        b.kind,
        b.kind === "put" ? b.payload : EMPTY,
        b.kind === "put" ? (b.hasEncoding ? b.encoding : DEFAULT_ENCODING) : Encoding.EMPTY,
        b.timestamp,
      ),
      {
        ...(b.attachment ? { attachment: b.attachment } : {}),
        ...(msg.qos !== DEFAULT_QOS_BYTE ? { qos: qosOfByte(msg.qos) } : {}),
        sourceInfo: b.sourceInfo,
        extensions: carriedExtensions(msg.exts, b.unknownExts, this.stamp),
      },
    );
    target.query.replySample(sample);
  }

  // ---- declarations -------------------------------------------------------------------------

  private onDeclare(d: Declaration): void {
    try {
      this.declare(d);
    } catch (err) {
      // zenoh has no refusal for a declaration: log it, and the peer's declaration stays without effect.
      this.logger.info({ decl: d.kind, err: errorMessage(err) }, "zenoh declaration refused");
    }
  }

  private declare(d: Declaration): void {
    switch (d.kind) {
      case "keyexpr": {
        if (!this.keyexprs.has(d.id) && this.keyexprs.size >= this.maxKeyExprIds)
          throw ZestError.tooLarge(
            `this session already declared ${this.maxKeyExprIds} key-expression ids (the limit)`,
          );
        // A declared prefix need not be a whole key expression on its own: kept as written, checked on use.
        const prefix = d.key.scope === 0 ? d.key.suffix : this.resolve(d.key);
        if (prefix.length > this.session.keyExprLimits.maxLength)
          throw ZestError.tooLarge("declared key expression too long");
        this.keyexprs.set(d.id, prefix);
        this.forgetResolved();
        return;
      }
      case "unkeyexpr":
        this.keyexprs.delete(d.id);
        this.forgetResolved();
        return;
      case "subscriber":
        this.face.declareSubscriber(d.id, this.resolve(d.key), { allowedOrigin: "remote" });
        return;
      case "unsubscriber":
        this.face.undeclareSubscriber(d.id);
        return;
      case "queryable":
        this.face.declareQueryable(d.id, this.resolve(d.key), { complete: d.complete, allowedOrigin: "remote" });
        return;
      case "unqueryable":
        this.face.undeclareQueryable(d.id);
        return;
      case "token":
        this.face.declareToken(d.id, this.resolve(d.key));
        return;
      case "untoken":
        this.face.undeclareToken(d.id);
        return;
      case "final":
        return;
    }
  }

  // ---- interests ----------------------------------------------------------------------------

  private onInterest(m: InterestMsg): void {
    if (!m.current && !m.future) {
      this.interests.stop(m.id);
      return;
    }
    let key = "**";
    try {
      if (m.key) key = this.resolve(m.key);
      if (m.future) this.face.checkDeclarationLimit();
    } catch (err) {
      this.logger.info({ err: errorMessage(err) }, "zenoh INTEREST refused");
      if (m.current) this.interests.refuse(m.id);
      return;
    }
    this.interests.open(m, key);
  }
}
