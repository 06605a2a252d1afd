/**
 * The zenoh front door (docs/zenoh-protocol.md): zenoh 1.x clients and peers (zenoh-pico,
 * zenoh-c/C++, zenoh-python, Rust) connect over TCP and share the router's key space with REST,
 * the remote API, storages and the NATS fabric. One `ZenohServer` listens on its endpoints,
 * admits transports within the session limits, and gives each open session its own core `Session`.
 */
import { createServer, type Server, type Socket } from "node:net";
import { errorMessage, ZestError } from "../core/errors.js";
import type { Logger } from "../core/log.js";
import type { Connectivity } from "../core/ports.js";
import type { Session } from "../core/session.js";
import type { WhatAmI } from "./codec/core.js";
import { CloseReason, encodeClose } from "./codec/transport.js";
import { CookieJar } from "./cookie.js";
import { type Endpoint, formatEndpoint } from "./endpoint.js";
import { type LinkLimits, ZenohLink } from "./link.js";
import { type Guard, type SessionLimits, ZenohSession } from "./session.js";
import type { AccessControl } from "../access/access.js";
import { BinaryWriter } from "../core/binary.js";

/** Every limit of the door, with its default in `DEFAULT_ZENOH_LIMITS`. */
export interface ZenohLimits extends LinkLimits, SessionLimits {
  /** Open transports (and handshakes in progress) in total. */
  maxSessions: number;
  /** Open transports from one IP address. */
  maxSessionsPerAddress: number;
}

export const DEFAULT_ZENOH_LIMITS: ZenohLimits = {
  handshakeTimeoutMs: 10_000,
  leaseMs: 10_000,
  batchSize: 65_535,
  maxFragmentedMessage: 16 * 1024 * 1024,
  dropQueueBytes: 4 * 1024 * 1024,
  maxQueueBytes: 64 * 1024 * 1024,
  maxSessions: 10_000,
  maxSessionsPerAddress: 1_000,
  maxDeclarations: 10_000,
  maxKeyExprIds: 4_096,
  maxPendingGets: 1_000,
  maxPendingQueries: 1_000,
  maxQueryTimeoutMs: 600_000,
};

export interface ZenohServerOptions {
  /** The router's id, which the handshake answers with. */
  zid: string;
  /** A new core session (one per zenoh session). */
  openSession(name: string): Session;
  /** Declarations and peers as they change (interests follow them). */
  connectivity: Connectivity;
  logger: Logger;
  endpoints: readonly Endpoint[];
  limits?: Partial<ZenohLimits>;
  /**
   * Access control (docs/security.md): each session is decided as an anonymous client of its
   * address (`cidrs` subjects); zenoh's user/password authentication is not supported yet.
   */
  access?: AccessControl;
}

/** One session as the admin space lists it. */
export interface ZenohSessionStatus {
  zid: string;
  whatami: WhatAmI;
  address: string;
  link: string;
  declarations: number;
  /** Samples dropped because the peer read too slowly. */
  dropped: number;
}

export class ZenohServer {
  private readonly options: ZenohServerOptions;
  private readonly limits: ZenohLimits;
  private readonly cookies = new CookieJar();
  private readonly servers: Server[] = [];
  private readonly links = new Set<ZenohLink>();
  private readonly perAddress = new Map<string, number>();
  private readonly sessions = new Map<ZenohLink, ZenohSession>();
  /** Connections refused by the caps or by access control so far (the door metrics). */
  refused = 0;
  private bound: string[] = [];
  private timer: NodeJS.Timeout | undefined;

  constructor(options: ZenohServerOptions) {
    this.options = options;
    this.limits = { ...DEFAULT_ZENOH_LIMITS, ...options.limits };
    if (this.limits.batchSize > 65_535 || this.limits.batchSize < 1024)
      throw ZestError.badRequest("zenoh batch size must be 1024 to 65535 bytes");
  }

  /** Listens on every endpoint; a port in use rejects with a one-line `unavailable` error. */
  async listen(): Promise<void> {
    for (const e of this.options.endpoints) {
      const server = createServer((socket) => this.accept(socket));
      await new Promise<void>((resolve, reject) => {
        const onError = (err: NodeJS.ErrnoException): void => {
          reject(
            err.code === "EADDRINUSE"
              ? ZestError.unavailable(
                  `zenoh endpoint ${formatEndpoint(e)} is in use (another router?): give another with -l/--listen or listen.endpoints`,
                )
              : ZestError.unavailable(`zenoh endpoint ${formatEndpoint(e)}: ${err.message}`, err),
          );
        };
        server.once("error", onError);
        server.listen(e.port, e.host, () => {
          server.off("error", onError);
          resolve();
        });
      }).catch(async (err: unknown) => {
        await this.close();
        throw err;
      });
      server.on("error", (err) => this.options.logger.warn({ err: errorMessage(err) }, "zenoh listener error"));
      this.servers.push(server);
      const addr = server.address();
      if (addr && typeof addr === "object")
        this.bound.push(formatEndpoint({ protocol: "tcp", host: addr.address, port: addr.port }));
    }
    this.timer = setInterval(() => {
      const now = Date.now();
      for (const l of this.links) l.tick(now);
    }, 1000);
    this.timer.unref();
  }

  /** The locators the door listens on, with their real ports (`tcp/127.0.0.1:7447`). */
  locators(): string[] {
    return [...this.bound];
  }

  /** The open zenoh sessions (for the admin space). */
  status(): ZenohSessionStatus[] {
    return [...this.sessions].map(([l, s]) => ({
      zid: s.peer.zid,
      whatami: s.peer.whatami,
      address: s.peer.address,
      link: `tcp/${s.peer.address}`,
      declarations: s.declarations,
      dropped: l.dropped,
    }));
  }

  private accept(socket: Socket): void {
    const ip = socket.remoteAddress ?? "?";
    const fromIp = this.perAddress.get(ip) ?? 0;
    if (this.links.size >= this.limits.maxSessions || fromIp >= this.limits.maxSessionsPerAddress) {
      this.options.logger.info(
        { address: ip, sessions: this.links.size, fromAddress: fromIp },
        "zenoh connection refused: too many sessions (the limit)",
      );
      this.refused++;
      const w = new BinaryWriter(8);
      w.u16(2);
      encodeClose(w, CloseReason.MAX_SESSIONS);
      socket.end(w.finish());
      socket.on("error", () => {});
      return;
    }
    const access = this.options.access;
    const principal = access?.enabled ? access.knownPrincipal({ address: ip }) : undefined;
    if (access && principal && access.allowsNothing(principal)) {
      this.options.logger.info({ address: ip }, "zenoh connection refused: access control allows this address nothing");
      this.refused++;
      const w = new BinaryWriter(8);
      w.u16(2);
      encodeClose(w, CloseReason.GENERIC);
      socket.end(w.finish());
      socket.on("error", () => {});
      return;
    }
    const guard: Guard | undefined =
      access && principal ? (message, key) => access.decide(principal, message, key) : undefined;
    this.perAddress.set(ip, fromIp + 1);
    const link = new ZenohLink(socket, {
      zid: this.options.zid,
      cookies: this.cookies,
      logger: this.options.logger,
      limits: this.limits,
      onOpen: (l, peer) => {
        const session = new ZenohSession(
          l,
          peer,
          this.options.openSession("zenoh"),
          this.options.connectivity,
          this.options.logger,
          this.limits,
          guard,
        );
        this.sessions.set(l, session);
        this.options.logger.info(
          { zid: peer.zid, whatami: peer.whatami, address: peer.address },
          "zenoh session opened",
        );
        return session;
      },
      onClosed: (l) => {
        this.links.delete(l);
        const n = (this.perAddress.get(ip) ?? 1) - 1;
        if (n <= 0) this.perAddress.delete(ip);
        else this.perAddress.set(ip, n);
        const s = this.sessions.get(l);
        if (s) {
          this.sessions.delete(l);
          this.options.logger.info({ zid: s.peer.zid, address: s.peer.address }, "zenoh session closed");
        }
      },
    });
    this.links.add(link);
  }

  /** Closes every session and stops listening. */
  async close(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    for (const l of [...this.links]) l.close();
    await Promise.all(this.servers.map((s) => new Promise<void>((resolve) => s.close(() => resolve()))));
    this.servers.length = 0;
    this.bound = [];
  }
}
