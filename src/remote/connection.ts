/**
 * One remote-API connection: one WebSocket, one zest `Session`. Decodes each binary frame as one
 * message, acts on it through the session, and sends samples, queries, replies and finals back.
 * Everything the connection declared is released when it closes. See docs/remote-api.md.
 */
import { Buffer } from "node:buffer";
import { randomUUID } from "node:crypto";
import type { WebSocket } from "ws";
import type { ClientPolicy } from "../access/client-policy.js";
import { errorMessage, ZestError } from "../core/errors.js";
import type { CanonicalKey } from "../core/key.js";
import type { Logger } from "../core/log.js";
import { TurnMemo } from "../core/turn-memo.js";
import type { MatchingListener } from "../core/matching.js";
import type { Connectivity } from "../core/ports.js";
import type { Query } from "../core/query.js";
import type { Reply } from "../core/reply.js";
import type { Sample } from "../core/sample.js";
import type { SessionBoundKeys } from "../core/session-bound.js";
import { Parameters } from "../core/selector.js";
import type { Session } from "../core/session.js";
import { refusalReply, responseErrorText } from "../door/errors.js";
import { Face, type FaceSink } from "../door/face.js";
import type { FaceLimits } from "../door/limits.js";
import {
  decodeQos,
  decodeQuerySettings,
  encodeQos,
  In,
  IN_NAMES,
  Out,
  type QuerySettings,
  readEncoding,
  readLocality,
  readTimestamp,
  SEQ_FLAG,
  type WireQos,
  writeEncoding,
  writeSample,
  writeTimestamp,
  writeZenohId,
} from "./protocol.js";
import { CloseCode, ProtocolError, Reader, Writer } from "./wire.js";

/** Name of a client message (`Put`, `DeclareSubscriber`...). */
export type RemoteMessageName = keyof typeof In;

/** Per-connection limits (see docs/remote-api.md for the defaults): the face's, and the send buffer. */
export interface RemoteLimits extends FaceLimits {
  /** Bytes queued for a client that does not read before it is dropped. */
  readonly maxBufferedBytes: number;
}

/** The part of the connection's TCP (or TLS) socket it uses: batching frames into one write. */
export interface Corkable {
  cork(): void;
  uncork(): void;
  /** Stops reading the client until `resume` (back-pressure on a burst of gets). */
  pause?(): unknown;
  resume?(): unknown;
}

export interface ConnectionOptions {
  readonly session: Session;
  /** The routers this one reaches, for the connectivity events (a port, not `session.router`). */
  readonly connectivity: Connectivity;
  /** The socket under the WebSocket, corked while one incoming frame is handled. */
  readonly socket?: Corkable;
  readonly logger: Logger;
  readonly limits: RemoteLimits;
  /** What this client may do (the edge policy's decision from its upgrade request). */
  readonly policy: ClientPolicy;
  /** `session_bound.key_exprs`: puts on them are bound to this connection's session. */
  readonly sessionBound?: SessionBoundKeys | undefined;
  /** Called once when the connection is gone and everything it held is released. */
  readonly onClosed: () => void;
}

interface Publisher {
  readonly key: CanonicalKey;
  readonly encoding: string;
  readonly qos: WireQos;
}

interface Querier {
  readonly key: CanonicalKey;
  readonly qos: WireQos;
  readonly settings: QuerySettings;
  readonly timeoutMs: number;
}

interface ConnectivityListener {
  readonly kind: "transport" | "link";
  readonly known: Set<string>;
  readonly stop: () => void;
}

interface GetRequest {
  readonly getId: number;
  readonly key: string;
  readonly parameters: string;
  readonly payload?: Buffer;
  readonly encoding?: string;
  readonly attachment?: Buffer;
  readonly qos: WireQos;
  readonly settings: QuerySettings;
  readonly timeoutMs: number;
}

const EMPTY = Buffer.alloc(0);
const SEND_OPTIONS = { binary: true, compress: false } as const;
/** The bytes after the header of an InSample, shared by every subscriber a sample reaches in its delivery. */
const sampleBodies = new TurnMemo<Sample, Buffer>();

export class RemoteConnection implements FaceSink {
  /** Shown in logs; the string answered to Ping. */
  readonly id = randomUUID();
  private readonly session: Session;
  /** The client's face: declarations, gets, queries to its queryables, access and limits. */
  private readonly face: Face;
  private readonly logger: Logger;
  private readonly limits: RemoteLimits;
  private readonly connectivity: Connectivity;
  private readonly socket: Corkable | undefined;
  private readonly publishers = new Map<number, Publisher>();
  private readonly queriers = new Map<number, Querier>();
  private readonly matchingListeners = new Map<number, MatchingListener>();
  private readonly connectivityListeners = new Map<number, ConnectivityListener>();
  /** The QoS of each get in flight: its reply samples take the get's priority and congestion control. */
  private readonly getQos = new Map<number, WireQos>();
  private closed = false;
  private corked = false;
  /** Messages to send once the response to the current request is out (initial statuses). */
  private after: Array<() => void> = [];

  constructor(
    private readonly ws: WebSocket,
    options: ConnectionOptions,
  ) {
    this.session = options.session;
    this.logger = options.logger;
    this.limits = options.limits;
    this.connectivity = options.connectivity;
    this.socket = options.socket;
    this.face = new Face({
      session: options.session,
      policy: options.policy,
      limits: options.limits,
      logger: options.logger.child({ conn: this.id }),
      sessionBound: options.sessionBound,
      sink: this,
      redeclare: "refuse",
      doorDeclarations: () =>
        this.publishers.size + this.queriers.size + this.matchingListeners.size + this.connectivityListeners.size,
    });
    ws.on("message", (data, isBinary) => this.onFrame(data as Buffer, isBinary));
    ws.on("close", () => {
      this.release();
      options.onClosed();
    });
    ws.on("error", (err) =>
      this.logger.debug({ conn: this.id, err: errorMessage(err) }, "remote API connection error"),
    );
  }

  /** Number of declarations this connection holds. */
  get declarations(): number {
    return this.face.declarations;
  }

  /** Closes the connection with `code` (the cleanup runs when the socket is closed). */
  close(code: number, reason: string): void {
    if (this.closed) return;
    this.ws.close(code, reason.slice(0, 120));
    this.release();
  }

  private onFrame(data: Buffer, isBinary: boolean): void {
    if (this.closed) return;
    if (!isBinary) {
      this.fail(new ProtocolError(CloseCode.UNSUPPORTED_DATA, "text frames are not part of the remote API"));
      return;
    }
    try {
      this.handle(data);
    } catch (err) {
      if (err instanceof ProtocolError) this.fail(err);
      else {
        this.logger.error({ conn: this.id, err: errorMessage(err) }, "remote API: unexpected failure");
        this.fail(new ProtocolError(CloseCode.INTERNAL_ERROR, "internal error"));
      }
    }
  }

  private fail(err: ProtocolError): void {
    this.logger.warn({ conn: this.id, code: err.code, reason: err.message }, "remote API connection closed: bad frame");
    this.close(err.code, err.message);
  }

  private handle(buf: Buffer): void {
    const r = new Reader(buf);
    const header = r.u8();
    const id = header & ~SEQ_FLAG;
    const seq = header & SEQ_FLAG ? r.u32() : undefined;
    const name = IN_NAMES[id] as RemoteMessageName | undefined;
    if (name === undefined) throw new ProtocolError(CloseCode.PROTOCOL_ERROR, `unknown message id ${id}`);
    let response: Buffer | undefined;
    try {
      response = this.dispatch(id, r, seq);
    } catch (err) {
      if (err instanceof ProtocolError) throw err;
      if (seq === undefined) {
        this.logger.info({ conn: this.id, message: name, err: errorMessage(err) }, "remote API message refused");
      } else {
        this.send(this.frame(Out.ResponseError, seq).string(responseErrorText(err)).finish());
      }
      this.after = [];
      return;
    }
    if (seq !== undefined) this.send(response ?? this.frame(Out.ResponseOk, seq).u8(id).finish());
    if (this.after.length > 0) {
      const after = this.after;
      this.after = [];
      for (const f of after) f();
    }
  }

  /** Acts on one message; returns the response to send, when it is not a plain ResponseOk. */
  private dispatch(id: number, r: Reader, seq: number | undefined): Buffer | undefined {
    switch (id) {
      case In.Ping:
        r.end();
        return this.frame(Out.ResponsePing, seq).string(this.id).finish();
      case In.GetSessionInfo: {
        r.end();
        const w = this.frame(Out.ResponseSessionInfo, seq);
        writeZenohId(w, this.session.zid);
        const routers = this.peers();
        w.varint(routers.length);
        for (const zid of routers) writeZenohId(w, zid);
        w.varint(0);
        return w.finish();
      }
      case In.GetTimestamp: {
        r.end();
        const w = this.frame(Out.ResponseTimestamp, seq);
        writeTimestamp(w, this.session.clock.newTimestamp());
        return w.finish();
      }
      case In.DeclarePublisher: {
        const pid = r.u32();
        const key = r.string();
        const encoding = readEncoding(r);
        const qos = decodeQos(r.u8());
        r.end();
        this.declaringOwn(this.publishers, pid);
        const k = this.face.key(key);
        // A publisher puts or deletes: declaring one needs either on its whole key.
        if (!this.face.allows("put", k) && !this.face.allows("delete", k)) this.face.authorize("put", k);
        this.publishers.set(pid, { key: k, encoding, qos });
        return undefined;
      }
      case In.UndeclarePublisher:
        this.undeclare(this.publishers, r, "publisher");
        return undefined;
      case In.DeclareSubscriber: {
        const sid = r.u32();
        const key = r.string();
        const origin = readLocality(r.u8());
        r.end();
        this.face.declareSubscriber(sid, this.face.key(key), { allowedOrigin: origin });
        return undefined;
      }
      case In.UndeclareSubscriber:
        this.undeclareFace(r, "subscriber", (id) => this.face.undeclareSubscriber(id));
        return undefined;
      case In.DeclareQueryable: {
        const qid = r.u32();
        const key = r.string();
        const complete = r.bool();
        const origin = readLocality(r.u8());
        r.end();
        this.face.declareQueryable(qid, this.face.key(key), { complete, allowedOrigin: origin });
        return undefined;
      }
      case In.UndeclareQueryable:
        this.undeclareFace(r, "queryable", (id) => this.face.undeclareQueryable(id));
        return undefined;
      case In.DeclareQuerier: {
        const qid = r.u32();
        const key = r.string();
        const qos = decodeQos(r.u8());
        const settings = decodeQuerySettings(r.u8());
        const timeoutMs = r.u32();
        r.end();
        this.declaringOwn(this.queriers, qid);
        const k = this.face.key(key);
        // Allowed in part: each get's replies are filtered then.
        this.face.verdict("query", k);
        this.queriers.set(qid, { key: k, qos, settings, timeoutMs });
        return undefined;
      }
      case In.UndeclareQuerier:
        this.undeclare(this.queriers, r, "querier");
        return undefined;
      case In.DeclareLivelinessToken: {
        const tid = r.u32();
        const key = r.string();
        r.end();
        this.face.declareToken(tid, this.face.key(key));
        return undefined;
      }
      case In.UndeclareLivelinessToken:
        this.undeclareFace(r, "liveliness token", (id) => this.face.undeclareToken(id));
        return undefined;
      case In.DeclareLivelinessSubscriber: {
        const sid = r.u32();
        const key = r.string();
        const history = r.bool();
        r.end();
        // History goes out after the ResponseOk, like the live samples that follow it.
        const early: Sample[] = [];
        let live = false;
        this.face.declareLivelinessSubscriber(sid, this.face.key(key), history, (s) => {
          if (live) this.sendSample(sid, s);
          else early.push(s);
        });
        this.after.push(() => {
          live = true;
          for (const s of early) this.sendSample(sid, s);
        });
        return undefined;
      }
      case In.UndeclareLivelinessSubscriber:
        this.undeclareFace(r, "liveliness subscriber", (id) => this.face.undeclareLivelinessSubscriber(id));
        return undefined;
      case In.Put: {
        const key = r.string();
        const payload = Buffer.from(r.bytes());
        const encoding = readEncoding(r);
        const attachment = this.optBytes(r);
        const timestamp = r.optional(() => readTimestamp(r));
        const qos = decodeQos(r.u8());
        r.end();
        this.face.put(this.face.key(key), payload, {
          encoding,
          attachment,
          timestamp,
          qos,
          allowedDestination: qos.locality,
        });
        return undefined;
      }
      case In.Delete: {
        const key = r.string();
        const attachment = this.optBytes(r);
        const timestamp = r.optional(() => readTimestamp(r));
        const qos = decodeQos(r.u8());
        r.end();
        this.face.delete(this.face.key(key), { attachment, timestamp, qos, allowedDestination: qos.locality });
        return undefined;
      }
      case In.PublisherPut: {
        const pid = r.u32();
        const payload = Buffer.from(r.bytes());
        const encoding = r.optional(() => readEncoding(r));
        const attachment = this.optBytes(r);
        const timestamp = r.optional(() => readTimestamp(r));
        r.end();
        const p = this.known(this.publishers, pid, "publisher");
        this.face.put(p.key, payload, {
          encoding: encoding ?? p.encoding,
          attachment,
          timestamp,
          qos: p.qos,
          allowedDestination: p.qos.locality,
        });
        return undefined;
      }
      case In.PublisherDelete: {
        const pid = r.u32();
        const attachment = this.optBytes(r);
        const timestamp = r.optional(() => readTimestamp(r));
        r.end();
        const p = this.known(this.publishers, pid, "publisher");
        this.face.delete(p.key, { attachment, timestamp, qos: p.qos, allowedDestination: p.qos.locality });
        return undefined;
      }
      case In.Get: {
        const getId = r.u32();
        const key = r.string();
        const parameters = r.string();
        const payload = this.optBytes(r);
        const encoding = r.optional(() => readEncoding(r));
        const attachment = this.optBytes(r);
        const qos = decodeQos(r.u8());
        const settings = decodeQuerySettings(r.u8());
        const timeoutMs = r.u32();
        r.end();
        this.get({ getId, key, parameters, payload, encoding, attachment, qos, settings, timeoutMs });
        return undefined;
      }
      case In.QuerierGet: {
        const getId = r.u32();
        const querierId = r.u32();
        const parameters = r.string();
        const payload = this.optBytes(r);
        const encoding = r.optional(() => readEncoding(r));
        const attachment = this.optBytes(r);
        r.end();
        const q = this.queriers.get(querierId);
        if (q === undefined) {
          // Fire-and-forget: the getter waits for a final, so it gets an error reply and one.
          this.replyAndFinal(getId, refusalReply(ZestError.notFound(`unknown querier id ${querierId}`)));
          return undefined;
        }
        this.get({
          getId,
          key: q.key,
          parameters,
          payload,
          encoding,
          attachment,
          qos: q.qos,
          settings: q.settings,
          timeoutMs: q.timeoutMs,
        });
        return undefined;
      }
      case In.LivelinessGet: {
        const getId = r.u32();
        const key = r.string();
        r.u32(); // timeout: the answer is local and immediate
        r.end();
        let samples: Sample[];
        try {
          samples = this.face.livelinessGet(this.face.key(key));
        } catch (err) {
          this.replyAndFinal(getId, refusalReply(err));
          return undefined;
        }
        for (const s of samples) this.sendReply(getId, { kind: "ok", sample: s }, undefined);
        this.send(this.frame(Out.QueryResponseFinal).u32(getId).finish());
        return undefined;
      }
      case In.ReplyOk: {
        const queryId = r.u32();
        const key = r.string();
        const payload = Buffer.from(r.bytes());
        const encoding = readEncoding(r);
        const attachment = this.optBytes(r);
        const timestamp = r.optional(() => readTimestamp(r));
        const qos = decodeQos(r.u8());
        r.end();
        const t = this.face.replyTarget(queryId, () => key);
        t?.query.reply(t.key, payload, { encoding, attachment, timestamp, qos });
        return undefined;
      }
      case In.ReplyDel: {
        const queryId = r.u32();
        const key = r.string();
        const attachment = this.optBytes(r);
        const timestamp = r.optional(() => readTimestamp(r));
        const qos = decodeQos(r.u8());
        r.end();
        const t = this.face.replyTarget(queryId, () => key);
        t?.query.replyDelete(t.key, { attachment, timestamp, qos });
        return undefined;
      }
      case In.ReplyErr: {
        const queryId = r.u32();
        const payload = Buffer.from(r.bytes());
        const encoding = readEncoding(r);
        r.end();
        this.face.replyErr(queryId, payload, encoding);
        return undefined;
      }
      case In.QueryResponseFinal: {
        const queryId = r.u32();
        r.end();
        this.face.finishQuery(queryId);
        return undefined;
      }
      case In.PublisherDeclareMatchingListener:
      case In.QuerierDeclareMatchingListener: {
        const lid = r.u32();
        const ownerId = r.u32();
        r.end();
        const publisher = id === In.PublisherDeclareMatchingListener;
        const owner = publisher
          ? this.known(this.publishers, ownerId, "publisher")
          : this.known(this.queriers, ownerId, "querier");
        this.declaringOwn(this.matchingListeners, lid);
        const listener = this.session.declareMatchingListener(
          owner.key,
          publisher ? "subscribers" : "queryables",
          (m) => this.sendMatching(lid, m),
          {
            allowedDestination: owner.qos.locality,
            target: "settings" in owner ? owner.settings.target : undefined,
          },
        );
        this.matchingListeners.set(lid, listener);
        this.after.push(() => {
          if (listener.matching && this.matchingListeners.get(lid) === listener) this.sendMatching(lid, true);
        });
        return undefined;
      }
      case In.UndeclareMatchingListener:
        this.undeclare(this.matchingListeners, r, "matching listener")?.undeclare();
        return undefined;
      case In.PublisherGetMatchingStatus:
      case In.QuerierGetMatchingStatus: {
        const ownerId = r.u32();
        r.end();
        const publisher = id === In.PublisherGetMatchingStatus;
        const owner = publisher
          ? this.known(this.publishers, ownerId, "publisher")
          : this.known(this.queriers, ownerId, "querier");
        const matching = this.session.matchingStatus(owner.key, publisher ? "subscribers" : "queryables", {
          allowedDestination: owner.qos.locality,
          target: "settings" in owner ? owner.settings.target : undefined,
        });
        return this.frame(Out.ResponseMatchingStatus, seq).bool(matching).finish();
      }
      case In.GetTransports: {
        r.end();
        const w = this.frame(Out.ResponseTransports, seq);
        const peers = this.peers();
        w.varint(peers.length);
        for (const zid of peers) this.writeTransport(w, zid);
        return w.finish();
      }
      case In.GetLinks: {
        r.end();
        const w = this.frame(Out.ResponseLinks, seq);
        const peers = this.peers();
        w.varint(peers.length);
        for (const zid of peers) this.writeLink(w, zid);
        return w.finish();
      }
      case In.DeclareTransportEventsListener:
      case In.DeclareLinkEventsListener: {
        const lid = r.u32();
        const history = r.bool();
        r.end();
        this.declaringOwn(this.connectivityListeners, lid);
        this.watchConnectivity(lid, id === In.DeclareTransportEventsListener ? "transport" : "link", history);
        return undefined;
      }
      case In.UndeclareTransportEventsListener:
      case In.UndeclareLinkEventsListener:
        this.undeclare(this.connectivityListeners, r, "connectivity listener")?.stop();
        return undefined;
      default:
        throw new ProtocolError(CloseCode.PROTOCOL_ERROR, `unknown message id ${id}`);
    }
  }

  // ---- declarations -------------------------------------------------------------------------

  /** Checks a declaration the door holds itself (publisher, querier, listener): a fresh id, within the limit. */
  private declaringOwn(map: Map<number, unknown>, id: number): void {
    if (map.has(id)) throw ZestError.conflict(`id ${id} is already declared`);
    this.face.checkDeclarationLimit();
  }

  private undeclare<T>(map: Map<number, T>, r: Reader, what: string): T | undefined {
    const id = r.u32();
    r.end();
    const v = this.known(map, id, what);
    map.delete(id);
    return v;
  }

  /** Undeclares a declaration the face holds; `not_found` when the client has none by that id. */
  private undeclareFace(r: Reader, what: string, undeclare: (id: number) => boolean): void {
    const id = r.u32();
    r.end();
    if (!undeclare(id)) throw ZestError.notFound(`unknown ${what} id ${id}`);
  }

  private known<T>(map: Map<number, T>, id: number, what: string): T {
    const v = map.get(id);
    if (v === undefined) throw ZestError.notFound(`unknown ${what} id ${id}`);
    return v;
  }

  private optBytes(r: Reader): Buffer | undefined {
    return r.optional(() => Buffer.from(r.bytes()));
  }

  // ---- gets ---------------------------------------------------------------------------------

  /** A get (or a querier's): the face runs it; replies and the final come back through the sink. */
  private get(g: GetRequest): void {
    let key: CanonicalKey;
    try {
      key = this.face.key(g.key);
    } catch (err) {
      this.replyAndFinal(g.getId, refusalReply(err));
      return;
    }
    let parameters = g.parameters;
    if (!g.settings.matchingReplies && !new Parameters(parameters).has("_anyke"))
      parameters = parameters === "" ? "_anyke" : `${parameters};_anyke`;
    this.getQos.set(g.getId, g.qos);
    this.face.get(g.getId, key, {
      parameters,
      timeoutMs: g.timeoutMs,
      consolidation: g.settings.consolidation,
      target: g.settings.target,
      allowedDestination: g.qos.locality,
      ...(g.payload !== undefined || g.encoding !== undefined
        ? { payload: g.payload ?? EMPTY, encoding: g.encoding ?? "" }
        : {}),
      ...(g.attachment ? { attachment: g.attachment } : {}),
    });
  }

  private replyAndFinal(getId: number, reply: Reply): void {
    this.sendReply(getId, reply, undefined);
    this.send(this.frame(Out.QueryResponseFinal).u32(getId).finish());
  }

  /** FaceSink: a reply to the client's get. */
  reply(getId: number, reply: Reply): void {
    this.sendReply(getId, reply, this.getQos.get(getId));
  }

  /** FaceSink: too many gets in flight: the client is not read until one ends. */
  pause(): void {
    this.socket?.pause?.();
  }

  resume(): void {
    if (!this.closed) this.socket?.resume?.();
  }

  /** FaceSink: the end of the client's get. */
  final(getId: number): void {
    this.getQos.delete(getId);
    this.send(this.frame(Out.QueryResponseFinal).u32(getId).finish());
  }

  /** InReply: reply samples take priority and congestion control from the get, express from the reply. */
  private sendReply(getId: number, reply: Reply, getQos: WireQos | undefined): void {
    const w = this.frame(Out.InReply).u32(getId);
    if (reply.kind === "err") {
      w.bool(false).bytes(reply.payload);
      writeEncoding(w, reply.encoding);
    } else {
      const s = reply.sample;
      const qos = getQos
        ? { priority: getQos.priority, congestionControl: getQos.congestionControl, express: s.qos?.express ?? false }
        : s.qos;
      w.bool(true);
      writeSample(w, s, encodeQos(qos));
    }
    this.send(w.finish());
  }

  // ---- queryables ---------------------------------------------------------------------------

  /** FaceSink: a router query for the client's queryable `queryableId` (InQuery). */
  query(queryableId: number, queryId: number, query: Query): boolean {
    if (this.closed) return false;
    const w = this.frame(Out.InQuery).u32(queryableId).u32(queryId).string(query.key).string(query.parameters.raw);
    if (query.payload !== undefined || query.encoding !== undefined) {
      w.bool(true)
        .bytes(query.payload ?? EMPTY)
        .bool(true);
      writeEncoding(w, query.encoding ?? "");
    } else w.bool(false).bool(false);
    if (query.attachment) w.bool(true).bytes(query.attachment);
    else w.bool(false);
    w.u8(query.parameters.has("_anyke") ? 0 : 1);
    this.send(w.finish());
    return true;
  }

  // ---- connectivity -------------------------------------------------------------------------

  private peers(): string[] {
    return [...this.connectivity.peers()];
  }

  private writeTransport(w: Writer, zid: string): void {
    writeZenohId(w, zid);
    w.u8(1).bool(false).bool(false); // a router, no QoS lanes, unicast
  }

  private writeLink(w: Writer, zid: string): void {
    const server = this.connectivity.server() ?? "nats";
    writeZenohId(w, zid);
    w.string(`nats/${this.session.zid}`).string(`nats/${server}`);
    w.bool(false).u16(0xffff).bool(true).varint(0).bool(false).bool(false).bool(false);
  }

  private watchConnectivity(lid: number, kind: "transport" | "link", history: boolean): void {
    const known = new Set(this.peers());
    const emit = (put: boolean, zid: string): void => {
      const w = this.frame(kind === "transport" ? Out.InTransportEventUpdate : Out.InLinkEventUpdate)
        .u32(lid)
        .u8(put ? 0 : 1);
      if (kind === "transport") this.writeTransport(w, zid);
      else this.writeLink(w, zid);
      this.send(w.finish());
    };
    const stop = this.connectivity.onChange(() => {
      const now = new Set(this.peers());
      for (const z of now) if (!known.has(z)) emit(true, z);
      for (const z of known) if (!now.has(z)) emit(false, z);
      known.clear();
      for (const z of now) known.add(z);
    });
    this.connectivityListeners.set(lid, { kind, known, stop });
    if (history)
      this.after.push(() => {
        for (const z of known) emit(true, z);
      });
  }

  // ---- sending ------------------------------------------------------------------------------

  private frame(id: number, seq?: number): Writer {
    const w = new Writer();
    if (seq === undefined) w.u8(id);
    else w.u8(id | SEQ_FLAG).u32(seq);
    return w;
  }

  /** FaceSink: a sample for the client's subscriber. */
  sample(subscriberId: number, sample: Sample): void {
    this.sendSample(subscriberId, sample);
  }

  private sendSample(subscriberId: number, sample: Sample): void {
    if (this.closed) return;
    let body = sampleBodies.get(sample);
    if (body === undefined) {
      const w = new Writer(64 + sample.payload.length);
      writeSample(w, sample);
      body = Buffer.from(w.finish());
      sampleBodies.set(sample, body);
    }
    const frame = Buffer.allocUnsafe(5 + body.length);
    frame[0] = Out.InSample;
    frame.writeUInt32LE(subscriberId, 1);
    body.copy(frame, 5);
    this.send(frame);
  }

  private sendMatching(listenerId: number, matching: boolean): void {
    this.send(this.frame(Out.MatchingStatusUpdate).u32(listenerId).bool(matching).finish());
  }

  private send(frame: Buffer): void {
    if (this.closed) return;
    if (this.ws.bufferedAmount > this.limits.maxBufferedBytes) {
      this.logger.warn(
        { conn: this.id, buffered: this.ws.bufferedAmount },
        "remote API client dropped: it does not read what is sent to it",
      );
      this.ws.terminate();
      this.release();
      return;
    }
    // Frames sent while one incoming frame is handled (a put fanned out, a burst of replies) go
    // to the kernel in one write: the socket is corked until the current tick ends.
    const socket = this.socket;
    if (socket && !this.corked) {
      this.corked = true;
      socket.cork();
      process.nextTick(() => {
        this.corked = false;
        socket.uncork();
      });
    }
    this.ws.send(frame, SEND_OPTIONS);
  }

  // ---- cleanup ------------------------------------------------------------------------------

  /** Releases everything the connection holds: declarations, tokens (subscribers see DELETE), queries. */
  private release(): void {
    if (this.closed) return;
    this.closed = true;
    for (const l of this.connectivityListeners.values()) l.stop();
    this.connectivityListeners.clear();
    this.publishers.clear();
    this.queriers.clear();
    this.matchingListeners.clear();
    this.getQos.clear();
    // Queries this connection's queryables were answering end now (their getters get a final);
    // the session undeclares all it declared: subscribers, queryables, tokens, listeners.
    this.face.close();
  }
}
