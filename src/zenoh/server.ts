/**
 * The zenoh front door (docs/zenoh-protocol.md): zenoh 1.x clients and peers (zenoh-pico,
 * zenoh-c/C++, zenoh-python, Rust) connect over TCP, UDP or TLS and share the router's key space
 * with REST, the remote API, storages and the NATS fabric. One `ZenohServer` listens on its
 * endpoints (src/zenoh/links/), admits transports within the session limits, and gives each open
 * session its own core `Session`.
 */
import type { Buffer } from "node:buffer";
import { ZestError } from "../core/errors.js";
import type { Logger } from "../core/log.js";
import type { Connectivity } from "../core/ports.js";
import type { Session } from "../core/session.js";
import type { WhatAmI } from "./codec/core.js";
import { CloseReason, encodeClose } from "./codec/transport.js";
import { CookieJar } from "./cookie.js";
import { type Endpoint, formatEndpoint } from "./endpoint.js";
import { type HandshakeGate, type LinkLimits, type Refusal, ZenohLink } from "./transport/transport.js";
import type { UsrPwdAuth } from "./auth-usrpwd.js";
import type { LinkListener, OnWire } from "./links/listener.js";
import { listenTcp } from "./links/tcp.js";
import { listenTls } from "./links/tls.js";
import { listenUdp } from "./links/udp.js";
import type { Wire } from "./links/wire.js";
import { type SessionLimits, ZenohSession } from "./session.js";
import type { AccessControl, Principal } from "../access/access.js";
import { type AdminPermissions, DEFAULT_ADMIN_PERMISSIONS } from "../access/admin-permissions.js";
import { isLoopbackAddress } from "../access/client.js";
import { clientPolicy } from "../access/client-policy.js";
import { ConnectionGuard } from "../access/connections.js";
import type { SessionBoundKeys } from "../core/session-bound.js";
import { DEFAULT_FACE_LIMITS } from "../door/limits.js";
import { BinaryWriter } from "../core/binary.js";

/** Every limit of the door, with its default in `DEFAULT_ZENOH_LIMITS`. */
export interface ZenohLimits extends LinkLimits, SessionLimits {
  /** Open transports (and handshakes in progress) in total. */
  maxSessions: number;
  /** Open transports from one IP address. */
  maxSessionsPerAddress: number;
}

/** The bounds of the period of the door's lease and deadline checks (ms). */
const TICK_MIN_MS = 100;
const TICK_MAX_MS = 1000;

export const DEFAULT_ZENOH_LIMITS: ZenohLimits = {
  handshakeTimeoutMs: 10_000,
  leaseMs: 10_000,
  batchSize: 65_535,
  maxFragmentedMessage: 16 * 1024 * 1024,
  dropQueueBytes: 4 * 1024 * 1024,
  maxQueueBytes: 64 * 1024 * 1024,
  maxSessions: 10_000,
  maxSessionsPerAddress: 1_000,
  ...DEFAULT_FACE_LIMITS,
  maxKeyExprIds: 4_096,
  blockWaitBeforeCloseMs: 5_000,
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
   * Access control (docs/security.md): each session is decided as the user its handshake
   * authenticated (or an anonymous client), from its address, over its link, with its zid.
   */
  access?: AccessControl | undefined;
  /** zenoh's user/password authentication (`transport.auth.usrpwd`), when configured. */
  usrpwd?: UsrPwdAuth | undefined;
  /** `session_bound.key_exprs`: puts on them are bound to the writer's session. */
  sessionBound?: SessionBoundKeys | undefined;
  /** Who may read and write the admin space (default: read for all, write from loopback). */
  admin?: AdminPermissions | undefined;
  /** The connection caps (the edge policy's `connectionGuard`); default: `maxSessionsPerAddress` and `maxSessions`. */
  guard?: ConnectionGuard | undefined;
  /** The certificate, key and client verification of `tls/` endpoints (required when there is one). */
  tls?: ZenohTls;
}

/** The TLS material of the door's `tls/` endpoints. */
export interface ZenohTls {
  cert: Buffer | string;
  key: Buffer | string;
  /** Root CA certificate(s) that client certificates are verified against (mutual TLS). */
  ca?: Buffer | string;
  /** Mutual TLS: a client without a certificate signed by `ca` is refused. */
  mtls: boolean;
}

/** One session as the admin space lists it. */
export interface ZenohSessionStatus {
  zid: string;
  /** The user its handshake authenticated, if any. */
  user?: string;
  whatami: WhatAmI;
  address: string;
  link: string;
  declarations: number;
  /** Samples dropped because the peer read too slowly. */
  dropped: number;
  /** Bytes queued in its priority lanes because it reads slowly. */
  queued: number;
}

export class ZenohServer {
  private readonly options: ZenohServerOptions;
  private readonly limits: ZenohLimits;
  private readonly cookies = new CookieJar();
  private readonly listeners: LinkListener[] = [];
  private readonly links = new Set<ZenohLink>();
  private readonly sessions = new Map<ZenohLink, ZenohSession>();
  /** The connection caps, per address and in total (the edge policy's, or from `limits`). */
  private readonly guard: ConnectionGuard;
  /** Connections refused by access control, or by the caps before a TLS handshake. */
  private refusedHere = 0;
  /** Handshakes refused for credentials: wrong, unknown or missing where required. */
  authFailures = 0;
  private bound: string[] = [];
  private timer: NodeJS.Timeout | undefined;
  /** When the pending tick runs (ms since the epoch). */
  private tickAt = 0;
  private stopped = false;

  constructor(options: ZenohServerOptions) {
    this.options = options;
    this.limits = { ...DEFAULT_ZENOH_LIMITS, ...options.limits };
    if (this.limits.batchSize > 65_535 || this.limits.batchSize < 1024)
      throw ZestError.badRequest("zenoh batch size must be 1024 to 65535 bytes");
    this.guard =
      options.guard ??
      new ConnectionGuard({ perAddress: this.limits.maxSessionsPerAddress, total: this.limits.maxSessions });
  }

  /** Connections refused by the caps or by access control so far (the door metrics). */
  get refused(): number {
    return this.guard.refused + this.refusedHere;
  }

  /** Listens on every endpoint; a port in use rejects with a one-line `unavailable` error. */
  async listen(): Promise<void> {
    const onWire: OnWire = (wire) => this.accept(wire);
    for (const e of this.options.endpoints) {
      try {
        const listener = await this.listenOn(e, onWire);
        this.listeners.push(listener);
        this.bound.push(listener.locator);
      } catch (err) {
        await this.close();
        throw err;
      }
    }
    this.scheduleTick(TICK_MAX_MS);
  }

  /**
   * Has the links ticked within `ms` (bounded by `TICK_MIN_MS` and `TICK_MAX_MS`), unless they
   * will be sooner. One timer for the door: each tick runs every link's lease and deadline
   * checks and sets the next one at the shortest period a link asks for (a peer's short lease).
   */
  private scheduleTick(ms: number): void {
    if (this.stopped) return;
    const delay = Math.min(TICK_MAX_MS, Math.max(TICK_MIN_MS, ms));
    const at = Date.now() + delay;
    if (this.timer !== undefined) {
      if (at >= this.tickAt) return;
      clearTimeout(this.timer);
    }
    this.tickAt = at;
    this.timer = setTimeout(this.runTick, delay);
    this.timer.unref();
  }

  private readonly runTick = (): void => {
    this.timer = undefined;
    const now = Date.now();
    let next = TICK_MAX_MS;
    for (const l of this.links) {
      l.tick(now);
      next = Math.min(next, l.tickPeriodMs);
    }
    this.scheduleTick(next);
  };

  private listenOn(e: Endpoint, onWire: OnWire): Promise<LinkListener> {
    const logger = this.options.logger;
    switch (e.protocol) {
      case "tcp":
        return listenTcp(e, onWire, logger);
      case "udp":
        return listenUdp(e, onWire, logger);
      case "tls": {
        const tls = this.options.tls;
        if (tls === undefined)
          throw ZestError.badRequest(
            `zenoh endpoint ${formatEndpoint(e)} needs a certificate: transport.link.tls.listen_certificate and listen_private_key (or plugins.rest.tls)`,
          );
        return listenTls(
          e,
          { ...tls, handshakeTimeoutMs: this.limits.handshakeTimeoutMs, admits: (ip) => this.hasRoomFor(ip) },
          onWire,
          logger,
        );
      }
    }
  }

  /** The locators the door listens on, with their real ports (`tcp/127.0.0.1:7447`). */
  locators(): string[] {
    return [...this.bound];
  }

  /** The open zenoh sessions (for the admin space). */
  status(): ZenohSessionStatus[] {
    return [...this.sessions].map(([l, s]) => ({
      zid: s.peer.zid,
      ...(s.peer.user === undefined ? {} : { user: s.peer.user }),
      whatami: s.peer.whatami,
      address: s.peer.address,
      link: l.locator,
      declarations: s.declarations,
      dropped: l.dropped,
      queued: l.queuedBytes,
    }));
  }

  /** True while `ip` may open another session (the caps in total and per address), checked before a TLS handshake. */
  private hasRoomFor(ip: string): boolean {
    if (this.guard.hasRoom(ip)) return true;
    this.options.logger.info(
      { address: ip, sessions: this.links.size },
      "zenoh connection refused: too many sessions (the limit)",
    );
    this.refusedHere++;
    return false;
  }

  /** Refuses a wire with CLOSE `reason`. */
  private refuse(wire: Wire, reason: number): void {
    const w = new BinaryWriter(8);
    w.u16(2);
    encodeClose(w, reason);
    wire.send(w.finish());
    wire.end();
  }

  private accept(wire: Wire): void {
    const ip = wire.remoteAddress;
    // TCP and TLS connections and UDP remotes alike take a place under the caps.
    const release = this.guard.admit(ip);
    if (release === undefined) {
      this.options.logger.info(
        { address: ip, sessions: this.links.size },
        "zenoh connection refused: too many sessions (the limit)",
      );
      this.refuse(wire, CloseReason.MAX_SESSIONS);
      return;
    }
    const access = this.options.access?.enabled ? this.options.access : undefined;
    const usrpwd = this.options.usrpwd;
    // Refused at connect when nothing the handshake could tell (a user, a zid) would change it.
    if (access && usrpwd === undefined && !access.usesLinks) {
      const anonymous = access.principalOf({ user: undefined, address: ip });
      if (access.allowsNothing(anonymous)) {
        this.options.logger.info(
          { address: ip },
          "zenoh connection refused: access control allows this address nothing",
        );
        this.refusedHere++;
        release();
        this.refuse(wire, CloseReason.GENERIC);
        return;
      }
    }
    let principal: Principal | undefined;
    const gate = this.gate(wire, (p) => {
      principal = p;
    });
    const link = new ZenohLink(wire, {
      zid: this.options.zid,
      cookies: this.cookies,
      logger: this.options.logger,
      limits: this.limits,
      gate,
      onOpen: (l, peer) => {
        const session = new ZenohSession(
          l,
          peer,
          this.options.openSession("zenoh"),
          this.options.connectivity,
          this.options.logger,
          this.limits,
          clientPolicy(access, principal, this.options.admin ?? DEFAULT_ADMIN_PERMISSIONS, isLoopbackAddress(ip)),
          this.options.sessionBound,
        );
        this.sessions.set(l, session);
        // A peer with a short lease needs its checks and KEEP_ALIVEs sooner than the next tick.
        this.scheduleTick(l.tickPeriodMs);
        this.options.logger.info(
          { zid: peer.zid, whatami: peer.whatami, address: peer.address, link: l.locator, user: peer.user },
          "zenoh session opened",
        );
        return session;
      },
      onClosed: (l) => {
        this.links.delete(l);
        release();
        const s = this.sessions.get(l);
        if (s) {
          this.sessions.delete(l);
          this.options.logger.info({ zid: s.peer.zid, address: s.peer.address }, "zenoh session closed");
        }
      },
    });
    this.links.add(link);
    this.scheduleTick(link.tickPeriodMs);
  }

  /**
   * The handshake's admission for one connection (docs/security.md): user/password when the
   * client offers it and the router takes it, then access control on who the session is (user,
   * address, link, zid). `admitted` receives the principal its session is decided as.
   */
  private gate(wire: Wire, admitted: (p: Principal) => void): HandshakeGate | undefined {
    const address = wire.remoteAddress;
    const access = this.options.access?.enabled ? this.options.access : undefined;
    const usrpwd = this.options.usrpwd;
    if (access === undefined && usrpwd === undefined) return undefined;
    const logger = this.options.logger;
    const refuse = (fields: Record<string, unknown>, reason: string, credentials: boolean): Refusal => {
      logger.info({ address, ...fields, reason }, "zenoh handshake refused");
      this.refusedHere++;
      if (credentials) this.authFailures++;
      return { refused: reason };
    };
    const principalOf = (user: string | undefined, zid: string): Principal | undefined =>
      access?.principalOf({ user, address, localAddress: wire.localAddress, protocol: wire.protocol, zid });
    return {
      onInit: (m) => {
        if (usrpwd?.asked(m.auth)) {
          const nonce = usrpwd.nonce();
          return { nonce, auth: usrpwd.initAck(nonce) };
        }
        const anonymous = principalOf(undefined, m.zid);
        // Without access control, user/password (when configured) is what admits a client, as in zenohd.
        if (usrpwd !== undefined && (anonymous === undefined || access!.allowsNothing(anonymous)))
          return refuse({ zid: m.zid }, "credentials required (transport.auth.usrpwd)", true);
        if (anonymous !== undefined && access!.allowsNothing(anonymous))
          return refuse({ zid: m.zid }, "access control allows this client nothing", false);
        return {};
      },
      onOpen: (m, nonce, peer) => {
        let user: string | undefined;
        if (nonce !== undefined && usrpwd !== undefined) {
          const outcome = usrpwd.verify(m.auth, nonce, address);
          if ("refused" in outcome) return refuse({ zid: peer.zid }, outcome.refused, true);
          user = outcome.user;
        }
        const p = principalOf(user, peer.zid);
        if (p !== undefined) {
          if (access!.allowsNothing(p))
            return refuse({ zid: peer.zid, user }, "access control allows this client nothing", false);
          admitted(p);
        }
        return user === undefined ? {} : { user, auth: usrpwd!.openAck() };
      },
    };
  }

  /** Closes every session and stops listening. */
  async close(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    for (const l of [...this.links]) l.close();
    await Promise.all(this.listeners.map((l) => l.close()));
    this.listeners.length = 0;
    this.bound = [];
  }
}
