/**
 * The REST gateway's server (docs/rest-gateway.md): its lifecycle (HTTP or HTTPS, connection
 * caps, byte counting, listening and closing) and the first step of every request, which hands
 * it to the write path or the read paths (`write-path.ts`, `read-path.ts`).
 */
import type { Buffer } from "node:buffer";
import { performance } from "node:perf_hooks";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { createServer as createH2cServer, createSecureServer } from "node:http2";
import { createServer as createHttpsServer } from "node:https";
import type { AddressInfo, Socket } from "node:net";
import { AccessControl } from "../access/access.js";
import { ConnectionGuard, connectionLimits } from "../access/connections.js";
import type { Logger } from "../core/log.js";
import type { Session } from "../core/session.js";
import { type AdminPermissions, DEFAULT_ADMIN_PERMISSIONS } from "../access/admin-permissions.js";
import { listen } from "../access/listen.js";
import { BodyWatch } from "./body.js";
import type { RestCodec } from "./codec.js";
import { originPolicy } from "./cors.js";
import { closeIdleSessions } from "./h2-idle.js";
import { H2cHandOver } from "./h2c.js";
import { DEFAULT_LONG_POLL, LongPollHub, type LongPollLimits, type LongPollStats } from "./long-poll.js";
import { ReadPath } from "./read-path.js";
import { ReadCache } from "./read-cache.js";
import { SocketBytes } from "./socket-bytes.js";
import { SseHub, type SseOptions, type SseStats } from "./sse.js";
import { WritePath } from "./write-path.js";
import {
  DEFAULT_BODY_IDLE_TIMEOUT_MS,
  DEFAULT_BODY_LIMIT,
  DEFAULT_CACHE_ENTRIES,
  DEFAULT_HEADERS_TIMEOUT_MS,
  DEFAULT_HTTP2,
  DEFAULT_RESPONSE_IDLE_TIMEOUT_MS,
  KEEP_ALIVE_TIMEOUT_MS,
  REQUEST_TIMEOUT_MS,
} from "./schema.js";

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
  /**
   * HTTP/2 on the TLS port through ALPN, and with prior knowledge (h2c) on the plain port,
   * HTTP/1.1 still served (docs/http2.md). On by default; `maxConcurrentStreams` per connection
   * (256), `maxSessionMemoryMb` (10).
   */
  http2?: { enabled?: boolean; maxConcurrentStreams?: number; maxSessionMemoryMb?: number; idleTimeoutMs?: number };
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
  /** Long-poll bounds (docs/long-poll.md); each has a default. */
  longPoll?: Partial<LongPollLimits>;
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

export { DEFAULT_BODY_LIMIT } from "./schema.js";
/** Largest request head (request line and headers), in bytes. */
export const MAX_HEADER_SIZE = 16 * 1024;

/** The HTTP face of the router: one short pipeline, errors turned into responses in one place. */
export class RestServer {
  private readonly opts: { port: number; host: string | undefined };
  private readonly server: Server;
  private readonly sse: SseHub;
  private readonly polls: LongPollHub;
  private readonly cache: ReadCache | undefined;
  private readonly bodyWatch: BodyWatch;
  /** Connection caps (per client address and in all). */
  readonly connections: ConnectionGuard;
  /** The open sockets of an HTTP/2 server, which cannot close them itself (see `close`). */
  private readonly h2Sockets: Set<Socket> | undefined;
  private readonly socketBytes = new SocketBytes();
  /** HTTP/2 with prior knowledge on the plain port (absent on the TLS port, or when off). */
  private readonly h2c: H2cHandOver | undefined;

  constructor(options: RestServerOptions) {
    // `??`, not a spread of defaults: an option given as `undefined` (unset in the config) must
    // still get its default.
    this.opts = { host: options.host, port: options.port ?? 8000 };
    const { session, codec, logger } = options;
    const cacheEntries = options.cacheEntries ?? DEFAULT_CACHE_ENTRIES;
    if (cacheEntries > 0 && !session.interest.clustered) this.cache = new ReadCache(session.changes, cacheEntries);
    const access = options.access ?? AccessControl.OPEN;
    const permissions = options.permissions ?? DEFAULT_ADMIN_PERMISSIONS;
    const bodyLimit = options.bodyLimit ?? DEFAULT_BODY_LIMIT;
    const origins = originPolicy(options.tls ? "https" : "http", options.allowedOrigins, options.allowedHosts);
    this.bodyWatch = new BodyWatch(options.bodyIdleTimeoutMs ?? DEFAULT_BODY_IDLE_TIMEOUT_MS);
    this.sse = new SseHub(
      session,
      (s) => codec.sseEvent!(s),
      options.sse,
      logger,
      codec.sseEventExpires && ((s) => codec.sseEventExpires!(s)),
    );
    const lp = options.longPoll;
    this.polls = new LongPollHub(session, {
      maxWaitMs: lp?.maxWaitMs ?? DEFAULT_LONG_POLL.maxWaitMs,
      maxWaits: lp?.maxWaits ?? DEFAULT_LONG_POLL.maxWaits,
      maxWaitsPerAddress: lp?.maxWaitsPerAddress ?? DEFAULT_LONG_POLL.maxWaitsPerAddress,
    });
    const metrics = options.metrics;
    const reads = new ReadPath({
      session,
      codec,
      access,
      permissions,
      bodyLimit,
      bodyWatch: this.bodyWatch,
      cache: this.cache,
      sse: this.sse,
      polls: this.polls,
      origins,
      responseIdleMs: options.responseIdleTimeoutMs ?? DEFAULT_RESPONSE_IDLE_TIMEOUT_MS,
      logger,
    });
    const writes = new WritePath({
      session,
      codec,
      access,
      permissions,
      bodyLimit,
      bodyWatch: this.bodyWatch,
      origins,
      metrics,
      logger,
      afterEvents: (answer) => this.sse.afterEvents(answer),
    });
    const onRequest = (req: IncomingMessage, res: ServerResponse): void => {
      const method = req.method;
      if (method === "PUT" || method === "PATCH" || method === "DELETE") {
        // Counted when answered (every write ends in `answered` or `writeFailed`), with no
        // listener on the response.
        writes.write(req, res, method, metrics === undefined ? 0 : performance.now());
        return;
      }
      // The synchronous answers are counted at once: no listener on the response.
      const start = metrics === undefined ? 0 : performance.now();
      if (reads.serveCached(req, res) || reads.serveStored(req, res)) metrics?.served(req, res, start);
      else {
        metrics?.track(req, res);
        if (!reads.serveRemote(req, res)) void reads.handle(req, res);
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
    const h2 = options.http2;
    const h2Options = {
      maxSessionMemory: h2?.maxSessionMemoryMb ?? DEFAULT_HTTP2.maxSessionMemoryMb,
      maxSendHeaderBlockLength: MAX_HEADER_SIZE,
      settings: {
        maxConcurrentStreams: h2?.maxConcurrentStreams ?? DEFAULT_HTTP2.maxConcurrentStreams,
        maxHeaderListSize: MAX_HEADER_SIZE,
      },
    };
    this.server = !options.tls
      ? createServer(serverOptions, onRequest)
      : h2?.enabled === false
        ? createHttpsServer({ ...serverOptions, cert: options.tls.cert, key: options.tls.key }, onRequest)
        : // The http2 compatibility API hands the same handlers request and response objects
          // close to node:http's (docs/http2.md lists where they differ and how each is met).
          (createSecureServer(
            {
              ...serverOptions,
              cert: options.tls.cert,
              key: options.tls.key,
              allowHTTP1: true,
              ...h2Options,
            },
            onRequest as unknown as Parameters<typeof createSecureServer>[1],
          ) as unknown as Server);
    if (options.tls && h2?.enabled !== false) {
      // The HTTP/1.1 side of an http2 server reads these off the server, not its options:
      // without them its clients would get Node's defaults (a head may take 60 s).
      Object.assign(this.server, serverOptions);
      const sockets = new Set<Socket>();
      this.server.on("connection", (socket: Socket) => {
        sockets.add(socket);
        socket.once("close", () => sockets.delete(socket));
      });
      this.h2Sockets = sockets;
      closeIdleSessions(this.server, h2?.idleTimeoutMs ?? DEFAULT_HTTP2.idleTimeoutMs);
    }
    // HTTP/2 with prior knowledge on the plain port, handed over from the HTTP/1.1 parser's
    // refusal of the preface: nothing in front of HTTP/1.1 (docs/http2.md).
    if (!options.tls && h2?.enabled !== false) {
      const h2c = createH2cServer(h2Options, onRequest as unknown as Parameters<typeof createH2cServer>[1]);
      closeIdleSessions(h2c, h2?.idleTimeoutMs ?? DEFAULT_HTTP2.idleTimeoutMs);
      this.h2c = new H2cHandOver(this.server, h2c);
    }
    this.server.keepAliveTimeout = KEEP_ALIVE_TIMEOUT_MS;
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
    return listen(this.server, this.opts.port, this.opts.host, "REST gateway");
  }

  /** The bound address, once listening. */
  address(): AddressInfo | undefined {
    return (this.server.address() as AddressInfo | null) ?? undefined;
  }

  /** Number of live SSE streams. */
  get sseStreams(): number {
    return this.sse.size;
  }

  /** Long-poll GETs parked now. */
  get longPolls(): number {
    return this.polls.size;
  }

  /** The long-poll counters, for the metrics. */
  get longPollStatus(): { waiting: number } & Readonly<LongPollStats> {
    return { waiting: this.polls.size, ...this.polls.stats };
  }

  /** The SSE hub's counters, for the metrics. */
  get sseStatus(): { streams: number; logEntries: number } & Readonly<SseStats> {
    return { streams: this.sse.size, logEntries: this.sse.logSize, ...this.sse.stats };
  }

  /** Stops accepting requests and ends open streams. */
  async close(): Promise<void> {
    this.sse.close();
    this.polls.close();
    this.cache?.close();
    this.bodyWatch.close();
    await new Promise<void>((resolve) => {
      this.server.close(() => resolve());
      // An HTTP/2 server (on the TLS port) has no closeAllConnections: its sockets are kept here.
      this.h2c?.close();
      if (this.h2Sockets === undefined) this.server.closeAllConnections();
      else for (const socket of this.h2Sockets) socket.destroy();
    });
  }
}
