/**
 * The zenoh door's config, in zenohd's names (docs/zenoh-protocol.md): `listen.endpoints`
 * (`-l/--listen`). The door starts from it with `startZenohDoor`.
 */
import { errorMessage, ZestError } from "../core/errors.js";
import type { AccessControl } from "../access/access.js";
import type { TlsMaterial } from "../access/edge-policy.js";
import { loadTlsOptions, readPemFile } from "../access/tls.js";
import type { TransportConfig } from "./transport-schema.js";
import type { Logger } from "../core/log.js";
import type { Connectivity } from "../core/ports.js";
import type { Session } from "../core/session.js";
import { DEFAULT_ZENOH_PORT, type Endpoint, parseEndpoint } from "./endpoint.js";
import { type ZenohLimits, ZenohServer, type ZenohServerOptions, type ZenohTls } from "./server.js";
import type { UsrPwdAuth } from "./auth-usrpwd.js";
import type { SessionBoundKeys } from "../core/session-bound.js";
import type { AdminPermissions } from "../access/admin-permissions.js";
import type { ConnectionGuard } from "../access/connections.js";
import type { ListenConfig } from "./schema.js";

export type { ListenConfig } from "./schema.js";

/** What the door needs from the rest of the router's startup. */
export interface ZenohDoorContext {
  zid: string;
  openSession(name: string): Session;
  connectivity: Connectivity;
  logger: Logger;
  /** The router's access control: applied to every zenoh session (docs/security.md). */
  access?: AccessControl | undefined;
  /** zenoh's user/password authentication, when `transport.auth.usrpwd.dictionary_file` is set. */
  usrpwd?: UsrPwdAuth | undefined;
  /** `session_bound.key_exprs`: puts on them are bound to the writer's session. */
  sessionBound?: SessionBoundKeys | undefined;
  /** Who may read and write the admin space (the edge policy's). */
  admin?: AdminPermissions | undefined;
  /** The connection caps (the edge policy's guard). */
  guard?: ConnectionGuard | undefined;
  /** Protected mode's check of an endpoint (the edge policy's `bindHost`): warns when it opens the door to others without access control. */
  bindHost?: (endpoint: Endpoint) => void;
  /** The material of `tls/` endpoints (`zenohTls`). */
  tls?: ZenohTls;
  limits?: Partial<ZenohLimits>;
}

/**
 * The TLS material of `tls/` endpoints: zenohd's `transport.link.tls.listen_certificate` and
 * `listen_private_key` when given, else the router's (`tls`, in `routerTls`); with
 * `enable_mtls`, clients are verified against `root_ca_certificate`. Undefined when there is no
 * certificate (a `tls/` endpoint then fails to start, saying so). A file that cannot be read is
 * a `bad_input` error naming it.
 */
export function zenohTls(
  transport: TransportConfig | undefined,
  routerTls: TlsMaterial | undefined,
): ZenohTls | undefined {
  const t = transport?.link?.tls;
  try {
    const own =
      t?.listen_certificate != null && t.listen_private_key != null
        ? loadTlsOptions({ listen_certificate: t.listen_certificate, listen_private_key: t.listen_private_key })
        : routerTls;
    if (own === undefined) return undefined;
    const mtls = t?.enable_mtls === true;
    const ca =
      mtls && t?.root_ca_certificate != null ? readPemFile(t.root_ca_certificate, "root_ca_certificate") : undefined;
    return { cert: own.cert, key: own.key, mtls, ...(ca !== undefined ? { ca } : {}) };
  } catch (err) {
    throw ZestError.badRequest(`transport.link.tls: ${errorMessage(err)}`);
  }
}

/**
 * Starts the zenoh door: the configured endpoints, or `tcp/127.0.0.1:7447`. Protected mode is
 * the edge policy's (`bindHost`): the default is loopback, and an endpoint off loopback without
 * access control starts with its warning. With access control on, each session is decided as the
 * user its handshake authenticated (zenoh's user/password) or an anonymous client, by its
 * address, link and zid. Connections are capped by the edge policy's guard (`guard`).
 * When the default port is taken (another router on this host), the door takes a free port and
 * says so, so several routers start on one host as typed; a configured endpoint in use is an error.
 */
export async function startZenohDoor(
  config: ListenConfig | undefined,
  ctx: ZenohDoorContext,
): Promise<ZenohServer | undefined> {
  const configured = config?.endpoints;
  if (configured !== undefined && configured.length === 0) return undefined;
  const endpoints: Endpoint[] = (configured ?? []).map((e) => parseEndpoint(e));
  for (const e of endpoints) ctx.bindHost?.(e);
  if (configured !== undefined) {
    const server = new ZenohServer(serverOptions(ctx, endpoints));
    await server.listen();
    return server;
  }
  const byDefault: Endpoint = { protocol: "tcp", host: "127.0.0.1", port: DEFAULT_ZENOH_PORT };
  const server = new ZenohServer(serverOptions(ctx, [byDefault]));
  try {
    await server.listen();
    return server;
  } catch (err) {
    if (!(err instanceof ZestError) || !/in use/.test(err.message)) throw err;
  }
  const fallback = new ZenohServer(serverOptions(ctx, [{ ...byDefault, port: 0 }]));
  await fallback.listen();
  ctx.logger.warn(
    { locators: fallback.locators() },
    `zenoh port ${DEFAULT_ZENOH_PORT} is taken (another router on this host?): listening on a free port instead; give -l to choose`,
  );
  return fallback;
}

/** The server's options for `endpoints`: access control always applies, whichever endpoint is used. */
function serverOptions(ctx: ZenohDoorContext, endpoints: readonly Endpoint[]): ZenohServerOptions {
  return {
    zid: ctx.zid,
    openSession: ctx.openSession,
    connectivity: ctx.connectivity,
    logger: ctx.logger,
    endpoints,
    limits: ctx.limits,
    access: ctx.access,
    usrpwd: ctx.usrpwd,
    sessionBound: ctx.sessionBound,
    admin: ctx.admin,
    guard: ctx.guard,
    ...(ctx.tls !== undefined ? { tls: ctx.tls } : {}),
  };
}
