/**
 * The REST gateway as a front door (docs/adding-a-front-door.md, docs/rest-gateway.md): on by
 * default (`plugins.rest.http_port`, 8000; `none` turns it off), in the variant the config names.
 */
import type { DoorFlag, FrontDoor } from "../access/front-door.js";
import { parseEndpoint, urlOf } from "../access/listen.js";
import { ConfigError, positiveInteger } from "../config/config.js";
import type { RestVariant } from "./codec.js";
import { declareOpenApi } from "./openapi.js";
import { restSchema } from "./schema.js";
import { RestServer } from "./server.js";
import { BUILTIN_VARIANTS } from "./variants.js";

/** How logs and errors name this door. */
export const REST_TITLE = "REST gateway";

/** `a (zenoh 0.6 style) or b (zenoh 0.4 style)`: the registered variants, for the help. */
function choices(variants: readonly RestVariant[]): string {
  const each = variants.map((v) => `${v.name} (${v.description})`);
  return each.length === 1 ? each[0]! : `${each.slice(0, -1).join(", ")} or ${each[each.length - 1]}`;
}

/** The REST door's flags (`--rest-http-port`, `--rest-variant`, `--body-limit`), each parsing its own value. */
function restFlags(variants: readonly RestVariant[]): DoorFlag[] {
  return [
    {
      flag: "--rest-http-port",
      value: "port",
      description:
        "REST gateway port: a port, ip:port, or none to disable (default 8000; a port alone listens on 127.0.0.1 unless access control is on)",
      path: ["plugins", "rest", "http_port"],
      parse: (given) => {
        parseEndpoint(String(given), "http port", true);
        return given;
      },
    },
    {
      flag: "--rest-variant",
      value: "variant",
      description: `REST variant: ${choices(variants)}`,
      choices: variants.map((v) => v.name),
      path: ["plugins", "rest", "variant"],
    },
    {
      flag: "--body-limit",
      value: "bytes",
      description: "largest request body the REST gateway accepts (16777216)",
      path: ["plugins", "rest", "body_limit"],
      parse: (given) => positiveInteger(String(given), "--body-limit"),
    },
  ];
}

/**
 * The REST door, serving one of `variants` (the registry, `rest/variants.ts`; the first is the
 * default) as `plugins.rest.variant` says: the section's choices and `--rest-variant`'s are theirs.
 */
export function restDoor(variants: readonly RestVariant[] = BUILTIN_VARIANTS) {
  const schema = restSchema(variants);
  return {
    name: "rest",
    title: REST_TITLE,
    schema,
    flags: restFlags(variants),
    async start(ctx) {
      const cfg = ctx.config;
      const endpoint = parseEndpoint(cfg.http_port, "http port", true);
      if (endpoint === undefined) return undefined;
      const variant = variants.find((v) => v.name === cfg.variant);
      if (variant === undefined) throw new ConfigError(`REST variant ${cfg.variant} is not available`);
      const { edge } = ctx;
      // The router's TLS material (`tls`), loaded into the edge policy by the runtime.
      const tls = edge.tls;
      const host = edge.bindHost({ title: REST_TITLE, openHint: "--rest-http-port 0.0.0.0:8000" }, endpoint);
      const sse = cfg.sse;
      const session = ctx.openSession("rest");
      const server = new RestServer({
        session,
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
          maxWaitMs: cfg.long_poll.max_wait_ms,
          maxWaits: cfg.long_poll.max_waits,
          maxWaitsPerAddress: cfg.long_poll.max_waits_per_address,
        },
        http2: {
          enabled: cfg.http2.enabled,
          maxConcurrentStreams: cfg.http2.max_concurrent_streams,
          maxSessionMemoryMb: cfg.http2.max_session_memory_mb,
          idleTimeoutMs: cfg.http2.idle_timeout_ms,
        },
      });
      const addr = await server.listen();
      ctx.httpMetrics.reportHttp({
        variant: variant.name,
        responseBytes: () => server.responseBytes,
        sse: () => server.sseStatus,
        longPoll: () => server.longPollStatus,
      });
      const openApi = declareOpenApi(session, variant.openApi, ctx.version);
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
        close: () => {
          openApi.close();
          return server.close();
        },
      };
    },
  } satisfies FrontDoor<"rest", typeof schema>;
}
