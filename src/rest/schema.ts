/**
 * `plugins.rest`: the REST gateway's config section, owned by the REST door (docs/rest-gateway.md,
 * docs/security.md). Defaults live here; the server and the configuration reference read them
 * from here, so documentation and behaviour cannot drift.
 */
import { z } from "zod";
import { DEFAULT_PER_ADDRESS } from "../access/connections.js";
import { endpointSchema } from "../access/listen.js";
import { tlsSchema } from "../access/schema.js";
import { closed } from "../config/schema.js";
import { DEFAULT_LONG_POLL } from "./long-poll.js";
import { DEFAULT_RESUME_LOG, MAX_RESUME_LOG } from "./sse-log.js";

/** Largest request body, in bytes. */
export const DEFAULT_BODY_LIMIT = 16 * 1024 * 1024;
/** Rendered GET answers kept by the read cache. */
export const DEFAULT_CACHE_ENTRIES = 1024;
export const DEFAULT_HEADERS_TIMEOUT_MS = 10_000;
/** The whole request (head and body) must arrive within this time; a head's timeout is at most it (Node refuses more). */
export const REQUEST_TIMEOUT_MS = 120_000;
export const DEFAULT_BODY_IDLE_TIMEOUT_MS = 10_000;
export const DEFAULT_RESPONSE_IDLE_TIMEOUT_MS = 30_000;
export const DEFAULT_SSE_LINGER_MS = 300_000;
export const DEFAULT_SSE_RETRY_MS = 3_000;
/** Where the gateway listens with no configuration. */
export const DEFAULT_HTTP_PORT = 8000;
/** How long an HTTP/1.1 connection is kept between requests (longer than common proxies' 60 s). */
export const KEEP_ALIVE_TIMEOUT_MS = 65_000;
/** HTTP/2 with no configuration (docs/http2.md): on, 256 concurrent streams per connection (50 explorer tabs and their reads fit), Node's 10 MB per session, and idle connections kept as HTTP/1.1's keep-alive. */
export const DEFAULT_HTTP2 = {
  enabled: true,
  maxConcurrentStreams: 256,
  maxSessionMemoryMb: 10,
  idleTimeoutMs: KEEP_ALIVE_TIMEOUT_MS,
} as const;

const ms = () => z.number().int().positive();
const count = () => z.number().int().nonnegative();

/**
 * `plugins.rest` for a router serving `variants` (their names, the first the default): the
 * variant's choices come from the registry (`rest/variants.ts`), never from a list written here.
 */
export function restSchema(variants: readonly { name: string; description: string }[]) {
  const names = variants.map((v) => v.name) as [string, ...string[]];
  return closed(
    {
      http_port: endpointSchema("http port", true)
        .default(DEFAULT_HTTP_PORT)
        .describe("a port, `ip:port`, or `none` (a port alone listens on 127.0.0.1 unless access control is on)"),
      variant: z
        .enum(names)
        .default(names[0])
        .describe(`REST variant: ${variants.map((v) => `\`${v.name}\` (${v.description})`).join(", ")}`),
      body_limit: z.number().int().positive().default(DEFAULT_BODY_LIMIT).describe("largest request body in bytes"),
      cache_entries: count().default(DEFAULT_CACHE_ENTRIES).describe("read cache size in entries (0 disables it)"),
      tls: tlsSchema.optional().describe("deprecated: the router's `tls` (still read, with a warning)"),
      cors: closed(
        {
          allowed_origins: z
            .array(z.string().min(1).max(2048))
            .max(1000)
            .default([])
            .describe("origins whose pages may write"),
        },
        "cross-origin writes",
      ).optional(),
      allowed_hosts: z
        .array(z.string().min(1).max(253))
        .max(1000)
        .default([])
        .describe("host names accepted in `Host` for admin writes, besides IP literals and `localhost`"),
      max_connections_per_address: z
        .number()
        .int()
        .positive()
        .optional()
        .describe(
          `open connections per client address (default: a quarter of \`max_connections\`, at most ${DEFAULT_PER_ADDRESS})`,
        ),
      max_connections: z
        .number()
        .int()
        .positive()
        .optional()
        .describe("open connections in all (from the file-descriptor limit)"),
      headers_timeout_ms: ms()
        .max(REQUEST_TIMEOUT_MS)
        .default(DEFAULT_HEADERS_TIMEOUT_MS)
        .describe(`milliseconds to receive a request head (at most ${REQUEST_TIMEOUT_MS}, the whole request's limit)`),
      body_idle_timeout_ms: ms()
        .max(86_400_000)
        .default(DEFAULT_BODY_IDLE_TIMEOUT_MS)
        .describe("milliseconds a body may go without a byte (at most 86400000)"),
      // At most a day: it becomes a timer, and Node fires a timer past 2^31 - 1 ms after 1 ms.
      response_idle_timeout_ms: ms()
        .max(86_400_000)
        .default(DEFAULT_RESPONSE_IDLE_TIMEOUT_MS)
        .describe("milliseconds a streamed answer may wait for the client to read (at most 86400000)"),
      sse: closed(
        {
          resume_log: count()
            .max(MAX_RESUME_LOG.entries)
            .default(DEFAULT_RESUME_LOG.entries)
            .describe(`SSE events kept for resume (0 turns ids off; at most ${MAX_RESUME_LOG.entries})`),
          resume_log_bytes: count()
            .max(MAX_RESUME_LOG.bytes)
            .default(DEFAULT_RESUME_LOG.bytes)
            .describe(`bytes of SSE events kept for resume (at most ${MAX_RESUME_LOG.bytes})`),
          // At most a day: these become timers, and Node fires a timer past 2^31 - 1 ms after 1 ms.
          resume_linger_ms: count()
            .max(86_400_000)
            .default(DEFAULT_SSE_LINGER_MS)
            .describe("how long a key expression stays logged after its last stream closed (at most 86400000)"),
          retry_ms: count()
            .max(86_400_000)
            .default(DEFAULT_SSE_RETRY_MS)
            .describe("the `retry:` hint sent to SSE clients (at most 86400000)"),
        },
        "SSE event ids and resume",
      ).optional(),
      long_poll: closed(
        {
          max_wait_ms: z
            .number()
            .int()
            .positive()
            .max(3_600_000)
            .default(DEFAULT_LONG_POLL.maxWaitMs)
            .describe("longest `_wait` a long-poll GET may ask, in ms (at most 3600000)"),
          max_waits: count().default(DEFAULT_LONG_POLL.maxWaits).describe("long-polls parked at once in all"),
          max_waits_per_address: count()
            .default(DEFAULT_LONG_POLL.maxWaitsPerAddress)
            .describe("long-polls parked at once per client address"),
        },
        "long-poll GETs (`_wait`)",
      ).prefault({}),
      http2: closed(
        {
          enabled: z
            .boolean()
            .default(DEFAULT_HTTP2.enabled)
            .describe("HTTP/2 through ALPN on the TLS port, and with prior knowledge (h2c) on the plain port"),
          max_concurrent_streams: z
            .number()
            .int()
            .min(1)
            .max(65_536)
            .default(DEFAULT_HTTP2.maxConcurrentStreams)
            .describe("concurrent HTTP/2 streams per connection"),
          max_session_memory_mb: z
            .number()
            .int()
            .min(1)
            .max(1024)
            .default(DEFAULT_HTTP2.maxSessionMemoryMb)
            .describe("memory one HTTP/2 connection may hold, in MB"),
          idle_timeout_ms: z
            .number()
            .int()
            .min(0)
            .max(86_400_000)
            .default(DEFAULT_HTTP2.idleTimeoutMs)
            .describe("ms an HTTP/2 connection with no open stream is kept before GOAWAY; 0 keeps it"),
        },
        "HTTP/2 on the REST gateway",
      ).prefault({}),
    },
    "the REST gateway",
  );
}

export type RestConfig = z.output<ReturnType<typeof restSchema>>;
