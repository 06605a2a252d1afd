/**
 * The REST gateway as a front door (docs/adding-a-front-door.md, docs/rest-gateway.md): on by
 * default (`plugins.rest.http_port`, 8000; `none` turns it off), in the variant the config names.
 */
import type { FrontDoor } from "../access/front-door.js";
import { parseEndpoint, urlOf } from "../access/listen.js";
import { ConfigError } from "../config/config.js";
import type { RestVariant } from "./codec.js";
import { restSchema } from "./schema.js";
import { RestServer } from "./server.js";

/** How logs and errors name this door. */
export const REST_TITLE = "REST gateway";

/** The REST door, serving one of `variants` (Variant A first) as `plugins.rest.variant` says. */
export function restDoor(variants: readonly RestVariant[]): FrontDoor<"rest", typeof restSchema> {
  return {
    name: "rest",
    title: REST_TITLE,
    schema: restSchema,
    async start(ctx) {
      const cfg = ctx.config;
      const endpoint = parseEndpoint(cfg.http_port, "http port", true);
      if (endpoint === undefined) return undefined;
      const variant = variants.find((v) => v.name === cfg.variant);
      if (variant === undefined) throw new ConfigError(`REST variant ${cfg.variant} is not available`);
      const { edge } = ctx;
      // `plugins.rest.tls` is the router's TLS material: the runtime loads it into the edge policy.
      const tls = edge.tls;
      const host = edge.bindHost({ title: REST_TITLE, openHint: "--rest-http-port 0.0.0.0:8000" }, endpoint);
      const sse = cfg.sse;
      const server = new RestServer({
        session: ctx.openSession("rest"),
        codec: variant.codec,
        port: endpoint.port,
        host,
        bodyLimit: cfg.body_limit,
        cacheEntries: cfg.cache_entries,
        permissions: edge.admin,
        logger: ctx.logger,
        access: edge.access,
        tls,
        allowedOrigins: cfg.cors?.allowed_origins ?? [],
        allowedHosts: cfg.allowed_hosts,
        maxConnectionsPerAddress: cfg.max_connections_per_address,
        maxConnections: cfg.max_connections,
        headersTimeoutMs: cfg.headers_timeout_ms,
        bodyIdleTimeoutMs: cfg.body_idle_timeout_ms,
        responseIdleTimeoutMs: cfg.response_idle_timeout_ms,
        metrics: ctx.httpMetrics,
        sse: sse && {
          resumeLog: sse.resume_log,
          resumeLogBytes: sse.resume_log_bytes,
          resumeLingerMs: sse.resume_linger_ms,
          retryMs: sse.retry_ms,
        },
        longPoll: {
          maxWaitMs: cfg.long_poll?.max_wait_ms,
          maxWaits: cfg.long_poll?.max_waits,
          maxWaitsPerAddress: cfg.long_poll?.max_waits_per_address,
        },
        http2: {
          enabled: cfg.http2?.enabled,
          maxConcurrentStreams: cfg.http2?.max_concurrent_streams,
          maxSessionMemoryMb: cfg.http2?.max_session_memory_mb,
          idleTimeoutMs: cfg.http2?.idle_timeout_ms,
        },
      });
      const addr = await server.listen();
      ctx.httpMetrics.reportHttp({
        responseBytes: () => server.responseBytes,
        sse: () => server.sseStatus,
        longPoll: () => server.longPollStatus,
      });
      const url = urlOf(tls ? "https" : "http", host, addr.port);
      ctx.logger.info({ zid: ctx.zid, url, variant: variant.name }, "REST gateway listening");
      return {
        locators: () => [url],
        status: () => ({
          http_port: host === undefined ? String(addr.port) : `${host}:${addr.port}`,
          sse_streams: server.sseStreams,
          sse_dropped: server.sseStatus.dropped,
          long_polls: server.longPolls,
          variant: variant.name,
        }),
        counters: () => ({ connections: server.connections.open, refused: server.connections.refused }),
        close: () => server.close(),
      };
    },
  };
}
