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
  encodeQos,
  In,
  Out,
  type QuerySettings,
  SEQ_FLAG,
  type WireQos,
  writeEncoding,
  writeSample,
  writeTimestamp,
  writeZenohId,
} from "./protocol.js";
import { decodeFrame, type InMessage } from "./messages.js";
import { CloseCode, ProtocolError, Reader, Writer } from "./wire.js";

export type { RemoteMessageName } from "./messages.js";

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
    const { message, seq } = decodeFrame(new Reader(buf));
    let response: Buffer | undefined;
    try {
      response = this.dispatch(message, seq);
    } catch (err) {
      if (err instanceof ProtocolError) throw err;
      if (seq === undefined) {
        this.logger.info(
          { conn: this.id, message: message.name, err: errorMessage(err) },
          "remote API message refused",
        );
      } else {
        this.send(this.frame(Out.ResponseError, seq).string(responseErrorText(err)).finish());
      }
      this.after = [];
      return;
    }
    if (seq !== undefined) this.send(response ?? this.frame(Out.ResponseOk, seq).u8(In[message.name]).finish());
    if (this.after.length > 0) {
      const after = this.after;
      this.after = [];
      for (const f of after) f();
    }
  }

  /**
   * Acts on one decoded message: what is zenoh's goes to the face, what only the remote API has
   * (publishers, queriers, matching listeners, connectivity) stays here. Returns the response to
   * send, when it is not a plain ResponseOk; a refusal throws.
   */
  private dispatch(m: InMessage, seq: number | undefined): Buffer | undefined {
    const face = this.face;
    switch (m.name) {
      case "Ping":
        return this.frame(Out.ResponsePing, seq).string(this.id).finish();
      case "GetSessionInfo": {
        const w = this.frame(Out.ResponseSessionInfo, seq);
        writeZenohId(w, this.session.zid);
        const routers = this.peers();
        w.varint(routers.length);
        for (const zid of routers) writeZenohId(w, zid);
        w.varint(0);
        return w.finish();
      }
      case "GetTimestamp": {
        const w = this.frame(Out.ResponseTimestamp, seq);
        writeTimestamp(w, this.session.clock.newTimestamp());
        return w.finish();
      }
      case "DeclarePublisher": {
        this.declaringOwn(this.publishers, m.id);
        const k = face.key(m.key);
        // A publisher puts or deletes: declaring one needs either on its whole key.
        if (!face.allows("put", k) && !face.allows("delete", k)) face.authorize("put", k);
        this.publishers.set(m.id, { key: k, encoding: m.encoding, qos: m.qos });
        return undefined;
      }
      case "UndeclarePublisher":
        this.undeclareOwn(this.publishers, m.id, "publisher");
        return undefined;
      case "DeclareSubscriber":
        face.declareSubscriber(m.id, face.key(m.key), { allowedOrigin: m.origin });
        return undefined;
      case "UndeclareSubscriber":
        return this.undeclared(face.undeclareSubscriber(m.id), "subscriber", m.id);
      case "DeclareQueryable":
        face.declareQueryable(m.id, face.key(m.key), { complete: m.complete, allowedOrigin: m.origin });
        return undefined;
      case "UndeclareQueryable":
        return this.undeclared(face.undeclareQueryable(m.id), "queryable", m.id);
      case "DeclareQuerier": {
        this.declaringOwn(this.queriers, m.id);
        const k = face.key(m.key);
        // Allowed in part: each get's replies are filtered then.
        face.verdict("query", k);
        this.queriers.set(m.id, { key: k, qos: m.qos, settings: m.settings, timeoutMs: m.timeoutMs });
        return undefined;
      }
      case "UndeclareQuerier":
        this.undeclareOwn(this.queriers, m.id, "querier");
        return undefined;
      case "DeclareLivelinessToken":
        face.declareToken(m.id, face.key(m.key));
        return undefined;
      case "UndeclareLivelinessToken":
        return this.undeclared(face.undeclareToken(m.id), "liveliness token", m.id);
      case "DeclareLivelinessSubscriber": {
        // History goes out after the ResponseOk, like the live samples that follow it.
        const early: Sample[] = [];
        let live = false;
        face.declareLivelinessSubscriber(m.id, face.key(m.key), m.history, (s) => {
          if (live) this.sendSample(m.id, s);
          else early.push(s);
        });
        this.after.push(() => {
          live = true;
          for (const s of early) this.sendSample(m.id, s);
        });
        return undefined;
      }
      case "UndeclareLivelinessSubscriber":
        return this.undeclared(face.undeclareLivelinessSubscriber(m.id), "liveliness subscriber", m.id);
      case "Put":
        face.put(face.key(m.key), m.payload, {
          encoding: m.encoding,
          attachment: m.attachment,
          timestamp: m.timestamp,
          qos: m.qos,
          allowedDestination: m.qos.locality,
        });
        return undefined;
      case "Delete":
        face.delete(face.key(m.key), {
          attachment: m.attachment,
          timestamp: m.timestamp,
          qos: m.qos,
          allowedDestination: m.qos.locality,
        });
        return undefined;
      case "PublisherPut": {
        const p = this.known(this.publishers, m.id, "publisher");
        face.put(p.key, m.payload, {
          encoding: m.encoding ?? p.encoding,
          attachment: m.attachment,
          timestamp: m.timestamp,
          qos: p.qos,
          allowedDestination: p.qos.locality,
        });
        return undefined;
      }
      case "PublisherDelete": {
        const p = this.known(this.publishers, m.id, "publisher");
        face.delete(p.key, {
          attachment: m.attachment,
          timestamp: m.timestamp,
          qos: p.qos,
          allowedDestination: p.qos.locality,
        });
        return undefined;
      }
      case "Get":
        this.get(m, m.key, m.qos, m.settings, m.timeoutMs);
        return undefined;
      case "QuerierGet": {
        const q = this.queriers.get(m.querierId);
        // Fire-and-forget: the getter waits for a final, so it gets an error reply and one.
        if (q === undefined)
          this.replyAndFinal(m.getId, refusalReply(ZestError.notFound(`unknown querier id ${m.querierId}`)));
        else this.get(m, q.key, q.qos, q.settings, q.timeoutMs);
        return undefined;
      }
      case "LivelinessGet": {
        let samples: Sample[];
        try {
          samples = face.livelinessGet(face.key(m.key));
        } catch (err) {
          this.replyAndFinal(m.getId, refusalReply(err));
          return undefined;
        }
        for (const s of samples) this.sendReply(m.getId, { kind: "ok", sample: s }, undefined);
        this.send(this.frame(Out.QueryResponseFinal).u32(m.getId).finish());
        return undefined;
      }
      case "ReplyOk": {
        const t = face.replyTarget(m.queryId, () => m.key);
        t?.query.reply(t.key, m.payload, {
          encoding: m.encoding,
          attachment: m.attachment,
          timestamp: m.timestamp,
          qos: m.qos,
        });
        return undefined;
      }
      case "ReplyDel": {
        const t = face.replyTarget(m.queryId, () => m.key);
        t?.query.replyDelete(t.key, { attachment: m.attachment, timestamp: m.timestamp, qos: m.qos });
        return undefined;
      }
      case "ReplyErr":
        face.replyErr(m.queryId, m.payload, m.encoding);
        return undefined;
      case "QueryResponseFinal":
        face.finishQuery(m.queryId);
        return undefined;
      case "PublisherDeclareMatchingListener":
      case "QuerierDeclareMatchingListener": {
        const owner = this.owner(m.name === "PublisherDeclareMatchingListener", m.ownerId);
        this.declaringOwn(this.matchingListeners, m.id);
        const listener = this.session.declareMatchingListener(
          owner.key,
          owner.kind,
          (matching) => this.sendMatching(m.id, matching),
          { allowedDestination: owner.qos.locality, target: owner.target },
        );
        this.matchingListeners.set(m.id, listener);
        this.after.push(() => {
          if (listener.matching && this.matchingListeners.get(m.id) === listener) this.sendMatching(m.id, true);
        });
        return undefined;
      }
      case "UndeclareMatchingListener":
        this.undeclareOwn(this.matchingListeners, m.id, "matching listener")?.undeclare();
        return undefined;
      case "PublisherGetMatchingStatus":
      case "QuerierGetMatchingStatus": {
        const owner = this.owner(m.name === "PublisherGetMatchingStatus", m.ownerId);
        const matching = this.session.matchingStatus(owner.key, owner.kind, {
          allowedDestination: owner.qos.locality,
          target: owner.target,
        });
        return this.frame(Out.ResponseMatchingStatus, seq).bool(matching).finish();
      }
      case "GetTransports": {
        const w = this.frame(Out.ResponseTransports, seq);
        const peers = this.peers();
        w.varint(peers.length);
        for (const zid of peers) this.writeTransport(w, zid);
        return w.finish();
      }
      case "GetLinks": {
        const w = this.frame(Out.ResponseLinks, seq);
        const peers = this.peers();
        w.varint(peers.length);
        for (const zid of peers) this.writeLink(w, zid);
        return w.finish();
      }
      case "DeclareTransportEventsListener":
      case "DeclareLinkEventsListener":
        this.declaringOwn(this.connectivityListeners, m.id);
        this.watchConnectivity(m.id, m.name === "DeclareTransportEventsListener" ? "transport" : "link", m.history);
        return undefined;
      case "UndeclareTransportEventsListener":
      case "UndeclareLinkEventsListener":
        this.undeclareOwn(this.connectivityListeners, m.id, "connectivity listener")?.stop();
        return undefined;
    }
  }

  /** The publisher (or querier) a matching message names, as matching asks it. */
  private owner(
    publisher: boolean,
    id: number,
  ): { key: string; kind: "subscribers" | "queryables"; qos: WireQos; target?: QuerySettings["target"] } {
    if (publisher) {
      const p = this.known(this.publishers, id, "publisher");
      return { key: p.key, kind: "subscribers", qos: p.qos };
    }
    const q = this.known(this.queriers, id, "querier");
    return { key: q.key, kind: "queryables", qos: q.qos, target: q.settings.target };
  }

  // ---- declarations -------------------------------------------------------------------------

  /** Checks a declaration the door holds itself (publisher, querier, listener): a fresh id, within the limit. */
  private declaringOwn(map: Map<number, unknown>, id: number): void {
    if (map.has(id)) throw ZestError.conflict(`id ${id} is already declared`);
    this.face.checkDeclarationLimit();
  }

  private undeclareOwn<T>(map: Map<number, T>, id: number, what: string): T {
    const v = this.known(map, id, what);
    map.delete(id);
    return v;
  }

  /** `not_found` when the face had no declaration by that id. */
  private undeclared(found: boolean, what: string, id: number): undefined {
    if (!found) throw ZestError.notFound(`unknown ${what} id ${id}`);
    return undefined;
  }

  private known<T>(map: Map<number, T>, id: number, what: string): T {
    const v = map.get(id);
    if (v === undefined) throw ZestError.notFound(`unknown ${what} id ${id}`);
    return v;
  }

  // ---- gets ---------------------------------------------------------------------------------

  /** A get (or a querier's on its key, QoS and settings): the face runs it; replies and the final come back through the sink. */
  private get(
    g: InMessage & { name: "Get" | "QuerierGet" },
    rawKey: string,
    qos: WireQos,
    settings: QuerySettings,
    timeoutMs: number,
  ): void {
    let key: CanonicalKey;
    try {
      key = this.face.key(rawKey);
    } catch (err) {
      this.replyAndFinal(g.getId, refusalReply(err));
      return;
    }
    let parameters = g.parameters;
    if (!settings.matchingReplies && !new Parameters(parameters).has("_anyke"))
      parameters = parameters === "" ? "_anyke" : `${parameters};_anyke`;
    this.getQos.set(g.getId, qos);
    this.face.get(g.getId, key, {
      parameters,
      timeoutMs,
      consolidation: settings.consolidation,
      target: settings.target,
      allowedDestination: qos.locality,
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
