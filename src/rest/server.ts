import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { errorMessage, toZestError, ZestError } from "../core/errors.js";
import type { Logger } from "../core/log.js";
import { Parameters } from "../core/selector.js";
import type { Session } from "../core/session.js";
import { checkRead, checkWrite, DEFAULT_ADMIN_PERMISSIONS, isAdmin, type AdminPermissions } from "./access.js";
import type { RestCodec } from "./codec.js";
import { httpStatus } from "./http-status.js";
import { cacheableReplies, ReadCache } from "./read-cache.js";
import { serveExplorer } from "./explorer/index.js";
import { SseHub } from "./sse.js";

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
  logger: Logger;
}

const ALLOWED_METHODS = "GET, HEAD, PUT, PATCH, DELETE, OPTIONS";
const CORS_METHODS = "GET, PUT, PATCH, DELETE";
export const DEFAULT_BODY_LIMIT = 16 * 1024 * 1024;

/** The HTTP face of the router: one short pipeline, errors turned into responses in one place. */
export class RestServer {
  private readonly opts: Required<Omit<RestServerOptions, "host">> & { host: string | undefined };
  private readonly server: Server;
  private readonly sse = new SseHub();
  private readonly cache: ReadCache | undefined;

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
    if (this.opts.cacheEntries > 0 && options.session.router.fabric === undefined) this.cache = new ReadCache(this.opts.cacheEntries);
    this.server = createServer((req, res) => {
      const method = req.method;
      if (method === "PUT" || method === "PATCH" || method === "DELETE") this.write(req, res, method);
      else if (!this.serveCached(req, res)) void this.handle(req, res);
    });
    this.server.keepAliveTimeout = 65_000;
  }

  /** Starts listening; rejects with a one-line reason when the port is taken. */
  listen(): Promise<AddressInfo> {
    return new Promise((resolve, reject) => {
      const onError = (err: NodeJS.ErrnoException): void => {
        const where = `${this.opts.host ?? "*"}:${this.opts.port}`;
        reject(new Error(err.code === "EADDRINUSE" ? `cannot listen on ${where}: the port is already in use` : `cannot listen on ${where}: ${err.message}`));
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

  /** Stops accepting requests and ends open streams. */
  async close(): Promise<void> {
    this.sse.close();
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
    const cacheKey = cacheKeyOf(method, req.url ?? "/", firstAccept(req.headers.accept));
    if (cacheKey === undefined) return false;
    const hit = this.cache.get(cacheKey, this.opts.session.router.dataVersion);
    if (!hit) return false;
    if (req.headers.origin) {
      res.writeHead(200, { ...hit.headers, "access-control-allow-credentials": "false" });
    } else {
      res.writeHead(200, hit.headers);
    }
    res.end(method === "HEAD" ? undefined : hit.body);
    return true;
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const cors = corsHeaders(req);
    try {
      const method = req.method ?? "GET";
      if (method === "OPTIONS") return preflight(req, res);
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
          const version = session.router.dataVersion;
          const key = codec.pathToKey(path, session.zid, false);
          checkRead(permissions, key);
          if (accept === "text/event-stream" && codec.supportsSse && method === "GET") {
            this.sse.open(session, key, res, cors, (s) => codec.sseEvent!(s));
            return;
          }
          const parameters = new Parameters(codec.parameters(query));
          // A malformed `_time` is the client's mistake, in either variant: a 400 here, before any
          // queryable runs (only storages read it, so it would otherwise be a 200 or an ERROR entry).
          parameters.timeRange();
          const replies = await session.get({ key, parameters });
          const rendered = codec.render(replies, html);
          const body = Buffer.from(rendered.body);
          const err = replies.find((r) => r.kind === "err");
          if (cacheKey !== undefined && cacheableReplies(replies) && session.router.storagesOnly(key)) {
            const headers: Record<string, string | number> = { "access-control-allow-origin": "*", "content-length": body.length };
            if (rendered.contentType) headers["content-type"] = rendered.contentType;
            this.cache!.set(cacheKey, { version, headers, body });
          }
          return send(res, method, cors, err && err.kind === "err" ? httpStatus(err.errorKind) : 200, rendered.contentType, body);
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
   * PUT, PATCH and DELETE, with callbacks rather than an async pipeline: writes are the hot path,
   * and the response goes out as soon as every storage has the sample.
   */
  private write(req: IncomingMessage, res: ServerResponse, method: "PUT" | "PATCH" | "DELETE"): void {
    const cors = corsHeaders(req);
    const { codec, session, permissions } = this.opts;
    const url = req.url ?? "/";
    const q = url.indexOf("?");
    let key: string;
    try {
      const path = q === -1 ? url : url.slice(0, q);
      key = codec.pathToKey(path, session.zid, true);
      checkWrite(permissions, key, req);
      // Decisions §3, never a silent 200: an admin write nobody takes (a typo in the path, a
      // router that does not exist) is refused. Another router's admin space, reached through
      // the fabric, takes writes to its own `@/router/<zid>/...`.
      if (isAdmin(key) && !session.router.hasSubscriber(key)) {
        throw ZestError.notFound(`no admin key takes writes at ${path}: storages are configured under ${codec.adminConfigPath(session.zid)}`);
      }
    } catch (err) {
      this.sendError(req, res, cors, err);
      return;
    }
    readBody(req, this.opts.bodyLimit, (err, body) => {
      if (err) {
        this.sendError(req, res, cors, err);
        return;
      }
      const done = method === "DELETE" ? session.delete(key) : session.put(key, body!, { encoding: codec.encodingFor(req.headers["content-type"]) });
      done.then(
        () => {
          res.writeHead(codec.writeStatus, cors === CORS_PLAIN ? WRITE_HEADERS : { ...cors, "content-length": 0 });
          res.end();
        },
        (e: unknown) => this.sendError(req, res, cors, e),
      );
    });
  }

  private sendError(req: IncomingMessage, res: ServerResponse, cors: Record<string, string>, err: unknown): void {
    const e = toZestError(err);
    const status = httpStatus(e.kind);
    if (status >= 500) this.opts.logger.warn({ method: req.method, url: req.url, status, err: errorMessage(e) }, "request failed");
    if (res.headersSent) {
      res.destroy();
      return;
    }
    const body = `${errorMessage(e)}\n`;
    const headers: Record<string, string | number> = { ...cors, "content-type": "text/plain; charset=utf-8", "content-length": Buffer.byteLength(body) };
    // An unread (or too large) body cannot be skipped safely: close the connection after answering.
    if (!req.complete) headers.connection = "close";
    res.writeHead(status, headers);
    res.end(body, () => {
      if (!req.complete) req.destroy();
    });
  }
}

function send(res: ServerResponse, method: string, cors: Record<string, string>, status: number, contentType: string | undefined, body: Buffer): void {
  const headers: Record<string, string | number> = { ...cors, "content-length": body.length };
  if (contentType) headers["content-type"] = contentType;
  res.writeHead(status, headers);
  res.end(method === "HEAD" ? undefined : body);
}

/**
 * The cache key of a GET: representation and path. Requests with parameters (which may hold
 * `now()`) and SSE subscriptions are never cached.
 */
function cacheKeyOf(method: string, url: string, accept: string | undefined): string | undefined {
  if (url.includes("?") || accept === "text/event-stream") return undefined;
  return accept === "text/html" ? `h${url}` : `j${url}`;
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
const CORS_ORIGIN: Readonly<Record<string, string>> = Object.freeze({ "access-control-allow-origin": "*", "access-control-allow-credentials": "false" });

const WRITE_HEADERS: Readonly<Record<string, string | number>> = Object.freeze({ ...CORS_PLAIN, "content-length": 0 });

/** Every response may be read cross-origin; the data carries no credentials. */
function corsHeaders(req: IncomingMessage): Readonly<Record<string, string>> {
  return req.headers.origin ? CORS_ORIGIN : CORS_PLAIN;
}

function preflight(req: IncomingMessage, res: ServerResponse): void {
  const origin = req.headers.origin;
  const headers: Record<string, string | number> = { allow: ALLOWED_METHODS, "content-length": 0 };
  if (origin) {
    headers["access-control-allow-origin"] = origin;
    headers["access-control-allow-methods"] = CORS_METHODS;
    headers["access-control-allow-headers"] = req.headers["access-control-request-headers"] ?? "*";
    headers["access-control-max-age"] = 86400;
    headers["access-control-allow-credentials"] = "false";
    headers.vary = "Origin";
  }
  res.writeHead(204, headers);
  res.end();
}

/**
 * A refused body up to this size is still read (and dropped) before the 413 is sent: closing a
 * connection on a client that is still sending resets it, and the client may lose the answer.
 */
const DRAIN_LIMIT = 64 * 1024 * 1024;
/** How long a refused body may take to drain before the connection is closed anyway. */
const DRAIN_TIMEOUT_MS = 10_000;

/** Reads the whole body, refusing (413) more than `limit` bytes before buffering them. Calls `done` once. */
function readBody(req: IncomingMessage, limit: number, done: (err: ZestError | undefined, body?: Buffer) => void): void {
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
