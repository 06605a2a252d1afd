/**
 * The remote API server: zenoh's `zenoh-plugin-remote-api` protocol over WebSocket, so the
 * official zenoh-ts client talks to zest unchanged. Each connection is one zest `Session` on
 * the router. See docs/remote-api.md.
 */
import { Buffer } from "node:buffer";
import { createServer as createHttpServer, type IncomingMessage, type Server, STATUS_CODES } from "node:http";
import { createServer as createHttpsServer } from "node:https";
import type { AddressInfo } from "node:net";
import type { Duplex } from "node:stream";
import { type WebSocket, WebSocketServer } from "ws";
import { errorMessage, toZestError } from "../core/errors.js";
import type { Logger } from "../core/log.js";
import { httpStatus } from "../rest/http-status.js";
import type { Router } from "../core/router.js";
import { Session } from "../core/session.js";
import { type Authorize, type RemoteLimits, type RemoteMessageName, RemoteConnection } from "./connection.js";
import { CloseCode } from "./wire.js";

export const DEFAULT_LIMITS: RemoteLimits & { maxFrameBytes: number; maxConnections: number } = {
  maxDeclarations: 10_000,
  maxPendingGets: 1_000,
  maxPendingQueries: 1_000,
  maxBufferedBytes: 16 * 1024 * 1024,
  maxQueryTimeoutMs: 600_000,
  maxFrameBytes: 16 * 1024 * 1024,
  maxConnections: 1_000,
};

export interface RemoteApiServerOptions {
  readonly router: Router;
  /** 0 picks a free port. */
  readonly port: number;
  /** Default 127.0.0.1 (loopback): give an address to be reachable from elsewhere. */
  readonly host?: string;
  readonly logger: Logger;
  readonly limits?: Partial<typeof DEFAULT_LIMITS>;
  /**
   * TLS hook: with a certificate and key the server speaks `wss://`. The lead wires the REST
   * gateway's TLS config (`plugins.rest.tls`) here.
   */
  readonly tls?: { readonly cert: string | Buffer; readonly key: string | Buffer };
  /**
   * Access-control hook: the `Authorize` function of one connection, from its upgrade request
   * (client address, credentials), or a promise of it. Throwing (or rejecting with) a ZestError
   * refuses the upgrade with that error's HTTP status (`unauthenticated`: 401). Default:
   * `defaultAuthorizer(adminWrite, adminRead)`; `accessAuthorizer` (access.ts) adds access control.
   */
  readonly authorizer?: (req: IncomingMessage) => Authorize | Promise<Authorize>;
  /** Who may write the admin space (`@/...`) when no authorizer is given (default: loopback clients). */
  readonly adminWrite?: boolean | "loopback";
  /** Whether clients may read the admin space when no authorizer is given (default true). */
  readonly adminRead?: boolean;
}

const WRITES: ReadonlySet<RemoteMessageName> = new Set([
  "Put",
  "Delete",
  "PublisherPut",
  "PublisherDelete",
  "DeclarePublisher",
]);
const READS: ReadonlySet<RemoteMessageName> = new Set(["Get", "QuerierGet", "DeclareQuerier", "DeclareSubscriber"]);

function isAdminKey(key: string): boolean {
  return key === "@" || key.startsWith("@/");
}

function isLoopback(req: IncomingMessage): boolean {
  const a = req.socket.remoteAddress ?? "";
  return a === "::1" || a.startsWith("127.") || a.startsWith("::ffff:127.");
}

/** The default policy, as on REST: everything, except admin-space writes from non-loopback clients. */
export function defaultAuthorizer(
  adminWrite: boolean | "loopback" = "loopback",
  adminRead = true,
): (req: IncomingMessage) => Authorize {
  return (req) => {
    const mayWrite = adminWrite === true || (adminWrite === "loopback" && isLoopback(req));
    return (message, key) => {
      if (!isAdminKey(key)) return true;
      if (WRITES.has(message)) return mayWrite;
      if (READS.has(message)) return adminRead;
      return true;
    };
  };
}

/** Answers an upgrade request with an HTTP error (401 asks for Basic credentials) and closes it. */
function refuseUpgrade(socket: Duplex, kind: Parameters<typeof httpStatus>[0], reason: string): void {
  const status = httpStatus(kind);
  const body = `${kind}: ${reason}\n`;
  const head = [
    `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ""}`,
    "Connection: close",
    "Content-Type: text/plain; charset=utf-8",
    `Content-Length: ${Buffer.byteLength(body)}`,
  ];
  if (kind === "unauthenticated") head.push('WWW-Authenticate: Basic realm="zest", charset="UTF-8"');
  socket.end(`${head.join("\r\n")}\r\n\r\n${body}`);
}

/** The WebSocket server of the remote API. `listen()`, then `close()`. */
export class RemoteApiServer {
  private readonly server: Server;
  private readonly wss: WebSocketServer;
  private readonly connections = new Set<RemoteConnection>();
  private readonly limits: typeof DEFAULT_LIMITS;
  private readonly authorizer: (req: IncomingMessage) => Authorize | Promise<Authorize>;
  private closing = false;

  constructor(private readonly options: RemoteApiServerOptions) {
    this.limits = { ...DEFAULT_LIMITS, ...options.limits };
    this.authorizer = options.authorizer ?? defaultAuthorizer(options.adminWrite, options.adminRead);
    this.server = options.tls
      ? createHttpsServer({ cert: options.tls.cert, key: options.tls.key })
      : createHttpServer();
    this.server.on("request", (_req, res) => {
      res
        .writeHead(426, { "content-type": "text/plain", upgrade: "websocket" })
        .end("zest remote API: connect with a WebSocket (zenoh-ts)\n");
    });
    // The upgrade is ours to answer: credentials are checked (maybe asynchronously) before it.
    this.wss = new WebSocketServer({ noServer: true, maxPayload: this.limits.maxFrameBytes, perMessageDeflate: false });
    this.server.on(
      "upgrade",
      (req: IncomingMessage, socket: Duplex, head: Buffer) => void this.upgrade(req, socket, head),
    );
    this.wss.on("error", (err) => options.logger.warn({ err: err.message }, "remote API server error"));
  }

  /** Authenticates an upgrade request, then opens the connection or refuses it with an HTTP status. */
  private async upgrade(req: IncomingMessage, socket: Duplex, head: Buffer): Promise<void> {
    socket.on("error", () => socket.destroy());
    let authorize: Authorize;
    try {
      const a = this.authorizer(req);
      authorize = a instanceof Promise ? await a : a;
    } catch (err) {
      const z = toZestError(err);
      this.options.logger.info(
        { client: req.socket.remoteAddress, err: errorMessage(z) },
        "remote API connection refused",
      );
      refuseUpgrade(socket, z.kind, z.message);
      return;
    }
    // The client left, or the server closed, while its credentials were checked.
    if (socket.destroyed || this.closing) {
      socket.destroy();
      return;
    }
    this.wss.handleUpgrade(req, socket, head, (ws) => this.open(ws, req, authorize));
  }

  private open(ws: WebSocket, req: IncomingMessage, authorize: Authorize): void {
    const log = this.options.logger;
    if (this.connections.size >= this.limits.maxConnections) {
      log.warn({ client: req.socket.remoteAddress }, "remote API connection refused: too many connections");
      ws.close(CloseCode.GOING_AWAY, "too many connections");
      return;
    }
    const conn: RemoteConnection = new RemoteConnection(ws, {
      session: new Session(this.options.router, "remote_api"),
      logger: log,
      limits: this.limits,
      authorize,
      onClosed: () => {
        this.connections.delete(conn);
        log.debug({ conn: conn.id }, "remote API connection closed");
      },
    });
    this.connections.add(conn);
    log.debug({ conn: conn.id, client: req.socket.remoteAddress }, "remote API connection opened");
  }

  /** Number of open connections. */
  get connectionCount(): number {
    return this.connections.size;
  }

  /** Starts listening; rejects with a one-line reason when the port is taken. */
  listen(): Promise<AddressInfo> {
    const host = this.options.host ?? "127.0.0.1";
    return new Promise((resolve, reject) => {
      const onError = (err: NodeJS.ErrnoException): void => {
        const where = `${host}:${this.options.port}`;
        reject(
          new Error(
            err.code === "EADDRINUSE"
              ? `cannot listen on ${where} (remote API): the port is already in use`
              : `cannot listen on ${where} (remote API): ${err.message}`,
          ),
        );
      };
      this.server.once("error", onError);
      this.server.listen(this.options.port, host, () => {
        this.server.off("error", onError);
        resolve(this.server.address() as AddressInfo);
      });
    });
  }

  /** The bound address, once listening. */
  address(): AddressInfo | undefined {
    const a = this.server.address();
    return a && typeof a === "object" ? a : undefined;
  }

  /** Closes every connection (releasing what it holds) and stops listening. */
  async close(): Promise<void> {
    this.closing = true;
    for (const c of [...this.connections]) c.close(CloseCode.GOING_AWAY, "router shutting down");
    this.connections.clear();
    await new Promise<void>((resolve) => this.wss.close(() => resolve()));
    // Shutdown must not wait on a client that never answers the close frame.
    for (const ws of this.wss.clients) ws.terminate();
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
