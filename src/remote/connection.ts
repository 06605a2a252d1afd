/**
 * One remote-API connection: one WebSocket, one zest `Session`. Decodes each binary frame as one
 * message, acts on it through the session, and sends samples, queries, replies and finals back.
 * Everything the connection declared is released when it closes. See docs/remote-api.md.
 */
import { Buffer } from "node:buffer";
import { randomUUID } from "node:crypto";
import type { WebSocket } from "ws";
import { attachedLifetime } from "../core/lifetime.js";
import { errorMessage, ZestError } from "../core/errors.js";
import { intersects } from "../keyexpr/index.js";
import type { Logger } from "../core/log.js";
import { TurnMemo } from "../core/turn-memo.js";
import type { MatchingListener } from "../core/matching.js";
import type { Connectivity } from "../core/ports.js";
import type { Query } from "../core/query.js";
import type { Reply } from "../core/reply.js";
import type { Sample } from "../core/sample.js";
import { Parameters } from "../core/selector.js";
import type { LivelinessToken, Queryable, Session, Subscriber } from "../core/session.js";
import { toKeyExpr } from "../core/key.js";
import { refusalReply, responseErrorText } from "./errors.js";
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

/** Name of a client message, as the access-control hook sees it (`Put`, `DeclareSubscriber`...). */
export type RemoteMessageName = keyof typeof In;

/** A per-key filter: true when what an operation delivers on `key` may reach the client. */
export type KeyFilter = (key: string) => boolean;

/**
 * The access-control hook: may this connection do `message` on `keyExpr`? Every operation that
 * names a key expression asks it once, and each reply a queryable sends asks it as
 * `DeclareQueryable` on the reply's key (a reply may name keys its queryable's does not reach).
 * `true` allows it. A `KeyFilter` allows it in part: what a
 * read delivers (subscriber samples, get replies, liveliness samples) is filtered per key, and a
 * write or a declaration that provides data (publisher, queryable, token) is refused whole.
 * Throw a `ZestError` (`forbidden`) or return false to refuse.
 */
export type Authorize = (message: RemoteMessageName, keyExpr: string) => boolean | KeyFilter;

/** Per-connection limits (see docs/remote-api.md for the defaults). */
export interface RemoteLimits {
  /** Declarations of every kind this connection may hold at once. */
  readonly maxDeclarations: number;
  /** Gets this connection may have in flight. */
  readonly maxPendingGets: number;
  /** Queries waiting for this connection's queryables to answer. */
  readonly maxPendingQueries: number;
  /** Bytes queued for a client that does not read before it is dropped. */
  readonly maxBufferedBytes: number;
  /** Longest query timeout a client may ask for, in milliseconds. */
  readonly maxQueryTimeoutMs: number;
}

/** The part of the connection's TCP (or TLS) socket it uses: batching frames into one write. */
export interface Corkable {
  cork(): void;
  uncork(): void;
}

export interface ConnectionOptions {
  readonly session: Session;
  /** The routers this one reaches, for the connectivity events (a port, not `session.router`). */
  readonly connectivity: Connectivity;
  /** The socket under the WebSocket, corked while one incoming frame is handled. */
  readonly socket?: Corkable;
  readonly logger: Logger;
  readonly limits: RemoteLimits;
  readonly authorize: Authorize;
  /** Called once when the connection is gone and everything it held is released. */
  readonly onClosed: () => void;
}

interface Publisher {
  readonly key: string;
  readonly encoding: string;
  readonly qos: WireQos;
}

interface Querier {
  readonly key: string;
  readonly qos: WireQos;
  readonly settings: QuerySettings;
  readonly timeoutMs: number;
}

interface IncomingQuery {
  readonly query: Query;
  readonly done: () => void;
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

export class RemoteConnection {
  /** Shown in logs; the string answered to Ping. */
  readonly id = randomUUID();
  private readonly session: Session;
  private readonly logger: Logger;
  private readonly limits: RemoteLimits;
  private readonly authorizeHook: Authorize;
  private readonly connectivity: Connectivity;
  private readonly socket: Corkable | undefined;
  private readonly publishers = new Map<number, Publisher>();
  private readonly queriers = new Map<number, Querier>();
  private readonly subscribers = new Map<number, Subscriber>();
  private readonly queryables = new Map<number, Queryable>();
  private readonly tokens = new Map<number, LivelinessToken>();
  private readonly livelinessSubscribers = new Map<number, Subscriber>();
  private readonly matchingListeners = new Map<number, MatchingListener>();
  private readonly connectivityListeners = new Map<number, ConnectivityListener>();
  private readonly incoming = new Map<number, IncomingQuery>();
  private nextQueryId = 0;
  private pendingGets = 0;
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
    this.authorizeHook = options.authorize;
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
    return (
      this.publishers.size +
      this.queriers.size +
      this.subscribers.size +
      this.queryables.size +
      this.tokens.size +
      this.livelinessSubscribers.size +
      this.matchingListeners.size +
      this.connectivityListeners.size
    );
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
        const k = this.declaring("DeclarePublisher", this.publishers, pid, key);
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
        const { key: k, filter } = this.declaringRead("DeclareSubscriber", this.subscribers, sid, key);
        const handler = filter
          ? (s: Sample) => void (filter(s.key) && this.sendSample(sid, s))
          : (s: Sample) => this.sendSample(sid, s);
        this.subscribers.set(sid, this.session.declareSubscriber(k, handler, { allowedOrigin: origin }));
        return undefined;
      }
      case In.UndeclareSubscriber:
        this.undeclare(this.subscribers, r, "subscriber")?.undeclare();
        return undefined;
      case In.DeclareQueryable: {
        const qid = r.u32();
        const key = r.string();
        const complete = r.bool();
        const origin = readLocality(r.u8());
        r.end();
        const k = this.declaring("DeclareQueryable", this.queryables, qid, key);
        this.queryables.set(
          qid,
          this.session.declareQueryable(k, (q) => this.forwardQuery(qid, q), { complete, allowedOrigin: origin }),
        );
        return undefined;
      }
      case In.UndeclareQueryable:
        this.undeclare(this.queryables, r, "queryable")?.undeclare();
        return undefined;
      case In.DeclareQuerier: {
        const qid = r.u32();
        const key = r.string();
        const qos = decodeQos(r.u8());
        const settings = decodeQuerySettings(r.u8());
        const timeoutMs = r.u32();
        r.end();
        const { key: k } = this.declaringRead("DeclareQuerier", this.queriers, qid, key);
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
        const k = this.declaring("DeclareLivelinessToken", this.tokens, tid, key);
        this.tokens.set(tid, this.session.declareLivelinessToken(k));
        return undefined;
      }
      case In.UndeclareLivelinessToken:
        this.undeclare(this.tokens, r, "liveliness token")?.undeclare();
        return undefined;
      case In.DeclareLivelinessSubscriber: {
        const sid = r.u32();
        const key = r.string();
        const history = r.bool();
        r.end();
        const { key: k, filter } = this.declaringRead(
          "DeclareLivelinessSubscriber",
          this.livelinessSubscribers,
          sid,
          key,
        );
        // History goes out after the ResponseOk, like the live samples that follow it.
        const early: Sample[] = [];
        let live = false;
        const sub = this.session.declareLivelinessSubscriber(
          k,
          (s) => {
            if (filter && !filter(s.key)) return;
            if (live) this.sendSample(sid, s);
            else early.push(s);
          },
          { history },
        );
        this.livelinessSubscribers.set(sid, sub);
        this.after.push(() => {
          live = true;
          for (const s of early) this.sendSample(sid, s);
        });
        return undefined;
      }
      case In.UndeclareLivelinessSubscriber:
        this.undeclare(this.livelinessSubscribers, r, "liveliness subscriber")?.undeclare();
        return undefined;
      case In.Put: {
        const key = r.string();
        const payload = Buffer.from(r.bytes());
        const encoding = readEncoding(r);
        const attachment = this.optBytes(r);
        const timestamp = r.optional(() => readTimestamp(r));
        const qos = decodeQos(r.u8());
        r.end();
        const k = this.authorized("Put", key);
        // A `zest:` attachment asks a lifetime (docs/ttl-and-leases.md) and is not handed on.
        const life = attachedLifetime(attachment);
        this.write(
          this.session.put(
            k,
            payload,
            life === undefined
              ? { encoding, attachment, timestamp, qos, allowedDestination: qos.locality }
              : { encoding, timestamp, qos, allowedDestination: qos.locality, ...life },
          ),
          k,
        );
        return undefined;
      }
      case In.Delete: {
        const key = r.string();
        const attachment = this.optBytes(r);
        const timestamp = r.optional(() => readTimestamp(r));
        const qos = decodeQos(r.u8());
        r.end();
        const k = this.authorized("Delete", key);
        this.write(this.session.delete(k, { attachment, timestamp, qos, allowedDestination: qos.locality }), k);
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
        this.authorized("PublisherPut", p.key);
        const qos = p.qos;
        const life = attachedLifetime(attachment);
        this.write(
          this.session.put(p.key, payload, {
            encoding: encoding ?? p.encoding,
            attachment: life === undefined ? attachment : undefined,
            timestamp,
            qos,
            allowedDestination: qos.locality,
            ...life,
          }),
          p.key,
        );
        return undefined;
      }
      case In.PublisherDelete: {
        const pid = r.u32();
        const attachment = this.optBytes(r);
        const timestamp = r.optional(() => readTimestamp(r));
        r.end();
        const p = this.known(this.publishers, pid, "publisher");
        this.authorized("PublisherDelete", p.key);
        this.write(
          this.session.delete(p.key, { attachment, timestamp, qos: p.qos, allowedDestination: p.qos.locality }),
          p.key,
        );
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
        this.get("Get", { getId, key, parameters, payload, encoding, attachment, qos, settings, timeoutMs });
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
        this.get("QuerierGet", {
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
          const { key: k, filter } = this.access("LivelinessGet", key);
          samples = this.session.livelinessGet(k);
          if (filter) samples = samples.filter((s) => filter(s.key));
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
        const q = this.replyTarget(queryId, key);
        q?.reply(key, payload, { encoding, attachment, timestamp, qos });
        return undefined;
      }
      case In.ReplyDel: {
        const queryId = r.u32();
        const key = r.string();
        const attachment = this.optBytes(r);
        const timestamp = r.optional(() => readTimestamp(r));
        const qos = decodeQos(r.u8());
        r.end();
        this.replyTarget(queryId, key)?.replyDelete(key, { attachment, timestamp, qos });
        return undefined;
      }
      case In.ReplyErr: {
        const queryId = r.u32();
        const payload = Buffer.from(r.bytes());
        const encoding = readEncoding(r);
        r.end();
        this.incoming.get(queryId)?.query.replyErr(payload, { encoding });
        return undefined;
      }
      case In.QueryResponseFinal: {
        const queryId = r.u32();
        r.end();
        this.incoming.get(queryId)?.done();
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
        this.declaring(IN_NAMES[id] as RemoteMessageName, this.matchingListeners, lid, owner.key);
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
        if (this.connectivityListeners.has(lid)) throw ZestError.conflict(`listener id ${lid} is already declared`);
        this.checkDeclarationLimit();
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

  /** Checks a declaration: a fresh id, within the limit, a valid key the client may use whole. */
  private declaring(message: RemoteMessageName, map: Map<number, unknown>, id: number, key: string): string {
    if (map.has(id)) throw ZestError.conflict(`id ${id} is already declared`);
    this.checkDeclarationLimit();
    return this.authorized(message, key);
  }

  /** Checks a reading declaration (subscriber, querier): like `declaring`, but allowed in part. */
  private declaringRead(
    message: RemoteMessageName,
    map: Map<number, unknown>,
    id: number,
    key: string,
  ): { key: string; filter?: KeyFilter } {
    if (map.has(id)) throw ZestError.conflict(`id ${id} is already declared`);
    this.checkDeclarationLimit();
    return this.access(message, key);
  }

  private checkDeclarationLimit(): void {
    if (this.declarations >= this.limits.maxDeclarations) {
      throw new ZestError(
        "too_large",
        `this connection already holds ${this.limits.maxDeclarations} declarations (the limit)`,
      );
    }
  }

  private undeclare<T>(map: Map<number, T>, r: Reader, what: string): T | undefined {
    const id = r.u32();
    r.end();
    const v = this.known(map, id, what);
    map.delete(id);
    return v;
  }

  private known<T>(map: Map<number, T>, id: number, what: string): T {
    const v = map.get(id);
    if (v === undefined) throw ZestError.notFound(`unknown ${what} id ${id}`);
    return v;
  }

  /**
   * Canonizes `key` and asks the access-control hook; throws a ZestError when refused. A write
   * or a declaration that provides data must be allowed whole.
   */
  private authorized(message: RemoteMessageName, key: string): string {
    const { key: k, filter } = this.access(message, key);
    if (filter)
      throw ZestError.forbidden(`${message} on ${k} is not allowed: it reaches keys outside the allowed ones`);
    return k;
  }

  /** Canonizes `key` and asks the access-control hook: the key, and the filter of a partial allowance. */
  private access(message: RemoteMessageName, key: string): { key: string; filter?: KeyFilter } {
    const k = toKeyExpr(key);
    const verdict = this.authorizeHook(message, k);
    if (verdict === false) throw ZestError.forbidden(`${message} on ${k} is not allowed`);
    return verdict === true ? { key: k } : { key: k, filter: verdict };
  }

  private optBytes(r: Reader): Buffer | undefined {
    return r.optional(() => Buffer.from(r.bytes()));
  }

  /** A fire-and-forget write: its failure (a storage refusing it) can only be logged. */
  private write(p: Promise<void>, key: string): void {
    p.catch((err: unknown) =>
      this.logger.info({ conn: this.id, key, err: errorMessage(err) }, "remote API write failed"),
    );
  }

  // ---- gets ---------------------------------------------------------------------------------

  private get(message: RemoteMessageName, g: GetRequest): void {
    let key: string;
    let filter: KeyFilter | undefined;
    try {
      ({ key, filter } = this.access(message, g.key));
      if (this.pendingGets >= this.limits.maxPendingGets) {
        throw ZestError.unavailable(
          `this connection already has ${this.limits.maxPendingGets} gets in flight (the limit)`,
        );
      }
    } catch (err) {
      this.replyAndFinal(g.getId, refusalReply(err));
      return;
    }
    let parameters = g.parameters;
    if (!g.settings.matchingReplies && !new Parameters(parameters).has("_anyke"))
      parameters = parameters === "" ? "_anyke" : `${parameters};_anyke`;
    const timeoutMs = g.timeoutMs === 0 ? undefined : Math.min(g.timeoutMs, this.limits.maxQueryTimeoutMs);
    this.pendingGets++;
    this.session
      .getStream(
        { key, parameters },
        (reply) =>
          filter && reply.kind === "ok" && !filter(reply.sample.key)
            ? undefined
            : this.sendReply(g.getId, reply, g.qos),
        {
          timeoutMs,
          consolidation: g.settings.consolidation,
          target: g.settings.target,
          allowedDestination: g.qos.locality,
          ...(g.payload !== undefined || g.encoding !== undefined
            ? { payload: g.payload ?? EMPTY, encoding: g.encoding ?? "" }
            : {}),
          ...(g.attachment ? { attachment: g.attachment } : {}),
        },
      )
      .catch((err: unknown) => this.sendReply(g.getId, refusalReply(err), g.qos))
      .finally(() => {
        this.pendingGets--;
        this.send(this.frame(Out.QueryResponseFinal).u32(g.getId).finish());
      });
  }

  private replyAndFinal(getId: number, reply: Reply): void {
    this.sendReply(getId, reply, undefined);
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

  /** Hands a query to this connection's queryable; the query ends on its final, or the timeout. */
  private forwardQuery(queryableId: number, query: Query): Promise<void> {
    if (this.closed) return Promise.resolve();
    if (this.incoming.size >= this.limits.maxPendingQueries) {
      query.replyErr(
        `unavailable: the queryable's connection has ${this.limits.maxPendingQueries} queries pending (the limit)`,
        { errorKind: "unavailable" },
      );
      return Promise.resolve();
    }
    this.nextQueryId = (this.nextQueryId + 1) >>> 0;
    const queryId = this.nextQueryId;
    return new Promise<void>((resolve) => {
      const done = (): void => {
        if (this.incoming.get(queryId)?.query === query) this.incoming.delete(queryId);
        resolve();
      };
      this.incoming.set(queryId, { query, done });
      query.onFinished(done);
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
    });
  }

  /**
   * The query a reply is for, or undefined when the reply is dropped (and logged): an unknown or
   * finished query, an invalid key, a key outside the query without `_anyke`, or a key this
   * client may not answer for (`declare_queryable` on the reply's key, docs/remote-api.md).
   */
  private replyTarget(queryId: number, key: string): Query | undefined {
    const q = this.incoming.get(queryId)?.query;
    if (q === undefined) {
      this.logger.debug({ conn: this.id, queryId }, "remote API reply for an unknown or finished query dropped");
      return undefined;
    }
    let k: string;
    try {
      k = toKeyExpr(key);
    } catch (err) {
      this.logger.info({ conn: this.id, key, err: errorMessage(err) }, "remote API reply with an invalid key dropped");
      return undefined;
    }
    if (!q.parameters.has("_anyke") && k !== q.key && !intersects(q.key, k)) {
      this.logger.info(
        { conn: this.id, key: k, query: q.key },
        "remote API reply outside the query's key expression dropped (no _anyke)",
      );
      return undefined;
    }
    // The queryable was allowed on its own key expression, but a reply names its key: with
    // `_anyke` any key, and even within the query's key one the queryable's may not reach. What a
    // reply provides is checked like the declaration was, per reply.
    try {
      this.authorized("DeclareQueryable", k);
    } catch (err) {
      this.logger.info(
        { conn: this.id, key: k, query: q.key, err: errorMessage(err) },
        "remote API reply on a key the client may not answer for dropped",
      );
      return undefined;
    }
    return q;
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
    // Queries this connection's queryables were answering end now: their getters get a final.
    for (const q of [...this.incoming.values()]) q.done();
    this.incoming.clear();
    this.publishers.clear();
    this.queriers.clear();
    this.subscribers.clear();
    this.queryables.clear();
    this.tokens.clear();
    this.livelinessSubscribers.clear();
    this.matchingListeners.clear();
    // The session undeclares all it declared: subscribers, queryables, tokens, listeners.
    this.session.close();
  }
}
