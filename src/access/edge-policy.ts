/**
 * The edge policy of one router, built once from the configuration and handed to every front
 * door (docs/adding-a-front-door.md): who the clients are and what they may do (access control,
 * admin-space permissions), TLS material, where a door may listen (protected mode) and how many
 * connections it may hold (caps per address and in total).
 */
import type { Buffer } from "node:buffer";
import type { Logger } from "../core/log.js";
import type { SessionBoundKeys } from "../core/session-bound.js";
import { AccessControl, type Principal } from "./access.js";
import { type AdminPermissions, DEFAULT_ADMIN_PERMISSIONS } from "./admin-permissions.js";
import { type ClientPolicy, clientPolicy } from "./client-policy.js";
import { ConnectionGuard, connectionLimits } from "./connections.js";
import { type Endpoint, protectedBind } from "./listen.js";

/** A certificate chain and private key (PEM) for a door that speaks TLS. */
export interface TlsMaterial {
  readonly cert: Buffer | string;
  readonly key: Buffer | string;
}

/** What a door tells the policy about itself when it asks where to listen. */
export interface DoorIdentity {
  /** How logs and errors name the door: "REST gateway", "remote API". */
  readonly title: string;
  /** The flag or config key that opens the door to other machines, named by protected mode. */
  readonly openHint: string;
  /**
   * With no interface given: `protected` (the default) binds loopback only while access control
   * is off and every interface once it is on; `loopback` always binds loopback (the remote API,
   * as zenoh's plugin documents).
   */
  readonly defaultHost?: "protected" | "loopback";
}

/** The shared edge policy. Doors ask it; they never copy it. */
export class EdgePolicy {
  /** Authentication and access decisions (`OPEN` when access control is off). */
  readonly access: AccessControl;
  /** Who may read and write the admin space. */
  readonly admin: AdminPermissions;
  /** The router's TLS certificate and key (`plugins.rest.tls`), for every door that speaks TLS. */
  readonly tls: TlsMaterial | undefined;
  /** `session_bound.key_exprs`: puts on them from a zenoh client are bound to its session (undefined: none). */
  readonly sessionBound: SessionBoundKeys | undefined;
  readonly #logger: Logger;

  constructor(options: {
    access?: AccessControl;
    admin?: Partial<AdminPermissions>;
    tls?: TlsMaterial | undefined;
    sessionBound?: SessionBoundKeys | undefined;
    logger: Logger;
  }) {
    this.access = options.access ?? AccessControl.OPEN;
    this.admin = { ...DEFAULT_ADMIN_PERMISSIONS, ...options.admin };
    this.tls = options.tls;
    this.sessionBound = options.sessionBound?.empty === false ? options.sessionBound : undefined;
    this.#logger = options.logger;
  }

  /**
   * What one client may do: access control's decisions for `principal` (undefined while access
   * control is off) and the admin permissions for a client on loopback or not.
   */
  client(principal: Principal | undefined, loopback: boolean): ClientPolicy {
    return clientPolicy(this.access.enabled ? this.access : undefined, principal, this.admin, loopback);
  }

  /**
   * The interface `door` binds for `endpoint` under protected mode: loopback only (said in one
   * warning line) when access control is off and no interface was given.
   */
  bindHost(door: DoorIdentity, endpoint: Endpoint): string | undefined {
    if (endpoint.host === undefined && door.defaultHost === "loopback") return "127.0.0.1";
    return protectedBind(door, endpoint, this.access.enabled, this.#logger);
  }

  /**
   * A connection guard for one door's server: `perAddress` and `total` as configured, or the
   * defaults (256 per address, at most a quarter of the total; total from the descriptor limit).
   */
  connectionGuard(caps: { perAddress?: number | undefined; total?: number | undefined } = {}): ConnectionGuard {
    return new ConnectionGuard(connectionLimits(caps));
  }
}
