import { Buffer } from "node:buffer";
import { performance } from "node:perf_hooks";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { createServer as createHttpsServer } from "node:https";
import type { AddressInfo } from "node:net";
import { AccessControl, type Principal } from "../access/access.js";
import { ConnectionGuard, connectionLimits } from "../access/connections.js";
import { isAllowedHost, originAllowed } from "../access/origin.js";
import { errorMessage, toZestError, ZestError } from "../core/errors.js";
import type { Logger } from "../core/log.js";
import { Parameters } from "../core/selector.js";
import { OkReply, type Reply } from "../core/reply.js";
import type { Sample } from "../core/sample.js";
import { SETTLED } from "../core/settled.js";
import type { Timestamp } from "../core/timestamp.js";
import { isWild } from "../keyexpr/index.js";
import type { ConditionOptions, Session } from "../core/session.js";
import { checkRead, checkWrite, DEFAULT_ADMIN_PERMISSIONS, isAdmin, type AdminPermissions } from "./access.js";
import type { Rendered, RestCodec } from "./codec.js";
import { httpStatus } from "./http-status.js";
import { type CachedResponse, cacheableReplies, ReadCache } from "./read-cache.js";
import { hasBody, rawResponse, wantsRaw } from "./raw.js";
import {
  etagOf,
  hasConditions,
  newestTimestamp,
  readPrecondition,
  writePrecondition,
  type WritePrecondition,
} from "./conditions.js";
import { type WriteLifetime, withExpires, writeLifetime } from "./lifetime.js";
import { renderLayout, streamLayout, streamLayouts, type Layout } from "./layout.js";
import { lastEventIdOf, SseHub, type SseOptions, type SseStats } from "./sse.js";
import { SocketBytes } from "./socket-bytes.js";
import { serveExplorer } from "./explorer/index.js";

/** REST gateway options; every one has a default. */
export interface RestServerOptions {
  session: Session;
  codec: RestCodec;
  /** Port to listen on (8000). 0 picks a free one. */
  port?: number;
  /** Interface to bind (all interfaces). */
  host?: string;
  /** Largest request body accepted, in bytes (16 MiB); larger ones get a 413. */
  bodyLimit?: number;
  /** Who may read and write the admin space (read: all, write: loopback clients). */
  permissions?: AdminPermissions;
  /**
   * How many rendered GET responses of stored data to keep (1024; 0 disables). Only used on a
   * router without a fabric, where every change to the data passes through this router.
   */
  cacheEntries?: number;
  /** Authentication and access decisions (none: everyone may do everything). */
  access?: AccessControl;
  /** Serve HTTPS with this PEM certificate chain and key (see `loadTlsOptions`). */
  tls?: { cert: Buffer | string; key: Buffer | string };
  /** Origins whose pages may write, besides the router's own (`plugins.rest.cors.allowed_origins`). */
  allowedOrigins?: readonly string[];
  /** Host names that name this router besides IP literals and `localhost` (`plugins.rest.allowed_hosts`). */
  allowedHosts?: readonly string[];
  /** Open connections per client address (256, at most a quarter of the total). */
  maxConnectionsPerAddress?: number;
  /** Open connections in all (the file-descriptor limit less a reserve). */
  maxConnections?: number;
  /** Milliseconds a client has to send a request head (10 000). */
  headersTimeoutMs?: number;
  /** Milliseconds a request body may go without a byte before the connection is dropped (10 000). */
  bodyIdleTimeoutMs?: number;
  /** Milliseconds a streamed GET answer may wait for the client to take a chunk before the connection is dropped (30 000). */
  responseIdleTimeoutMs?: number;
  /** SSE event ids and resume (docs/sse.md). */
  sse?: SseOptions;
  /**
   * Request metrics (docs/metrics.md): `track` is called once for a read answered later;
   * `served` once a read answered at once (from the read cache or the storage index) or a write
   * is answered, with the time (`performance.now()`) taken when the request came.
   */
  metrics?: {
    track(req: IncomingMessage, res: ServerResponse): void;
    served(req: IncomingMessage, res: ServerResponse, start: number): void;
  };
  logger: Logger;
}

const ALLOWED_METHODS = "GET, HEAD, PUT, PATCH, DELETE, OPTIONS";
const CORS_METHODS = "GET, PUT, PATCH, DELETE";
/** The request headers a preflight allows: a fixed list, never the client's own. */
const CORS_HEADERS = "accept, authorization, content-type, if-match, if-none-match, last-event-id";
export const DEFAULT_BODY_LIMIT = 16 * 1024 * 1024;
/** Largest request head (request line and headers), in bytes. */
export const MAX_HEADER_SIZE = 16 * 1024;
const DEFAULT_HEADERS_TIMEOUT_MS = 10_000;
const DEFAULT_BODY_IDLE_TIMEOUT_MS = 10_000;
const DEFAULT_RESPONSE_IDLE_TIMEOUT_MS = 30_000;
/** The whole request (head and body) must arrive within this time. */
const REQUEST_TIMEOUT_MS = 120_000;
/**
 * Answers with more entries than this are streamed (`streamAnswer`); smaller ones are sent whole,
 * with a Content-Length, and may be cached.
 */
export const STREAM_ENTRIES = 2048;
const CHALLENGE = 'Basic realm="zest", charset="UTF-8"';

/** The HTTP face of the router: one short pipeline, errors turned into responses in one place. */
export class RestServer {
  private readonly opts: Required<
    Pick<RestServerOptions, "session" | "codec" | "port" | "bodyLimit" | "permissions" | "cacheEntries" | "logger">
  > & { host: string | undefined };
  private readonly server: Server;
  private readonly sse: SseHub;
  private readonly cache: ReadCache | undefined;
  private readonly access: AccessControl;
  private readonly scheme: "http" | "https";
  private readonly allowedOrigins: ReadonlySet<string>;
  private readonly allowedHosts: ReadonlySet<string>;
  private readonly bodyWatch: BodyWatch;
  private readonly responseIdleMs: number;
  /** Connection caps (per client address and in all). */
  readonly connections: ConnectionGuard;
  private readonly metrics: RestServerOptions["metrics"];
  private readonly socketBytes = new SocketBytes();
  /** A stored sample's rendered single-key answer, kept while the storage holds the sample. */
  private readonly stored = new WeakMap<Sample, StoredAnswer>();
  /** Read-request paths → key expressions, for the cached-GET access check (emptied when full). */
  private readonly readKeys = new Map<string, string>();

  constructor(options: RestServerOptions) {
    // `??`, not a spread of defaults: an option given as `undefined` (unset in the config) must
    // still get its default.
    this.opts = {
      session: options.session,
      codec: options.codec,
      logger: options.logger,
      host: options.host,
      port: options.port ?? 8000,
      bodyLimit: options.bodyLimit ?? DEFAULT_BODY_LIMIT,
      permissions: options.permissions ?? DEFAULT_ADMIN_PERMISSIONS,
      cacheEntries: options.cacheEntries ?? 1024,
    };
    if (this.opts.cacheEntries > 0 && !options.session.interest.clustered)
      this.cache = new ReadCache(options.session.changes, this.opts.cacheEntries);
    this.access = options.access ?? AccessControl.OPEN;
    this.scheme = options.tls ? "https" : "http";
    this.allowedOrigins = new Set((options.allowedOrigins ?? []).map((o) => o.toLowerCase().replace(/\/$/, "")));
    this.allowedHosts = new Set((options.allowedHosts ?? []).map((h) => h.toLowerCase()));
    this.bodyWatch = new BodyWatch(options.bodyIdleTimeoutMs ?? DEFAULT_BODY_IDLE_TIMEOUT_MS);
    this.responseIdleMs = options.responseIdleTimeoutMs ?? DEFAULT_RESPONSE_IDLE_TIMEOUT_MS;
    this.sse = new SseHub(options.session, (s) => options.codec.sseEvent!(s), options.sse);
    const metrics = options.metrics;
    this.metrics = metrics;
    const onRequest = (req: IncomingMessage, res: ServerResponse): void => {
      const method = req.method;
      if (method === "PUT" || method === "PATCH" || method === "DELETE") {
        // Counted when answered (every write ends in `answered` or `writeFailed`), with no
        // listener on the response.
        this.write(req, res, method, metrics === undefined ? 0 : performance.now());
        return;
      }
      // The synchronous answers are counted at once: no listener on the response.
      const start = metrics === undefined ? 0 : performance.now();
      if (this.serveCached(req, res) || this.serveStored(req, res)) metrics?.served(req, res, start);
      else {
        metrics?.track(req, res);
        void this.handle(req, res);
      }
    };
    // Timeouts are checked every second (Node's default is every 30 s), so a head that is not
    // complete within headersTimeout is dropped within a second of it.
    const serverOptions = {
      maxHeaderSize: MAX_HEADER_SIZE,
      connectionsCheckingInterval: 1000,
      requestTimeout: REQUEST_TIMEOUT_MS,
      headersTimeout: options.headersTimeoutMs ?? DEFAULT_HEADERS_TIMEOUT_MS,
    };
    this.server = options.tls
      ? createHttpsServer({ ...serverOptions, cert: options.tls.cert, key: options.tls.key }, onRequest)
      : createServer(serverOptions, onRequest);
    this.server.keepAliveTimeout = 65_000;
    this.connections = new ConnectionGuard(
      connectionLimits({ perAddress: options.maxConnectionsPerAddress, total: options.maxConnections }),
    );
    this.connections.attach(this.server);
    this.socketBytes.attach(this.server, options.tls !== undefined);
  }

  /** Bytes written to clients so far (headers and SSE streams included), for the metrics. */
  get responseBytes(): number {
    return this.socketBytes.total();
  }

  /** Starts listening; rejects with a one-line reason when the port is taken. */
  listen(): Promise<AddressInfo> {
    return new Promise((resolve, reject) => {
      const onError = (err: NodeJS.ErrnoException): void => {
        const where = `${this.opts.host ?? "*"}:${this.opts.port}`;
        reject(
          new Error(
            err.code === "EADDRINUSE"
              ? `cannot listen on ${where}: the port is already in use`
              : `cannot listen on ${where}: ${err.message}`,
          ),
        );
      };
      this.server.once("error", onError);
      this.server.listen(this.opts.port, this.opts.host, () => {
        this.server.off("error", onError);
        resolve(this.server.address() as AddressInfo);
      });
    });
  }

  /** The bound address, once listening. */
  address(): AddressInfo | undefined {
    return (this.server.address() as AddressInfo | null) ?? undefined;
  }

  /** Number of live SSE streams. */
  get sseStreams(): number {
    return this.sse.size;
  }

  /** The SSE hub's counters, for the metrics. */
  get sseStatus(): { streams: number; logEntries: number } & Readonly<SseStats> {
    return { streams: this.sse.size, logEntries: this.sse.logSize, ...this.sse.stats };
  }

  /** Stops accepting requests and ends open streams. */
  async close(): Promise<void> {
    this.sse.close();
    this.cache?.close();
    this.bodyWatch.close();
    await new Promise<void>((resolve) => {
      this.server.close(() => resolve());
      this.server.closeAllConnections();
    });
  }

  /**
   * The fast path: a GET whose rendered response is cached and still valid is answered here,
   * synchronously, without a query. Returns false when the request needs the full pipeline.
   */
  private serveCached(req: IncomingMessage, res: ServerResponse): boolean {
    if (!this.cache) return false;
    const method = req.method;
    if (method !== "GET" && method !== "HEAD") return false;
    // A conditional GET may answer 304 or 412: the full pipeline decides.
    if (hasConditions(req.headers)) return false;
    const cacheKey = cacheKeyOf(method, req.url ?? "/", firstAccept(req.headers.accept));
    if (cacheKey === undefined) return false;
    const hit = this.cache.get(cacheKey);
    if (!hit) return false;
    // Under access control the cached (unfiltered) answer is served only to a client that may
    // read all of it; anyone else takes the full pipeline, which filters or refuses.
    if (this.access.enabled && !this.mayReadAll(req)) return false;
    if (req.headers.origin) {
      res.writeHead(200, { ...hit.headers, "access-control-allow-credentials": "false" });
    } else {
      res.writeHead(200, hit.headers);
    }
    res.end(method === "HEAD" ? undefined : hit.body);
    return true;
  }

  /**
   * The synchronous single-key path: a plain GET of one key, with no parameters, body or
   * conditions, held only by local storages that read synchronously (`readStored`), is answered
   * here, without a query, a promise or a slice. The answer is the one `handle` gives, byte for
   * byte. Returns false when the full pipeline must answer, errors included (it words them).
   */
  private serveStored(req: IncomingMessage, res: ServerResponse): boolean {
    const method = req.method;
    if (method !== "GET" && method !== "HEAD") return false;
    const { codec, session } = this.opts;
    const url = req.url;
    if (codec.renderNow === undefined || url === undefined || url.length < 2 || url.includes("?")) return false;
    const headers = req.headers;
    const accept = firstAccept(headers.accept);
    if (accept !== undefined && accept !== "*/*" && accept !== "application/json") return false;
    if (hasConditions(headers) || hasBody(headers)) return false;
    let key: string;
    try {
      key = codec.pathToKey(url, session.zid, false, session.keyExprLimits);
      if (isWild(key) || isAdmin(key)) return false;
      if (this.access.enabled) {
        const p = this.access.knownPrincipal(credentialsOf(req));
        if (p === undefined || this.access.decide(p, "query", key) !== "allow") return false;
      }
    } catch {
      return false;
    }
    let replies: Reply[] | undefined;
    try {
      replies = session.interest.readStored?.(key);
    } catch {
      return false; // a storage that cannot read now: the full pipeline words the failure
    }
    if (replies === undefined) return false;
    for (const r of replies) if (r.kind !== "ok") return false;
    // One stored sample (the common case): its answer is rendered once and kept with the sample,
    // which a storage hands out again until the key is written (docs/rest-gateway.md §A.4).
    const only = replies.length === 1 ? (replies[0] as Reply & { kind: "ok" }).sample : undefined;
    let answer = only && this.stored.get(only);
    if (answer === undefined) {
      const rendered = codec.renderNow(replies);
      const ts = codec.etags ? newestTimestamp(key, replies) : undefined;
      answer = { rendered, body: Buffer.from(rendered.body), etag: ts && etagOf(ts) };
      if (only !== undefined && only.key === key) this.stored.set(only, answer);
    }
    const { rendered, body, etag } = answer;
    if (this.cache !== undefined && cacheableReplies(replies)) {
      const cacheKey = cacheKeyOf(method, url, accept);
      if (cacheKey !== undefined) this.cache.set(cacheKey, cacheEntry(this.cache.version, key, rendered, body, etag));
    }
    send(res, method, withExpires(corsHeaders(req), key, replies), 200, rendered.contentType, body, etag);
    return true;
  }

  /** True when the client is known (credentials checked recently) and may read the whole of the GET's key. */
  private mayReadAll(req: IncomingMessage): boolean {
    try {
      const p = this.access.knownPrincipal(credentialsOf(req));
      if (p === undefined) return false; // the full pipeline checks the credentials and answers
      // Cached GETs have no query string: the URL is the path.
      const url = req.url ?? "/";
      let key = this.readKeys.get(url);
      if (key === undefined) {
        key = this.opts.codec.pathToKey(url, this.opts.session.zid, false);
        if (this.readKeys.size >= 4096) this.readKeys.clear();
        this.readKeys.set(url, key);
      }
      return this.access.decide(p, "query", key) === "allow";
    } catch {
      return false;
    }
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const cors = corsHeaders(req);
    try {
      const method = req.method ?? "GET";
      if (method === "OPTIONS") return this.preflight(req, res);
      let principal: Principal | undefined;
      if (this.access.enabled) {
        const p = this.access.authenticate(credentialsOf(req));
        principal = p instanceof Promise ? await p : p;
      }
      const url = req.url ?? "/";
      const q = url.indexOf("?");
      const path = q === -1 ? url : url.slice(0, q);
      const query = q === -1 ? "" : url.slice(q + 1);
      const { codec, session, permissions } = this.opts;
      switch (method) {
        case "GET":
        case "HEAD": {
          // The explorer page (docs/explorer.md): `/` for a browser, Variant A only.
          if (codec.variant === "a" && serveExplorer(req, res)) return;
          const accept = firstAccept(req.headers.accept);
          const html = accept === "text/html";
          const cacheKey = this.cache ? cacheKeyOf(method, url, accept) : undefined;
          const version = this.cache?.version ?? 0;
          const key = codec.pathToKey(path, session.zid, false, session.keyExprLimits);
          checkRead(permissions, key);
          const parameters = new Parameters(codec.parameters(query));
          const sse = accept === "text/event-stream" && codec.supportsSse && method === "GET";
          const decision =
            principal === undefined
              ? "allow"
              : this.access.decide(principal, sse ? "declare_subscriber" : "query", key);
          if (decision === "deny") throw this.access.refusal(principal!, `${sse ? "subscribe to" : "read"} ${key}`);
          if (sse) {
            // A partly readable subscription delivers only the samples whose keys the user may read.
            const filter = decision === "partial" ? this.keyFilter(principal!) : undefined;
            this.sse.open(key, res, cors, lastEventIdOf(req.headers["last-event-id"], parameters), filter);
            return;
          }
          // A malformed `_time` is the client's mistake, in either variant: a 400 here, before any
          // queryable runs (only storages read it, so it would otherwise be a 200 or an ERROR entry).
          parameters.timeRange();
          // A GET body is the query's payload, with its content type (docs/raw.md).
          const payload = hasBody(req.headers)
            ? await readBodyAsync(req, this.opts.bodyLimit, this.bodyWatch)
            : undefined;
          // A plain key with no parameters, held only by local storages that read synchronously, is
          // read straight from them (`readStored`): the same answer without building a query.
          // A wide one answered by one local storage alone is read in batches as it is written out.
          const reader = decision === "partial" ? principal : undefined;
          const scanned =
            payload === undefined
              ? await this.scanStored(key, parameters, req.headers.accept, html, reader)
              : undefined;
          let replies =
            scanned?.head ??
            ((query === "" && payload === undefined && session.interest.readStored?.(key)) ||
              (await session.get(
                { key, parameters },
                payload && { payload, encoding: codec.encodingFor(req.headers["content-type"]) },
              )));
          if (reader !== undefined && scanned === undefined)
            replies = replies.filter((r) => r.kind !== "ok" || this.access.mayRead(reader, "query", r.sample.key));
          const err = replies.find((r) => r.kind === "err");
          // The ETag of a single key (docs/rest-gateway.md §A.4); Variant B answers one only to
          // a client that sends condition headers, and keeps its 0.4 replies otherwise.
          const conditional = hasConditions(req.headers);
          const etag =
            !err && (codec.etags || conditional) && !parameters.has("_time")
              ? newestTimestamp(key, replies)
              : undefined;
          const etagHeader = etag && etagOf(etag);
          if (conditional && !isWild(key)) {
            const outcome = readPrecondition(etagHeader, req.headers["if-match"], req.headers["if-none-match"]);
            if (outcome === 304) {
              res.writeHead(304, etagHeader ? { ...cors, etag: etagHeader } : cors);
              res.end();
              return;
            }
            if (outcome === 412)
              throw new ZestError(
                "precondition_failed",
                etagHeader
                  ? `If-Match does not match the current ETag ${etagHeader}`
                  : `If-Match failed: ${key} holds nothing`,
              );
          }
          // A single key's deadline, when it has one (docs/ttl-and-leases.md).
          const answerCors = isWild(key) ? cors : withExpires(cors, key, replies);
          if (wantsRaw(parameters.get("_raw"), key, req.headers.accept)) {
            const raw = rawResponse(replies, key);
            return send(res, method, answerCors, 200, raw.contentType, raw.body, etagHeader);
          }
          const status = err && err.kind === "err" ? httpStatus(err.errorKind) : 200;
          const layout = await codec.layout(replies, html);
          // A large answer is streamed as it is rendered (never one big string), and not cached.
          if (layout.count > STREAM_ENTRIES || scanned?.rest !== undefined)
            return streamAnswer(res, method, cors, status, layout, etagHeader, this.responseIdleMs, scanned?.rest);
          const rendered = await renderLayout(layout);
          const body = Buffer.from(rendered.body);
          if (
            cacheKey !== undefined &&
            decision === "allow" &&
            cacheableReplies(replies) &&
            session.interest.storagesOnly(key)
          ) {
            this.cache!.set(cacheKey, cacheEntry(version, key, rendered, body, etagHeader));
          }
          return send(res, method, answerCors, status, rendered.contentType, body, etagHeader);
        }
        default:
          res.setHeader("allow", ALLOWED_METHODS);
          throw new ZestError("not_supported", `method ${method} is not supported: use GET, PUT, PATCH or DELETE`);
      }
    } catch (err) {
      this.sendError(req, res, cors, err);
    }
  }

  /**
   * A GET of a wild key expression that one local storage answers alone (`Router.scanStored`),
   * read in batches sorted by key: `head` holds the first entries, and `rest`, when there are
   * more than `STREAM_ENTRIES`, lays out each further batch only as the answer is written out,
   * so a wide answer is never held whole. `reader`: a user who may read part of the keys only.
   * Undefined when the GET runs a query instead (parameters a storage reads, `_raw`, a variant
   * that orders entries otherwise, several answerers).
   */
  private async scanStored(
    key: string,
    parameters: Parameters,
    accept: string | undefined,
    html: boolean,
    reader: Principal | undefined,
  ): Promise<Scanned | undefined> {
    const { codec, session } = this.opts;
    const layoutSamples = codec.layoutSamples;
    if (!layoutSamples || !isWild(key) || parameters.has("_time") || wantsRaw(parameters.get("_raw"), key, accept))
      return undefined;
    const batches = session.interest.scanStored?.(key);
    if (batches === undefined) return undefined;
    const it = batches[Symbol.asyncIterator]();
    const nextBatch = async (): Promise<readonly Sample[] | undefined> => {
      const next = await it.next();
      if (next.done) return undefined;
      return reader === undefined ? next.value : next.value.filter((s) => this.access.mayRead(reader, "query", s.key));
    };
    const head: Reply[] = [];
    try {
      while (head.length <= STREAM_ENTRIES) {
        const batch = await nextBatch();
        if (batch === undefined) return { head };
        for (const sample of batch) head.push(new OkReply(sample));
      }
    } catch (err) {
      stopIterator(it);
      throw err;
    }
    return {
      head,
      rest: {
        next: async () => {
          const batch = await nextBatch();
          return batch && layoutSamples.call(codec, batch, html);
        },
        release: () => stopIterator(it),
      },
    };
  }

  /** The filter of a partly readable SSE stream. */
  private keyFilter(principal: Principal): (key: string) => boolean {
    return (key) => this.access.mayRead(principal, "declare_subscriber", key);
  }

  /**
   * PUT, PATCH and DELETE, with callbacks rather than an async pipeline: writes are the hot path,
   * and the response goes out as soon as every storage has the sample.
   */
  private write(req: IncomingMessage, res: ServerResponse, method: "PUT" | "PATCH" | "DELETE", begun: number): void {
    const { codec, session, permissions } = this.opts;
    const cors = writeCorsHeaders(req, codec);
    const url = req.url ?? "/";
    const q = url.indexOf("?");
    let key: string;
    let principal: Principal | Promise<Principal> | undefined;
    let lifetime: WriteLifetime | undefined;
    try {
      const origin = req.headers.origin;
      if (
        origin !== undefined &&
        !originAllowed(origin, req.headers.host, this.scheme, this.allowedOrigins, this.allowedHosts)
      ) {
        throw ZestError.forbidden(
          `writes from pages on ${origin.slice(0, 200)} are refused: add the origin to plugins.rest.cors.allowed_origins`,
        );
      }
      const path = q === -1 ? url : url.slice(0, q);
      key = codec.pathToKey(path, session.zid, true, session.keyExprLimits);
      // `?_ttl=` and `?_lease=` (docs/ttl-and-leases.md); other parameters of a write are ignored.
      if (q !== -1) lifetime = writeLifetime(method, codec.parameters(url.slice(q + 1)));
      if (isAdmin(key)) {
        checkWrite(permissions, key, req);
        // A page that rebinds its own domain name to this router's address passes every
        // same-origin check; it cannot make the Host header name the router.
        if (!isAllowedHost(req.headers.host, this.allowedHosts)) {
          throw ZestError.forbidden(
            `admin writes need a Host header naming this router (an IP address, localhost, or a name in plugins.rest.allowed_hosts), not ${JSON.stringify((req.headers.host ?? "").slice(0, 200))}`,
          );
        }
      }
      if (this.access.enabled) principal = this.access.authenticate(credentialsOf(req));
    } catch (err) {
      this.writeFailed(req, res, cors, err, begun);
      return;
    }
    if (principal instanceof Promise) {
      principal.then(
        (p) => this.writeAllowed(req, res, method, key, cors, p, begun, lifetime),
        (err: unknown) => this.writeFailed(req, res, cors, err, begun),
      );
    } else this.writeAllowed(req, res, method, key, cors, principal, begun, lifetime);
  }

  /** Counts a write's answer, just ended. */
  private answered(req: IncomingMessage, res: ServerResponse, begun: number): void {
    this.metrics?.served(req, res, begun);
  }

  /** Answers a write with its error, and counts it. */
  private writeFailed(
    req: IncomingMessage,
    res: ServerResponse,
    cors: Record<string, string>,
    err: unknown,
    begun: number,
  ): void {
    this.sendError(req, res, cors, err);
    this.answered(req, res, begun);
  }

  /** The rest of a write, once the client is known: the access decision, then the body. */
  private writeAllowed(
    req: IncomingMessage,
    res: ServerResponse,
    method: "PUT" | "PATCH" | "DELETE",
    key: string,
    cors: Readonly<Record<string, string>>,
    principal: Principal | undefined,
    begun: number,
    lifetime: WriteLifetime | undefined,
  ): void {
    const { codec, session } = this.opts;
    let precondition: WritePrecondition | undefined;
    try {
      if (principal !== undefined) {
        const message = method === "DELETE" ? "delete" : "put";
        const decision = this.access.decide(principal, message, key);
        // A write that reaches outside the user's rules is refused whole: nothing is written.
        if (decision !== "allow")
          throw this.access.refusal(
            principal,
            `${message} ${key}${decision === "partial" ? " (it reaches keys outside the allowed ones)" : ""}`,
          );
      }
      // Decisions §3, never a silent 200: an admin write nobody takes (a typo in the path, a
      // router that does not exist) is refused. Another router's admin space, reached through
      // the fabric, takes writes to its own `@/router/<zid>/...`.
      if (isAdmin(key) && !session.interest.hasSubscriber(key)) {
        const path = (req.url ?? "/").split("?")[0]!;
        throw ZestError.notFound(
          `no admin key takes writes at ${path}: storages are configured under ${codec.adminConfigPath(session.zid)}`,
        );
      }
      // The condition comes after the access decision: a refused client learns nothing of the key.
      precondition = writePrecondition(method, key, req.headers["if-match"], req.headers["if-none-match"]);
    } catch (err) {
      this.writeFailed(req, res, cors, err, begun);
      return;
    }
    readBody(req, this.opts.bodyLimit, this.bodyWatch, (err, body) => {
      if (err) {
        this.writeFailed(req, res, cors, err, begun);
        return;
      }
      if (precondition) {
        this.conditionalWrite(
          method,
          key,
          body!,
          req.headers["content-type"],
          precondition,
          lifetime,
          (etag) => {
            res.writeHead(
              codec.writeStatus,
              etag === undefined
                ? { ...cors, "content-length": 0 }
                : cors === CORS_ORIGIN
                  ? { ...cors, "content-length": 0, etag, "access-control-expose-headers": "ETag" }
                  : { ...cors, "content-length": 0, etag },
            );
            res.end();
            this.answered(req, res, begun);
          },
          (e: unknown) => this.writeFailed(req, res, cors, e, begun),
        );
        return;
      }
      const done =
        method === "DELETE"
          ? session.delete(key)
          : lifetime === undefined
            ? session.put(key, body!, { encoding: codec.encodingFor(req.headers["content-type"]) })
            : session.put(key, body!, {
                encoding: codec.encodingFor(req.headers["content-type"]),
                ttl: lifetime.ttl,
                lease: lifetime.lease,
              });
      const answer = (): void => {
        res.writeHead(
          codec.writeStatus,
          cors === CORS_PLAIN
            ? WRITE_HEADERS
            : cors === NO_CORS
              ? WRITE_HEADERS_NO_CORS
              : { ...cors, "content-length": 0 },
        );
        res.end();
        this.answered(req, res, begun);
      };
      // Every storage took the write synchronously (the memory volume): answer now, not a microtask later.
      if (done === SETTLED) answer();
      else done.then(answer, (e: unknown) => this.writeFailed(req, res, cors, e, begun));
    });
  }

  /**
   * A write with condition headers (docs/rest-gateway.md §A.4); `done` gets the new ETag (none
   * for a DELETE: a deleted key has no representation), `failed` the refusal. One ETag is checked
   * by the storages with the write. A list of ETags, or `*`, reads the key's version first and
   * writes on that version; a writer that got in between makes it read again (three tries).
   */
  private conditionalWrite(
    method: "PUT" | "PATCH" | "DELETE",
    key: string,
    body: Buffer,
    contentType: string | undefined,
    precondition: WritePrecondition,
    lifetime: WriteLifetime | undefined,
    done: (etag: string | undefined) => void,
    failed: (err: unknown) => void,
  ): void {
    if (precondition.kind === "oneOf") {
      this.writeOnReadVersion(method, key, body, contentType, precondition.versions, lifetime).then(done, failed);
      return;
    }
    const timestamp = this.opts.session.clock.newTimestamp();
    const etag = method === "DELETE" ? undefined : etagOf(timestamp);
    const written = this.writeOnce(
      method,
      key,
      body,
      contentType,
      precondition.kind === "version" ? { ifVersion: precondition.version } : IF_ABSENT,
      timestamp,
      lifetime,
    );
    if (written === SETTLED) done(etag);
    else written.then(() => done(etag), failed);
  }

  /** One write on `condition`, stamped `timestamp`, checked by the storages. */
  private writeOnce(
    method: "PUT" | "PATCH" | "DELETE",
    key: string,
    body: Buffer,
    contentType: string | undefined,
    condition: ConditionOptions,
    timestamp: Timestamp,
    lifetime?: WriteLifetime,
  ): Promise<void> {
    const { codec, session } = this.opts;
    const { ifVersion, ifAbsent } = condition;
    if (method === "DELETE") return session.delete(key, { ifVersion, ifAbsent, timestamp });
    return session.put(key, body, {
      ifVersion,
      ifAbsent,
      timestamp,
      encoding: codec.encodingFor(contentType),
      ttl: lifetime?.ttl,
      lease: lifetime?.lease,
    });
  }

  /** `If-Match: *` or a list: reads the key's version, then writes on it (three tries). */
  private async writeOnReadVersion(
    method: "PUT" | "PATCH" | "DELETE",
    key: string,
    body: Buffer,
    contentType: string | undefined,
    versions: ReadonlySet<string> | "any",
    lifetime: WriteLifetime | undefined,
  ): Promise<string | undefined> {
    for (let attempt = 1; ; attempt++) {
      const current = newestTimestamp(key, await this.opts.session.get(key))?.encode();
      if (current === undefined)
        throw new ZestError(
          "precondition_failed",
          `write condition failed: If-Match needs a value, and ${key} holds nothing`,
        );
      if (versions !== "any" && !versions.has(current))
        throw new ZestError("precondition_failed", "write condition failed: the key holds another version");
      try {
        const timestamp = this.opts.session.clock.newTimestamp();
        await this.writeOnce(method, key, body, contentType, { ifVersion: current }, timestamp, lifetime);
        return method === "DELETE" ? undefined : etagOf(timestamp);
      } catch (err) {
        // A writer got in between the read and the write: read again.
        if (attempt >= 3 || toZestError(err).kind !== "precondition_failed") throw err;
      }
    }
  }

  /** CORS preflight: only allowed origins are reflected, with a fixed list of headers. */
  private preflight(req: IncomingMessage, res: ServerResponse): void {
    const origin = req.headers.origin;
    const headers: Record<string, string | number> = { allow: ALLOWED_METHODS, "content-length": 0, vary: "Origin" };
    if (
      origin !== undefined &&
      originAllowed(origin, req.headers.host, this.scheme, this.allowedOrigins, this.allowedHosts)
    ) {
      headers["access-control-allow-origin"] = origin;
      headers["access-control-allow-methods"] = CORS_METHODS;
      headers["access-control-allow-headers"] = CORS_HEADERS;
      headers["access-control-max-age"] = 600;
      headers["access-control-allow-credentials"] = "false";
    } else if (origin !== undefined) {
      // Reads need no preflight; this lets a page on any origin send the headers a read may carry.
      headers["access-control-allow-origin"] = "*";
      headers["access-control-allow-methods"] = "GET";
      headers["access-control-allow-headers"] = "accept, last-event-id";
    }
    res.writeHead(204, headers);
    res.end();
  }

  private sendError(req: IncomingMessage, res: ServerResponse, cors: Record<string, string>, err: unknown): void {
    const e = toZestError(err);
    const status = httpStatus(e.kind);
    if (status >= 500)
      this.opts.logger.warn({ method: req.method, url: req.url, status, err: errorMessage(e) }, "request failed");
    if (res.headersSent) {
      res.destroy();
      return;
    }
    const body = `${errorMessage(e)}\n`;
    const headers: Record<string, string | number> = {
      ...cors,
      "content-type": "text/plain; charset=utf-8",
      "content-length": Buffer.byteLength(body),
    };
    if (e.kind === "unauthenticated") headers["www-authenticate"] = CHALLENGE;
    // An unread (or too large) body cannot be skipped safely: close the connection after answering.
    if (!req.complete) headers.connection = "close";
    res.writeHead(status, headers);
    res.end(body, () => {
      if (!req.complete) req.destroy();
    });
  }
}

function send(
  res: ServerResponse,
  method: string,
  cors: Record<string, string>,
  status: number,
  contentType: string | undefined,
  body: Buffer,
  etag?: string,
): void {
  const headers = answerHeaders(cors, contentType, etag);
  headers["content-length"] = body.length;
  res.writeHead(status, headers);
  res.end(method === "HEAD" ? undefined : body);
}

/** The headers of a GET answer (without its length): CORS, content type, ETag. */
function answerHeaders(
  cors: Record<string, string>,
  contentType: string | undefined,
  etag: string | undefined,
): Record<string, string | number> {
  const headers: Record<string, string | number> = { ...cors };
  if (contentType) headers["content-type"] = contentType;
  if (etag) {
    headers.etag = etag;
    // A page on another origin may read the ETag, to send it back in If-Match.
    if (cors !== CORS_PLAIN) headers["access-control-expose-headers"] = "ETag";
  }
  return headers;
}

/**
 * A large GET answer, streamed: the status and headers (decided from the replies, as for
 * `send`) go out first, with chunked transfer encoding instead of a Content-Length, then the body
 * in chunks rendered as the client takes them (`streamLayout`). A client that goes away stops the
 * rendering. HEAD sends the headers only.
 */
async function streamAnswer(
  res: ServerResponse,
  method: string,
  cors: Record<string, string>,
  status: number,
  layout: Layout,
  etag: string | undefined,
  idleMs: number,
  rest?: ScannedRest,
): Promise<void> {
  try {
    res.writeHead(status, answerHeaders(cors, layout.contentType, etag));
    if (method === "HEAD") {
      res.end();
      return;
    }
    // A client that stops reading holds the replies and a chunk: after `idleMs` it is dropped.
    const whole = rest ? await streamLayouts(layout, rest.next, res, idleMs) : await streamLayout(layout, res, idleMs);
    if (whole) res.end();
    else res.destroy();
  } catch {
    // Past the headers there is no status left to answer with: cut the response short, so the
    // client sees a truncated body rather than a complete-looking one.
    res.destroy();
  } finally {
    rest?.release();
  }
}

/** Ends an iteration early; what the iterator's own cleanup throws is of no use to anyone here. */
function stopIterator(it: AsyncIterator<unknown>): void {
  it.return?.().catch(() => {});
}

/** The first entries of a GET answered by one storage's scan (`RestServer.scanStored`), and the rest. */
interface Scanned {
  readonly head: Reply[];
  /** Absent when `head` is the whole answer. */
  readonly rest?: ScannedRest;
}

/** The batches of a scan still to write out after its head, laid out one by one. */
interface ScannedRest {
  /** The next batch's layout, or undefined at the end. */
  next(): Promise<Layout | undefined>;
  /** Stops the scan (called once the answer is written, or cut). */
  release(): void;
}

/** What `serveStored` sends for one stored sample. */
interface StoredAnswer {
  readonly rendered: Rendered;
  readonly body: Buffer;
  readonly etag: string | undefined;
}

/** A read-cache entry: the response as `send` writes it to a client without an Origin. */
function cacheEntry(
  version: number,
  keyExpr: string,
  rendered: Rendered,
  body: Buffer,
  etag: string | undefined,
): CachedResponse {
  const headers: Record<string, string | number> = {
    "access-control-allow-origin": "*",
    "content-length": body.length,
  };
  if (rendered.contentType) headers["content-type"] = rendered.contentType;
  if (etag) headers.etag = etag;
  return { version, keyExpr, headers, body };
}

/**
 * The cache key of a GET: representation and path. Requests with parameters (which may hold
 * `now()`) and SSE subscriptions are never cached.
 */
function cacheKeyOf(_method: string, url: string, accept: string | undefined): string | undefined {
  if (url.includes("?") || accept === "text/event-stream") return undefined;
  // A URL starts with `/`, so the JSON key (the URL itself: no string built per request) never
  // meets an HTML one.
  return accept === "text/html" ? `h${url}` : url;
}

/** The first media type of an `Accept` header, without parameters. */
function firstAccept(accept: string | undefined): string | undefined {
  if (!accept) return undefined;
  let end = accept.length;
  const semi = accept.indexOf(";");
  const comma = accept.indexOf(",");
  if (semi !== -1) end = semi;
  if (comma !== -1 && comma < end) end = comma;
  return accept.slice(0, end).trim().toLowerCase();
}

const CORS_PLAIN: Readonly<Record<string, string>> = Object.freeze({ "access-control-allow-origin": "*" });
const CORS_ORIGIN: Readonly<Record<string, string>> = Object.freeze({
  "access-control-allow-origin": "*",
  "access-control-allow-credentials": "false",
});

const IF_ABSENT: ConditionOptions = Object.freeze({ ifAbsent: true });

const WRITE_HEADERS: Readonly<Record<string, string | number>> = Object.freeze({ ...CORS_PLAIN, "content-length": 0 });
/** A request with no `Origin` is no CORS request: Variant A's write answers then carry no CORS headers. */
const NO_CORS: Readonly<Record<string, string>> = Object.freeze({});
const WRITE_HEADERS_NO_CORS: Readonly<Record<string, string | number>> = Object.freeze({ "content-length": 0 });

/** Every response may be read cross-origin; the data carries no credentials. */
function corsHeaders(req: IncomingMessage): Readonly<Record<string, string>> {
  return req.headers.origin ? CORS_ORIGIN : CORS_PLAIN;
}

/**
 * The CORS headers of a write's answer, refusals included: a request with no `Origin` is no CORS
 * request, and Variant A then answers none, as zenoh 0.6's CORS middleware did; Variant B keeps
 * 0.4's header on every write (docs/rest-gateway.md §A.4, §B.4).
 */
function writeCorsHeaders(req: IncomingMessage, codec: RestCodec): Readonly<Record<string, string>> {
  return req.headers.origin ? CORS_ORIGIN : codec.corsOnEveryWrite ? CORS_PLAIN : NO_CORS;
}

/** What the access control needs to know about a request's client. */
function credentialsOf(req: IncomingMessage): { authorization: string | undefined; address: string } {
  return { authorization: req.headers.authorization, address: req.socket.remoteAddress ?? "" };
}

/**
 * A refused body up to this size is still read (and dropped) before the 413 is sent: closing a
 * connection on a client that is still sending resets it, and the client may lose the answer.
 */
const DRAIN_LIMIT = 64 * 1024 * 1024;
/** How long a refused body may take to drain before the connection is closed anyway. */
const DRAIN_TIMEOUT_MS = 10_000;

/**
 * Drops the connection of a request whose body receives no byte for a while (the client is
 * stalled; there is nobody to answer). Almost every body is complete by the end of the event
 * loop turn in which its request arrived, so a write costs one array push: once per turn the
 * requests still incomplete are handed to a per-period sweep, which compares their socket byte
 * counts. Nothing is held past the turn (held requests would age into the old generation and
 * make garbage collection dearer), and there is no timer per request.
 */
class BodyWatch {
  private pending: IncomingMessage[] = [];
  private scheduled = false;
  /** Slow bodies: socket bytes read at the last sweep, and the tick they last changed. */
  private readonly slow = new Map<IncomingMessage, { bytes: number; since: number }>();
  private tick = 0;
  private readonly idleTicks: number;
  private readonly timer: NodeJS.Timeout;

  constructor(idleMs: number) {
    const period = Math.min(1000, Math.max(50, Math.floor(idleMs / 4)));
    this.idleTicks = Math.ceil(idleMs / period);
    this.timer = setInterval(() => this.sweep(), period);
    this.timer.unref();
  }

  /** Watches `req` until its body is complete. */
  add(req: IncomingMessage): void {
    this.pending.push(req);
    if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(this.flush);
    }
  }

  private readonly flush = (): void => {
    this.scheduled = false;
    for (const req of this.pending) {
      if (!req.complete && !req.destroyed) this.slow.set(req, { bytes: req.socket.bytesRead, since: this.tick });
    }
    this.pending = [];
  };

  private sweep(): void {
    const now = ++this.tick;
    for (const [req, w] of this.slow) {
      if (req.complete || req.destroyed) this.slow.delete(req);
      else if (req.socket.bytesRead !== w.bytes) {
        w.bytes = req.socket.bytesRead;
        w.since = now;
      } else if (now - w.since > this.idleTicks) {
        this.slow.delete(req);
        req.socket.destroy();
      }
    }
  }

  close(): void {
    clearInterval(this.timer);
    this.pending = [];
    this.slow.clear();
  }
}

/**
 * Reads the whole body, refusing (413) more than `limit` bytes before buffering them. Calls `done`
 * once. While the body is read, `watch` drops the connection if it stalls.
 */
function readBody(
  req: IncomingMessage,
  limit: number,
  watch: BodyWatch,
  done: (err: ZestError | undefined, body?: Buffer) => void,
): void {
  if (!req.complete) watch.add(req);
  readBodyNow(req, limit, done);
}

function readBodyAsync(req: IncomingMessage, limit: number, watch: BodyWatch): Promise<Buffer> {
  return new Promise((resolve, reject) =>
    readBody(req, limit, watch, (err, body) => (err ? reject(err) : resolve(body!))),
  );
}

function readBodyNow(
  req: IncomingMessage,
  limit: number,
  done: (err: ZestError | undefined, body?: Buffer) => void,
): void {
  const declared = Number(req.headers["content-length"] ?? 0);
  const chunks: Buffer[] = [];
  let size = 0;
  let settled = false;
  const finish = (err: ZestError | undefined, body?: Buffer): void => {
    if (settled) return;
    settled = true;
    done(err, body);
  };
  const refuse = (err: ZestError): void => {
    settled = true; // the end of the body no longer resolves; only `answer` calls `done`
    req.off("data", onData);
    if (declared > DRAIN_LIMIT || size > DRAIN_LIMIT) {
      req.pause();
      done(err);
      return;
    }
    let drained = size;
    let answered = false;
    const answer = (): void => {
      if (answered) return;
      answered = true;
      clearTimeout(timer);
      done(err);
    };
    const timer = setTimeout(answer, DRAIN_TIMEOUT_MS);
    req.on("data", (c: Buffer) => {
      drained += c.length;
      if (drained > DRAIN_LIMIT) {
        req.pause();
        answer();
      }
    });
    req.once("end", answer);
    req.once("error", answer);
    req.resume();
  };
  const onData = (c: Buffer): void => {
    size += c.length;
    if (size > limit) {
      refuse(ZestError.tooLarge(`request body exceeds the limit of ${limit} bytes`));
      return;
    }
    chunks.push(c);
  };
  if (declared > limit) {
    refuse(ZestError.tooLarge(`request body of ${declared} bytes exceeds the limit of ${limit} bytes`));
    return;
  }
  req.on("data", onData);
  // `on`, not `once`: `finish` runs its callback once anyway, and once-wrappers cost on every request.
  req.on("end", () => finish(undefined, chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks)));
  req.on("error", (err) => finish(ZestError.badRequest(`could not read the request body: ${err.message}`)));
}
