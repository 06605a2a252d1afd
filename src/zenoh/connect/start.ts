/**
 * Starts the zenoh door's joiner from its config (docs/zenoh-network.md): `connect.endpoints`,
 * `connect.retry`, and for `tls/` endpoints zenohd's `transport.link.tls` connect keys.
 */
import type { DoorContext } from "../../access/front-door.js";
import { readPemFile } from "../../access/tls.js";
import { errorMessage, ZestError } from "../../core/errors.js";
import { parseEndpoint } from "../endpoint.js";
import { DEFAULT_ZENOH_LIMITS } from "../server.js";
import type { TransportConfig } from "../transport-schema.js";
import type { ConnectConfig } from "./schema.js";
import { DEFAULT_BACKOFF, type JoinTls, ZenohJoiner } from "./joiner.js";

/** What the joiner reads of the door's config. */
interface JoinConfig {
  connect?: ConnectConfig | undefined;
  transport?: TransportConfig | undefined;
}

/** The joiner of `connect.endpoints`, started; undefined when there is none. */
export function startJoiner(ctx: DoorContext<JoinConfig>, leaseMs: number | undefined): ZenohJoiner | undefined {
  const c = ctx.config.connect;
  const endpoints = (c?.endpoints ?? []).map((e) => parseEndpoint(e));
  if (endpoints.length === 0) return undefined;
  const initialMs = c?.retry?.period_init_ms ?? DEFAULT_BACKOFF.initialMs;
  const maxMs = Math.max(initialMs, c?.retry?.period_max_ms ?? DEFAULT_BACKOFF.maxMs);
  const joiner = new ZenohJoiner({
    zid: ctx.zid,
    endpoints,
    openSession: ctx.openSession,
    connectivity: ctx.connectivity,
    logger: ctx.logger,
    limits: { ...DEFAULT_ZENOH_LIMITS, ...(leaseMs === undefined ? {} : { leaseMs }) },
    admin: ctx.edge.admin,
    access: ctx.edge.access.enabled ? ctx.edge.access : undefined,
    tls: endpoints.some((e) => e.protocol === "tls") ? joinTls(ctx.config.transport) : undefined,
    backoff: { initialMs, maxMs },
    credentials: credentialsOf(ctx.config.transport),
  });
  ctx.logger.info({ endpoints: c?.endpoints }, "zenoh joining a zenoh network (connect.endpoints)");
  joiner.start();
  return joiner;
}

/** zenohd's connect side of `transport.link.tls`: the root CA, the client certificate, name checks. */
function joinTls(transport: TransportConfig | undefined): JoinTls {
  const t = transport?.link?.tls;
  try {
    return {
      verifyName: t?.verify_name_on_connect !== false,
      ...(t?.root_ca_certificate != null ? { ca: readPemFile(t.root_ca_certificate, "root_ca_certificate") } : {}),
      ...(t?.connect_certificate != null && t.connect_private_key != null
        ? {
            cert: readPemFile(t.connect_certificate, "connect_certificate"),
            key: readPemFile(t.connect_private_key, "connect_private_key"),
          }
        : {}),
    };
  } catch (err) {
    throw ZestError.badRequest(`transport.link.tls: ${errorMessage(err)}`);
  }
}

/** `transport.auth.usrpwd.user`/`password`: zest's credentials toward the routers it joins. */
function credentialsOf(transport: TransportConfig | undefined): { user: string; password: string } | undefined {
  const u = transport?.auth?.usrpwd;
  return u?.user != null && u.password != null ? { user: u.user, password: u.password } : undefined;
}
