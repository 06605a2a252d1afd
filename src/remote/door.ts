/**
 * The remote API as a front door (docs/adding-a-front-door.md, docs/remote-api.md): off unless
 * `plugins.remote_api.websocket_port` is set; shares the router's access control and TLS
 * material (`wss`).
 */
import type { FrontDoor } from "../access/front-door.js";
import { parseEndpoint } from "../access/listen.js";
import { remoteClientPolicy } from "./access.js";
import { remoteApiSchema } from "./schema.js";
import { REMOTE_API_TITLE, RemoteApiServer } from "./server.js";

export const remoteApiDoor: FrontDoor<"remote_api", typeof remoteApiSchema> = {
  name: "remote_api",
  title: REMOTE_API_TITLE,
  schema: remoteApiSchema,
  flags: [
    {
      flag: "--remote-api-port",
      value: "port",
      path: ["plugins", "remote_api", "websocket_port"],
      description: "serve the zenoh-ts remote API over WebSocket on a port or ip:port (off by default)",
    },
  ],
  async start(ctx) {
    const cfg = ctx.config;
    if (cfg.websocket_port === undefined) return undefined;
    const endpoint = parseEndpoint(cfg.websocket_port, "plugins.remote_api.websocket_port")!;
    const { edge } = ctx;
    const host = edge.bindHost(
      { title: REMOTE_API_TITLE, openHint: "--remote-api-port 0.0.0.0:<port>", defaultHost: "loopback" },
      endpoint,
    );
    const server = new RemoteApiServer({
      openSession: ctx.openSession,
      connectivity: ctx.connectivity,
      port: endpoint.port,
      host,
      logger: ctx.logger,
      policy: remoteClientPolicy(edge),
      sessionBound: edge.sessionBound,
      tls: edge.tls,
      guard: edge.connectionGuard({ perAddress: cfg.max_connections_per_address, total: cfg.max_connections }),
      limits: {
        maxFrameBytes: cfg.max_frame_bytes,
        maxDeclarations: cfg.max_declarations,
        maxPendingGets: cfg.max_pending_gets,
        maxPendingQueries: cfg.max_pending_queries,
        maxBufferedBytes: cfg.max_buffered_bytes,
        maxConnections: cfg.max_connections,
      },
    });
    const addr = await server.listen();
    const scheme = edge.tls ? "wss" : "ws";
    const shown = addr.address.includes(":") ? `[${addr.address}]` : addr.address;
    const url = `${scheme}://${shown}:${addr.port}`;
    ctx.logger.info({ url, locator: `${scheme}/${shown}:${addr.port}` }, "remote API listening (zenoh-ts clients)");
    return {
      locators: () => [url],
      status: () => ({ websocket_port: `${shown}:${addr.port}`, connections: server.connectionCount }),
      counters: () => ({ connections: server.connectionCount, refused: server.refused }),
      close: () => server.close(),
    };
  },
};
