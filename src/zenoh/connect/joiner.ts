/**
 * zest joins an existing zenoh network (docs/zenoh-network.md): `connect.endpoints` (`-e`), as a
 * zenoh *client* of one router. It opens a transport to the first endpoint that answers (the
 * initiating side of the handshake, src/zenoh/transport/), holds it with the lease and KEEP_ALIVEs
 * every transport has, and when the router goes away tries again, endpoint after endpoint, with
 * a bounded backoff (100 ms doubling to 10 s, with jitter). One connection at a time, as a zenoh
 * client: two routers of one network joined at once would each hand zest what the other already
 * routes, and zest would pass it between them (twice, or round in a loop).
 */
import type { Socket } from "node:net";
import { connect as netConnect } from "node:net";
import { connect as tlsConnect } from "node:tls";
import type { Buffer } from "node:buffer";
import type { AccessControl } from "../../access/access.js";
import type { AdminPermissions } from "../../access/admin-permissions.js";
import { clientPolicy } from "../../access/client-policy.js";
import { errorMessage } from "../../core/errors.js";
import type { Logger } from "../../core/log.js";
import type { Connectivity } from "../../core/ports.js";
import type { Session } from "../../core/session.js";
import { CloseReason } from "../codec/transport.js";
import { CookieJar } from "../cookie.js";
import { type Endpoint, formatEndpoint } from "../endpoint.js";
import { ZenohLink } from "../transport/transport.js";
import { StreamWire } from "../links/stream.js";
import { connectUdp } from "../links/udp.js";
import type { Wire } from "../links/wire.js";
import type { ZenohLimits } from "../server.js";
import { NetworkBridge } from "./bridge.js";
import { JoinSession } from "./join-session.js";

/** The backoff between attempts (ms): from `initialMs`, doubling to `maxMs`, each drawn in [half, whole]. */
export interface Backoff {
  initialMs: number;
  maxMs: number;
}

export const DEFAULT_BACKOFF: Backoff = { initialMs: 100, maxMs: 10_000 };

/** The TLS of `tls/` endpoints zest connects to: the CA the router's certificate is checked against. */
export interface JoinTls {
  ca?: Buffer | string;
  /** zenohd's `verify_name_on_connect` (default true): the certificate must name the host. */
  verifyName: boolean;
  /** Client certificate and key (mutual TLS). */
  cert?: Buffer | string;
  key?: Buffer | string;
}

export interface JoinOptions {
  zid: string;
  endpoints: readonly Endpoint[];
  openSession(name: string): Session;
  connectivity: Connectivity;
  logger: Logger;
  limits: ZenohLimits;
  admin: AdminPermissions;
  access?: AccessControl | undefined;
  tls?: JoinTls | undefined;
  backoff?: Backoff;
  /** zenoh user/password credentials presented in the handshake, when the router asks for them. */
  credentials?: { user: string; password: string } | undefined;
}

/** Where the connection is. */
export type JoinState = "connecting" | "open" | "backoff" | "closed";

/** The connection as the admin space shows it (the zenoh door's status, `connect`). */
export interface JoinStatus {
  state: JoinState;
  /** The endpoint being tried, or open. */
  endpoint: string;
  endpoints: string[];
  /** The router's zid, while open. */
  router?: string;
  /** When the next attempt starts (RFC 3339), in backoff. */
  next_attempt?: string;
  /** Attempts that failed since the last open session. */
  failures: number;
  /** Why the last attempt or session ended. */
  last_error?: string;
  /** Sessions opened so far. */
  sessions: number;
  /** What zest declared to the router, while open. */
  declared?: { subscribers: number; queryables: number; tokens: number };
  /** The routers of the fabric joined to the network, when more than one (the first passes samples on). */
  cluster_joined?: string[];
}

/** The bounds of the tick that runs the link's lease and deadline checks (ms). */
const TICK_MIN_MS = 100;
const TICK_MAX_MS = 1000;

export class ZenohJoiner {
  private readonly options: JoinOptions;
  private readonly backoff: Backoff;
  private readonly cookies = new CookieJar();
  private state: JoinState = "connecting";
  private index = 0;
  private failures = 0;
  private sessions = 0;
  private lastError: string | undefined;
  private nextAttemptAt = 0;
  private socket: Socket | undefined;
  private link: ZenohLink | undefined;
  private session: JoinSession | undefined;
  private retryTimer: NodeJS.Timeout | undefined;
  private tickTimer: NodeJS.Timeout | undefined;
  /** Which router of the fabric passes the network's samples on (docs/zenoh-network.md, "Clusters"). */
  private readonly bridge: NetworkBridge;

  constructor(options: JoinOptions) {
    if (options.endpoints.length === 0) throw new Error("no endpoint to connect to");
    this.options = options;
    this.backoff = options.backoff ?? DEFAULT_BACKOFF;
    this.bridge = new NetworkBridge(options.openSession("zenoh-join"), options.zid.toUpperCase());
  }

  /** Starts connecting (does not wait for the session: the router may come later). */
  start(): void {
    this.attempt();
  }

  private get endpoint(): Endpoint {
    return this.options.endpoints[this.index % this.options.endpoints.length] as Endpoint;
  }

  status(): JoinStatus {
    const s: JoinStatus = {
      state: this.state,
      endpoint: formatEndpoint(this.endpoint),
      endpoints: this.options.endpoints.map(formatEndpoint),
      failures: this.failures,
      sessions: this.sessions,
    };
    if (this.state === "open" && this.link?.peer) s.router = this.link.peer.zid;
    if (this.state === "backoff") s.next_attempt = new Date(this.nextAttemptAt).toISOString();
    if (this.lastError !== undefined) s.last_error = this.lastError;
    if (this.session !== undefined) s.declared = this.session.mirrored;
    if (this.bridge.routers.length > 1) s.cluster_joined = [...this.bridge.routers];
    return s;
  }

  /** The joined router as the admin space lists it beside the door's sessions, while open. */
  joinedRouter(): { peer: string; whatami: string; address: string; link: string; joined: true } | undefined {
    const link = this.link;
    if (this.state !== "open" || link?.peer === undefined) return undefined;
    return {
      peer: link.peer.zid,
      whatami: link.peer.whatami,
      address: link.peer.address,
      link: link.locator,
      joined: true,
    };
  }

  private attempt(): void {
    if (this.state === "closed") return;
    this.state = "connecting";
    const e = this.endpoint;
    const logger = this.options.logger;
    logger.debug({ endpoint: formatEndpoint(e) }, "zenoh connecting to a router");
    let socket: Socket;
    const onConnected = (): void => {
      socket.off("error", onError);
      const wire = new StreamWire(e.protocol === "tls" ? "tls" : "tcp", socket);
      this.openTransport(wire);
    };
    const onError = (err: Error): void => this.failed(errorMessage(err));
    if (e.protocol === "tls") {
      const t = this.options.tls;
      socket = tlsConnect(
        {
          host: e.host,
          port: e.port,
          ...(t?.ca !== undefined ? { ca: t.ca } : {}),
          ...(t?.cert !== undefined && t.key !== undefined ? { cert: t.cert, key: t.key } : {}),
          ...(t?.verifyName === false ? { checkServerIdentity: () => undefined } : {}),
          minVersion: "TLSv1.2",
        },
        onConnected,
      );
    } else if (e.protocol === "tcp") {
      socket = netConnect({ host: e.host, port: e.port }, onConnected);
    } else {
      // UDP has no connection: the handshake's deadline tells whether a router answers.
      connectUdp(e).then(
        (wire) => {
          if (this.state === "connecting") this.openTransport(wire);
          else wire.destroy();
        },
        (err: unknown) => this.failed(errorMessage(err)),
      );
      return;
    }
    this.socket = socket;
    socket.once("error", onError);
    socket.setTimeout(this.options.limits.handshakeTimeoutMs, () => {
      if (this.link === undefined) socket.destroy(new Error("connect timed out"));
    });
  }

  private openTransport(wire: Wire): void {
    const o = this.options;
    this.socket?.setTimeout(0);
    const link = new ZenohLink(wire, {
      zid: o.zid,
      cookies: this.cookies,
      logger: o.logger,
      limits: o.limits,
      initiate: { whatami: "client", credentials: o.credentials },
      onOpen: (l, peer) => {
        const principal = o.access?.enabled
          ? o.access.principalOf({
              user: undefined,
              address: wire.remoteAddress,
              localAddress: wire.localAddress,
              protocol: wire.protocol,
              zid: peer.zid,
            })
          : undefined;
        // What comes in from the network is never an operator on loopback: admin writes need `w` for all.
        const core = o.openSession("zenoh");
        const session = new JoinSession(
          l,
          peer,
          core,
          o.connectivity,
          o.logger.child({ router: peer.zid }),
          o.limits,
          clientPolicy(o.access, principal, o.admin, false),
          this.bridge,
        );
        this.bridge.opened(core.id);
        this.session = session;
        this.state = "open";
        this.failures = 0;
        this.sessions++;
        this.lastError = undefined;
        o.logger.info(
          { endpoint: formatEndpoint(this.endpoint), router: peer.zid, whatami: peer.whatami },
          "zenoh joined a router",
        );
        session.start();
        this.scheduleTick();
        return session;
      },
      onClosed: () => this.lost(),
    });
    this.link = link;
    this.scheduleTick();
  }

  private scheduleTick(): void {
    if (this.tickTimer !== undefined) clearTimeout(this.tickTimer);
    const link = this.link;
    if (link === undefined) return;
    const ms = Math.min(TICK_MAX_MS, Math.max(TICK_MIN_MS, link.tickPeriodMs));
    this.tickTimer = setTimeout(() => {
      this.tickTimer = undefined;
      link.tick(Date.now());
      if (this.link === link) this.scheduleTick();
    }, ms);
    this.tickTimer.unref();
  }

  /** The transport ended (either side, the lease, or the handshake): try again after the backoff. */
  private lost(): void {
    const wasOpen = this.state === "open";
    const router = this.link?.peer?.zid;
    const reason = this.link?.closeReceived;
    this.link = undefined;
    this.session = undefined;
    this.socket = undefined;
    this.bridge.closed();
    if (this.tickTimer !== undefined) clearTimeout(this.tickTimer);
    this.tickTimer = undefined;
    if (this.state === "closed") return;
    if (wasOpen) {
      this.options.logger.warn(
        { endpoint: formatEndpoint(this.endpoint), router },
        "zenoh router connection lost: reconnecting",
      );
      this.lastError = "the session closed";
      this.retry(false);
    } else
      this.failed(
        reason === undefined
          ? "the handshake did not complete"
          : `the router refused the session (CLOSE ${closeReasonName(reason)}${reason === CloseReason.GENERIC ? ": credentials or access control?" : ""})`,
      );
  }

  private failed(reason: string): void {
    if (this.state === "closed") return;
    this.link?.close();
    this.socket?.destroy();
    this.link = undefined;
    this.socket = undefined;
    this.lastError = reason;
    this.failures++;
    this.options.logger.info(
      { endpoint: formatEndpoint(this.endpoint), failures: this.failures, reason },
      "zenoh connection to a router failed",
    );
    this.retry(true);
  }

  /** The next attempt, on the next endpoint after a failure, after the backoff. */
  private retry(failed: boolean): void {
    if (this.state === "closed" || this.retryTimer !== undefined) return;
    if (failed) this.index++;
    const step = Math.min(this.backoff.maxMs, this.backoff.initialMs * 2 ** Math.min(this.failures, 30));
    // Jitter, so that routers restarted together do not all reconnect in step.
    const delay = step / 2 + Math.random() * (step / 2);
    this.state = "backoff";
    this.nextAttemptAt = Date.now() + delay;
    this.retryTimer = setTimeout(() => {
      this.retryTimer = undefined;
      this.attempt();
    }, delay);
    this.retryTimer.unref();
  }

  /** Closes the session (CLOSE to the router) and stops trying. */
  async close(): Promise<void> {
    this.state = "closed";
    if (this.retryTimer !== undefined) clearTimeout(this.retryTimer);
    if (this.tickTimer !== undefined) clearTimeout(this.tickTimer);
    this.retryTimer = undefined;
    this.tickTimer = undefined;
    this.link?.close();
    if (this.link === undefined) this.socket?.destroy();
    this.link = undefined;
    this.bridge.stop();
  }
}

/** A CLOSE reason by its zenoh name (`GENERIC`, `EXPIRED`...), or its number. */
function closeReasonName(reason: number): string {
  for (const [name, code] of Object.entries(CloseReason)) if (code === reason) return name;
  return String(reason);
}
