/**
 * The one schema of zest's configuration: the `-c` file, `--cfg` overrides and flags (checked
 * once merged), the `--data-dir` saved state, and storage and volume bodies written through the
 * admin space. Every object is closed: an unknown key is refused, naming it and the closest
 * valid key. The README's configuration reference is generated from this file
 * (`npm run docs:config`).
 */
import { closest } from "fastest-levenshtein";
import { z } from "zod";
import { accessControlSchema, restSecuritySchema } from "../access/schema.js";
import { remoteApiSchema } from "../remote/schema.js";

/** Deepest nesting accepted in a config value or an admin body (objects and arrays). */
export const MAX_DEPTH = 64;

/** A schema with the keys it knows, so an unknown key can be answered with the closest one. */
function closed<T extends z.ZodRawShape>(shape: T, description: string) {
  const known = Object.keys(shape);
  return z
    .strictObject(shape, {
      error: (iss) =>
        iss.code === "unrecognized_keys" && known.length > 0
          ? `did you mean ${closest(String(iss.keys[0]), known)}?`
          : undefined,
    })
    .describe(description);
}

/** The one name a plain object reads as its prototype. */
const PROTO = "__proto__";

/**
 * A map of names (storages, volumes) to values. zod's record skips a `__proto__` key, so that
 * entry is checked here: names are data, and every name must be valid like any other.
 */
function names<T extends z.ZodType>(value: T, description: string) {
  return z
    .unknown()
    .superRefine((map, ctx) => {
      if (typeof map !== "object" || map === null || !Object.hasOwn(map, PROTO)) return;
      const r = value.safeParse((map as Record<string, unknown>)[PROTO]);
      for (const issue of r.error?.issues ?? [])
        ctx.addIssue({ ...issue, path: [PROTO, ...issue.path] } as Parameters<typeof ctx.addIssue>[0]);
    })
    .pipe(z.record(z.string(), value))
    .describe(description);
}

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

/** A volume: `backend` (or Variant B's `lib`) names the driver; the rest are driver options. */
export const volumeSchema = z
  .looseObject({
    backend: z
      .string()
      .optional()
      .describe("driver: `memory`, `sqlite`, `influxdb`, `jetstream` (default: the volume's name)"),
    lib: z.string().optional().describe("Variant B's name for `backend` (`sqlite3`, `influxdb`...)"),
    adopt_existing: z
      .boolean()
      .optional()
      .describe("SQLite: open a database zest did not create (config file only; never from the admin space)"),
  })
  .describe("a volume; other keys are options of its driver, checked by the driver");

/** A storage: a key expression over a volume. */
export const storageSchema = closed(
  {
    key_expr: z.string().describe("key expression the storage holds"),
    volume: z
      .union([z.string(), z.looseObject({ id: z.string().min(1) })])
      .describe("volume name, or `{ id, ...storage options of its driver }`"),
    selector: z.string().optional().describe("Variant B: the selector as it was written (shown back in listings)"),
  },
  "a storage",
);

export const storageManagerSchema = closed(
  {
    volumes: names(volumeSchema, "volumes by name").optional(),
    storages: names(storageSchema, "storages by name").optional(),
    allowed_paths: z
      .array(z.string())
      .optional()
      .describe("directories (besides `data_dir`) where volumes created at run time may open files"),
    allowed_hosts: z
      .array(z.string())
      .optional()
      .describe(
        "hosts (`host` or `host:port`) volumes created at run time may reach; default: those of the configured volumes",
      ),
  },
  "storages and volumes",
);

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
    long_poll: closed(
      {
        max_wait_ms: z
          .number()
          .int()
          .positive()
          .max(3_600_000)
          .optional()
          .describe("longest `_wait` a long-poll GET may ask, in ms (300000)"),
        max_waits: z.number().int().nonnegative().optional().describe("long-polls parked at once in all (10000)"),
        max_waits_per_address: z
          .number()
          .int()
          .nonnegative()
          .optional()
          .describe("long-polls parked at once per client address (1000)"),
      },
      "long-poll GETs (`_wait`)",
    ).optional(),
    http2: closed(
      {
        enabled: z.boolean().optional().describe("HTTP/2 through ALPN on the TLS port (true)"),
        max_concurrent_streams: z
          .number()
          .int()
          .min(1)
          .max(65_536)
          .optional()
          .describe("concurrent HTTP/2 streams per connection (256)"),
        max_session_memory_mb: z
          .number()
          .int()
          .min(1)
          .max(1024)
          .optional()
          .describe("memory one HTTP/2 connection may hold, in MB (10)"),
      },
      "HTTP/2 on the TLS port",
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

/** `<data-dir>/storage_manager.json`: run-time changes, and what was removed from the config. */
export const savedStateSchema = closed(
  {
    volumes: names(volumeSchema, "volumes by name").optional(),
    storages: names(storageSchema, "storages by name").optional(),
    removedStorages: z.array(z.string()).optional(),
    removedVolumes: z.array(z.string()).optional(),
  },
  "saved storage manager state",
);

/** One problem found in a value, as a one-line reason. */
export function describeIssue(issue: z.core.$ZodIssue, prefix: readonly string[]): string {
  const path = [...prefix, ...issue.path.map(String)];
  if (issue.code === "unrecognized_keys") {
    const keys = issue.keys.map((k) => [...path, k].join("."));
    const hint = issue.message.startsWith("did you mean") ? ` (${issue.message})` : "";
    return keys.length === 1 ? `unknown key ${keys[0]}${hint}` : `unknown keys ${keys.join(", ")}${hint}`;
  }
  return `${path.length > 0 ? path.join(".") : "value"}: ${issue.message}`;
}

/**
 * Checks `value` against `schema` (after its depth); returns the one-line reasons, first
 * problem first, or an empty list when it is valid.
 */
export function problems(schema: z.ZodType, value: unknown, prefix: readonly string[] = []): string[] {
  const deep = depthProblem(value, prefix);
  if (deep) return [deep];
  const r = schema.safeParse(value);
  return r.success ? [] : r.error.issues.map((i) => describeIssue(i, prefix));
}

/** A reason when `value` nests deeper than `MAX_DEPTH`, measured without recursion. */
export function depthProblem(value: unknown, prefix: readonly string[] = [], limit = MAX_DEPTH): string | undefined {
  const stack: Array<[unknown, number]> = [[value, 0]];
  while (stack.length > 0) {
    const [v, depth] = stack.pop()!;
    if (typeof v !== "object" || v === null) continue;
    if (depth + 1 > limit)
      return `${prefix.length > 0 ? `${prefix.join(".")}: ` : ""}value nested deeper than ${limit} levels`;
    for (const child of Object.values(v)) stack.push([child, depth + 1]);
  }
  return undefined;
}
