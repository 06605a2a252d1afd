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
import { type AdminPermissions, DEFAULT_ADMIN_PERMISSIONS } from "../access/admin-permissions.js";
import { isLoopbackRequest } from "../access/client.js";
import { type ClientPolicy, clientPolicy } from "../access/client-policy.js";
import { ConnectionGuard, connectionLimits } from "../access/connections.js";
import type { TlsMaterial } from "../access/edge-policy.js";
import { httpStatus } from "../access/http-status.js";
import { listen } from "../access/listen.js";
import { errorMessage, toZestError } from "../core/errors.js";
import type { Logger } from "../core/log.js";
import type { Connectivity } from "../core/ports.js";
import type { SessionBoundKeys } from "../core/session-bound.js";
import type { Session } from "../core/session.js";
import { RemoteConnection } from "./connection.js";
import { DEFAULT_LIMITS } from "./limits.js";
import { CloseCode } from "./wire.js";

export { DEFAULT_LIMITS } from "./limits.js";

/** How logs and errors name this door. */
export const REMOTE_API_TITLE = "remote API";

export interface RemoteApiServerOptions {
  /** A new session on the router: each connection gets its own. */
  readonly openSession: (name: string) => Session;
  /** The routers this one reaches, for the connectivity events. */
  readonly connectivity: Connectivity;
  /** 0 picks a free port. */
  readonly port: number;
  /** Default 127.0.0.1 (loopback): give an address to be reachable from elsewhere. */
  readonly host?: string;
  readonly logger: Logger;
  readonly limits?: Partial<typeof DEFAULT_LIMITS>;
  /**
   * The connection caps (the edge policy's `connectionGuard`). Default: 256 per address, at most a
   * quarter of `limits.maxConnections`, and `limits.maxConnections` in total.
   */
  readonly guard?: ConnectionGuard;
  /** With a certificate and key the server speaks `wss://` (the router's TLS material). */
  readonly tls?: TlsMaterial;
  /**
   * What one connection's client may do, from its upgrade request (client address, credentials),
   * or a promise of it. Throwing (or rejecting with) a ZestError refuses the upgrade with that
   * error's HTTP status (`unauthenticated`: 401). Default: no access control, the admin-space
   * permissions `admin`; `remoteClientPolicy` (access.ts) is the edge policy's.
   */
  readonly policy?: (req: IncomingMessage) => ClientPolicy | Promise<ClientPolicy>;
  /** Who may use the admin space when no policy is given (default: read for all, write from loopback). */
  readonly admin?: AdminPermissions;
  /** `session_bound.key_exprs`: puts on them are bound to the writer's connection. */
  readonly sessionBound?: SessionBoundKeys | undefined;
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
  private readonly policy: (req: IncomingMessage) => ClientPolicy | Promise<ClientPolicy>;
  private readonly guard: ConnectionGuard;
  private refusedAtOpen = 0;
  private closing = false;

  constructor(private readonly options: RemoteApiServerOptions) {
    this.limits = { ...DEFAULT_LIMITS, ...options.limits };
    const admin = options.admin ?? DEFAULT_ADMIN_PERMISSIONS;
    this.policy = options.policy ?? ((req) => clientPolicy(undefined, undefined, admin, isLoopbackRequest(req)));
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
    this.guard = options.guard ?? new ConnectionGuard(connectionLimits({ total: this.limits.maxConnections }));
    this.guard.attach(this.server);
  }

  /** Connections refused by the caps so far. */
  get refused(): number {
    return this.guard.refused + this.refusedAtOpen;
  }

  /** Authenticates an upgrade request, then opens the connection or refuses it with an HTTP status. */
  private async upgrade(req: IncomingMessage, socket: Duplex, head: Buffer): Promise<void> {
    socket.on("error", () => socket.destroy());
    let policy: ClientPolicy;
    try {
      const p = this.policy(req);
      policy = p instanceof Promise ? await p : p;
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
    this.wss.handleUpgrade(req, socket, head, (ws) => this.open(ws, req, policy, socket));
  }

  private open(ws: WebSocket, req: IncomingMessage, policy: ClientPolicy, socket: Duplex): void {
    const log = this.options.logger;
    if (this.connections.size >= this.limits.maxConnections) {
      log.warn({ client: req.socket.remoteAddress }, "remote API connection refused: too many connections");
      ws.close(CloseCode.GOING_AWAY, "too many connections");
      this.refusedAtOpen++;
      return;
    }
    const conn: RemoteConnection = new RemoteConnection(ws, {
      session: this.options.openSession("remote_api"),
      connectivity: this.options.connectivity,
      // The upgraded socket is the TCP (or TLS) socket the WebSocket writes to.
      socket,
      logger: log,
      limits: this.limits,
      policy,
      sessionBound: this.options.sessionBound,
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
    return listen(this.server, this.options.port, this.options.host ?? "127.0.0.1", REMOTE_API_TITLE);
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
