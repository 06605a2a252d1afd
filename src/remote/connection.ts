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
import { In, Out, type QuerySettings, type WireQos } from "./protocol.js";
import { ConnectivityEvents } from "./connectivity-events.js";
import { known, PublishersAndQueriers } from "./publishers.js";
import { decodeFrame, type InMessage } from "./messages.js";
import {
  finalFrame,
  frame,
  matchingFrame,
  queryFrame,
  replyFrame,
  sampleFrame,
  sessionInfoFrame,
  timestampFrame,
} from "./outgoing.js";
import { CloseCode, ProtocolError, Reader } from "./wire.js";

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

const EMPTY = Buffer.alloc(0);
const SEND_OPTIONS = { binary: true, compress: false } as const;

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
  /** The client's publishers and queriers, and matching listeners on them. */
  private readonly own: PublishersAndQueriers;
  /** Transports and links, and the listeners that follow them. */
  private readonly events: ConnectivityEvents;
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
    this.own = new PublishersAndQueriers(options.session);
    this.events = new ConnectivityEvents(options.connectivity, options.session.zid, (f) => this.send(f));
    this.face = new Face({
      session: options.session,
      policy: options.policy,
      limits: options.limits,
      logger: options.logger.child({ conn: this.id }),
      sessionBound: options.sessionBound,
      sink: this,
      redeclare: "refuse",
      doorDeclarations: () => this.own.size + this.events.size,
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
        this.send(frame(Out.ResponseError, seq).string(responseErrorText(err)).finish());
      }
      this.after = [];
      return;
    }
    if (seq !== undefined) this.send(response ?? frame(Out.ResponseOk, seq).u8(In[message.name]).finish());
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
        return frame(Out.ResponsePing, seq).string(this.id).finish();
      case "GetSessionInfo":
        return sessionInfoFrame(seq, this.session.zid, [...this.connectivity.peers()]);
      case "GetTimestamp":
        return timestampFrame(seq, this.session.clock.newTimestamp());
      case "DeclarePublisher": {
        this.declaringOwn(this.own.publishers, m.id);
        const k = face.key(m.key);
        // A publisher puts or deletes: declaring one needs either on its whole key.
        if (!face.allows("put", k) && !face.allows("delete", k)) face.authorize("put", k);
        this.own.publishers.set(m.id, { key: k, encoding: m.encoding, qos: m.qos });
        return undefined;
      }
      case "UndeclarePublisher":
        this.own.undeclare(this.own.publishers, m.id, "publisher");
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
        this.declaringOwn(this.own.queriers, m.id);
        const k = face.key(m.key);
        // Allowed in part: each get's replies are filtered then.
        face.verdict("query", k);
        this.own.queriers.set(m.id, { key: k, qos: m.qos, settings: m.settings, timeoutMs: m.timeoutMs });
        return undefined;
      }
      case "UndeclareQuerier":
        this.own.undeclare(this.own.queriers, m.id, "querier");
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
          if (live) this.sample(m.id, s);
          else early.push(s);
        });
        this.after.push(() => {
          live = true;
          for (const s of early) this.sample(m.id, s);
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
        const p = known(this.own.publishers, m.id, "publisher");
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
        const p = known(this.own.publishers, m.id, "publisher");
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
        const q = this.own.queriers.get(m.querierId);
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
        for (const s of samples) this.send(replyFrame(m.getId, { kind: "ok", sample: s }, undefined));
        this.send(finalFrame(m.getId));
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
      case "QuerierDeclareMatchingListener":
        face.checkDeclarationLimit();
        this.after.push(
          this.own.declareListener(m.id, m.name === "PublisherDeclareMatchingListener", m.ownerId, (matching) =>
            this.send(matchingFrame(m.id, matching)),
          ),
        );
        return undefined;
      case "UndeclareMatchingListener":
        this.own.undeclareListener(m.id);
        return undefined;
      case "PublisherGetMatchingStatus":
      case "QuerierGetMatchingStatus": {
        const matching = this.own.matchingStatus(m.name === "PublisherGetMatchingStatus", m.ownerId);
        return frame(Out.ResponseMatchingStatus, seq).bool(matching).finish();
      }
      case "GetTransports":
        return this.events.response("transport", seq);
      case "GetLinks":
        return this.events.response("link", seq);
      case "DeclareTransportEventsListener":
      case "DeclareLinkEventsListener":
        this.declaringOwn(this.events, m.id);
        this.after.push(
          this.events.declare(m.id, m.name === "DeclareTransportEventsListener" ? "transport" : "link", m.history),
        );
        return undefined;
      case "UndeclareTransportEventsListener":
      case "UndeclareLinkEventsListener":
        return this.undeclared(this.events.undeclare(m.id), "connectivity listener", m.id);
    }
  }

  // ---- declarations -------------------------------------------------------------------------

  /** Checks a declaration the door holds itself (publisher, querier, listener): a fresh id, within the limit. */
  private declaringOwn(map: { has(id: number): boolean }, id: number): void {
    PublishersAndQueriers.fresh(map, id);
    this.face.checkDeclarationLimit();
  }

  /** `not_found` when the face had no declaration by that id. */
  private undeclared(found: boolean, what: string, id: number): undefined {
    if (!found) throw ZestError.notFound(`unknown ${what} id ${id}`);
    return undefined;
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
    this.send(replyFrame(getId, reply, undefined));
    this.send(finalFrame(getId));
  }

  /** FaceSink: a reply to the client's get. */
  reply(getId: number, reply: Reply): void {
    this.send(replyFrame(getId, reply, this.getQos.get(getId)));
  }

  /** FaceSink: the end of the client's get. */
  final(getId: number): void {
    this.getQos.delete(getId);
    this.send(finalFrame(getId));
  }

  /** FaceSink: too many gets in flight: the client is not read until one ends. */
  pause(): void {
    this.socket?.pause?.();
  }

  resume(): void {
    if (!this.closed) this.socket?.resume?.();
  }

  /** FaceSink: a router query for the client's queryable `queryableId` (InQuery). */
  query(queryableId: number, queryId: number, query: Query): boolean {
    if (this.closed) return false;
    this.send(queryFrame(queryableId, queryId, query));
    return true;
  }

  /** FaceSink: a sample for the client's subscriber. */
  sample(subscriberId: number, sample: Sample): void {
    if (!this.closed) this.send(sampleFrame(subscriberId, sample));
  }

  // ---- sending ------------------------------------------------------------------------------

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
    this.events.close();
    this.own.clear();
    this.getQos.clear();
    // Queries this connection's queryables were answering end now (their getters get a final);
    // the session undeclares all it declared: subscribers, queryables, tokens, listeners.
    this.face.close();
  }
}
