/**
 * The one schema of zest's configuration: the `-c` file, `--cfg` overrides and flags (checked
 * once merged), the `--data-dir` saved state, and storage and volume bodies written through the
 * admin space. Every object is closed: an unknown key is refused, naming it and the closest
 * valid key. The README's configuration reference is generated from this file
 * (`npm run docs:config`).
 */
import { z } from "zod";
import { accessControlSchema, restSecuritySchema } from "../access/schema.js";
import { remoteApiSchema } from "../remote/schema.js";
// The storage section lives with the storage side; the root schema is to be composed above both.
import { storageManagerSchema } from "../storage/schema.js";
import { closed } from "./closed-schema.js";

export { depthProblem, describeIssue, MAX_DEPTH, problems } from "./closed-schema.js";
export { savedStateSchema, storageManagerSchema, storageSchema, volumeSchema } from "../storage/schema.js";

/**
 * Sections whose schemas live with the code that reads them. Replace an entry by that module's
 * schema to have it checked here too (and documented in the README reference).
 */
export const sections = {
  /** Top-level `access_control` (zenoh's shape, applied to every front door). */
  access_control: accessControlSchema.describe(
    "access control: rules, subjects, policies, users and tokens (see Security)",
  ),
  /** Keys of `plugins.rest` owned by the REST front door. */
  rest: restSecuritySchema.shape,
  /** Plugins with their own schema, by name. */
  plugins: {
    remote_api: remoteApiSchema.describe("the zenoh-ts remote API over WebSocket (off unless websocket_port is set)"),
  },
};

const hexId = z.string().regex(/^([0-9a-fA-F]{2}){1,16}$/, "expected 1 to 16 bytes of hex");

const httpPort = z
  .union([z.number().int().min(0).max(65535), z.string()])
  .describe("a port, `ip:port`, or `none` (default 8000)");

export const restSchema = closed(
  {
    http_port: httpPort.optional(),
    variant: z
      .enum(["a", "b"])
      .optional()
      .describe("REST variant: `a` (zenoh 0.6 style, default) or `b` (zenoh 0.4 style)"),
    body_limit: z.number().int().positive().optional().describe("largest request body in bytes (16777216)"),
    cache_entries: z.number().int().nonnegative().optional().describe("read cache size in entries (0 disables it)"),
    tls: sections.rest.tls.describe("HTTPS: `{ listen_certificate, listen_private_key }` (PEM files)"),
    cors: sections.rest.cors.describe("cross-origin writes: `{ allowed_origins: [...] }`"),
    allowed_hosts: sections.rest.allowed_hosts.describe("host names accepted in `Host` for admin writes"),
    max_connections_per_address: sections.rest.max_connections_per_address.describe(
      "open connections per client address (64)",
    ),
    max_connections: sections.rest.max_connections.describe("open connections in all (from the file-descriptor limit)"),
    headers_timeout_ms: sections.rest.headers_timeout_ms.describe("milliseconds to receive a request head (10000)"),
    body_idle_timeout_ms: sections.rest.body_idle_timeout_ms.describe(
      "milliseconds a body may go without a byte (10000)",
    ),
    response_idle_timeout_ms: sections.rest.response_idle_timeout_ms.describe(
      "milliseconds a streamed answer may wait for the client to read (30000, at most 86400000)",
    ),
    sse: closed(
      {
        resume_log: z
          .number()
          .int()
          .nonnegative()
          .optional()
          .describe("SSE events kept for resume (10000; 0 turns ids off)"),
        resume_log_bytes: z
          .number()
          .int()
          .nonnegative()
          .optional()
          .describe("bytes of SSE events kept for resume (16777216)"),
        resume_linger_ms: z
          .number()
          .int()
          .nonnegative()
          .optional()
          .describe("how long a key expression stays logged after its last stream closed (300000)"),
        retry_ms: z.number().int().nonnegative().optional().describe("the `retry:` hint sent to SSE clients (3000)"),
      },
      "SSE event ids and resume",
    ).optional(),
  },
  "the REST gateway",
);

const positiveMs = (what: string) => z.number().int().positive().optional().describe(what);

export const fabricSchema = closed(
  {
    nats: closed(
      {
        servers: z
          .union([z.array(z.string()), z.string()])
          .optional()
          .describe("NATS URLs, a list or a comma-separated string"),
        heartbeat_ms: positiveMs("peer heartbeat period (1000)"),
        peer_timeout_ms: positiveMs("a peer silent this long is gone (4000)"),
        ack_timeout_ms: positiveMs("wait this long for a write's acknowledgements (5000)"),
        connect_timeout_ms: positiveMs("NATS connection timeout (5000)"),
        reconnect_time_wait_ms: positiveMs("pause between reconnection attempts (250)"),
      },
      "the NATS fabric",
    ).optional(),
  },
  "how routers reach each other",
);

export const adminspaceSchema = closed(
  {
    permissions: closed(
      {
        read: z.boolean().optional().describe("admin reads over HTTP (true)"),
        write: z
          .union([z.boolean(), z.literal("loopback")])
          .optional()
          .describe('admin writes over HTTP: true, false or "loopback" (default)'),
      },
      "who may use the admin space over HTTP",
    ).optional(),
  },
  "the admin space",
);

/** `plugins`: the built-in ones are checked; any other key is the config of a `-P` plugin. */
export const pluginsSchema = z
  .looseObject({
    rest: restSchema.optional(),
    storage_manager: storageManagerSchema.optional(),
    remote_api: sections.plugins.remote_api.optional(),
  })
  .describe("plugins: built-in ones, and any other key is the config of the -P plugin of that name");

/** The whole configuration. */
export const configSchema = closed(
  {
    id: hexId.optional().describe("router id, 1 to 16 bytes of hex (default: random)"),
    data_dir: z.string().optional().describe("where run-time storages and file volumes are kept"),
    queries_default_timeout: z.number().positive().optional().describe("default query timeout in ms (10000)"),
    adminspace: adminspaceSchema.optional(),
    plugins: pluginsSchema.optional(),
    fabric: fabricSchema.optional(),
    access_control: sections.access_control.optional(),
  },
  "zest configuration",
);
