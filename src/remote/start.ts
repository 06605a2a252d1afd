import type { AccessControl } from "../access/access.js";
import { ConfigError } from "../config/config.js";
import { errorMessage } from "../core/errors.js";
import type { Logger } from "../core/log.js";
import type { Router } from "../core/router.js";
import { parseRemoteApiConfig, parseWebsocketPort } from "./schema.js";
import { accessAuthorizer } from "./access.js";
import { defaultAuthorizer, RemoteApiServer, type RemoteApiServerOptions } from "./server.js";

/**
 * Starts the remote API from `plugins.remote_api` when `websocket_port` is set; returns the
 * server and its `ws://` URL, or undefined when it is off. A bad section is a ConfigError.
 */
export async function startRemoteApi(
  router: Router,
  section: unknown,
  options: {
    logger: Logger;
    adminWrite?: boolean | "loopback";
    adminRead?: boolean;
    /** `wss` with the REST gateway's certificate and key. */
    tls?: RemoteApiServerOptions["tls"];
    /** The router's access control, shared with REST (docs/security.md). */
    access?: AccessControl;
  },
): Promise<{ server: RemoteApiServer; url: string } | undefined> {
  let bind: { host?: string; port: number } | undefined;
  let cfg: ReturnType<typeof parseRemoteApiConfig>;
  try {
    cfg = parseRemoteApiConfig(section);
    bind = parseWebsocketPort(cfg.websocket_port);
  } catch (err) {
    throw new ConfigError(errorMessage(err));
  }
  if (!bind) return undefined;
  const server = new RemoteApiServer({
    router,
    port: bind.port,
    host: bind.host,
    logger: options.logger.child({ plugin: "remote_api" }),
    authorizer:
      options.access && accessAuthorizer(options.access, defaultAuthorizer(options.adminWrite, options.adminRead)),
    tls: options.tls,
    limits: {
      ...(cfg.max_frame_bytes ? { maxFrameBytes: cfg.max_frame_bytes } : {}),
      ...(cfg.max_declarations ? { maxDeclarations: cfg.max_declarations } : {}),
      ...(cfg.max_pending_gets ? { maxPendingGets: cfg.max_pending_gets } : {}),
      ...(cfg.max_pending_queries ? { maxPendingQueries: cfg.max_pending_queries } : {}),
      ...(cfg.max_buffered_bytes ? { maxBufferedBytes: cfg.max_buffered_bytes } : {}),
      ...(cfg.max_connections ? { maxConnections: cfg.max_connections } : {}),
    },
  });
  const addr = await server.listen();
  const host = addr.address.includes(":") ? `[${addr.address}]` : addr.address;
  const url = `${options.tls ? "wss" : "ws"}://${host}:${addr.port}`;
  options.logger.info(
    { url, locator: `${options.tls ? "wss" : "ws"}/${host}:${addr.port}` },
    "remote API listening (zenoh-ts clients)",
  );
  return { server, url };
}
