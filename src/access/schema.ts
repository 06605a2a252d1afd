/**
 * Config schemas of the security sections (docs/security.md): the top-level `access_control`
 * (zenoh 1.x's shape plus zest's credentials and `cidrs`) and the security options of
 * `plugins.rest` (TLS, CORS, allowed hosts, connection limits). Objects are strict: an unknown
 * field is a mistake worth a one-line error, not something to ignore.
 */
import * as z from "zod";

/** The messages a rule can govern (zenoh 1.x names). */
export const MESSAGES = [
  "put",
  "delete",
  "query",
  "declare_subscriber",
  "declare_queryable",
  "liveliness_token",
  "declare_liveliness_subscriber",
  "liveliness_query",
] as const;
export type Message = (typeof MESSAGES)[number];

const LIMIT = 10_000;
const name = z.string().min(1).max(256);
const idList = z.array(name).max(LIMIT);

const ruleSchema = z.strictObject({
  id: name,
  messages: z.array(z.enum(MESSAGES)).min(1).max(MESSAGES.length),
  key_exprs: z.array(z.string().min(1).max(4096)).min(1).max(LIMIT),
  permission: z.enum(["allow", "deny"]),
  /** zenoh's flows; zest applies rules to what clients ask (ingress), so a rule must include it. */
  flows: z
    .array(z.enum(["ingress", "egress"]))
    .min(1)
    .optional()
    .refine(
      (f) => f === undefined || f.includes("ingress"),
      'zest applies rules to client requests: flows must include "ingress"',
    ),
});

const subjectSchema = z.strictObject({
  id: name,
  usernames: idList.optional(),
  /** Client address ranges, e.g. `10.0.0.0/8`, `::1/128`, or a single address. */
  cidrs: z.array(z.string().min(1).max(64)).max(LIMIT).optional(),
});

const policySchema = z.strictObject({
  id: name.optional(),
  rules: idList,
  subjects: idList,
});

const userSchema = z.strictObject({
  name,
  /** `zest passwd` output: `$scrypt$ln=..,r=..,p=..$salt$hash`. */
  password_hash: z.string().min(1).max(512),
});

const tokenSchema = z.strictObject({
  /** The token's id: a Bearer token is `<id>.<secret>`, and the id says which hash to check. */
  id: z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, "a token id is 1 to 64 letters, digits, _ or -"),
  /** The user the token authenticates as. */
  user: name,
  token_hash: z.string().min(1).max(512),
});

/** `access_control`: zenoh 1.x's rules, subjects and policies, plus zest's users and tokens. */
export const accessControlSchema = z.strictObject({
  enabled: z.boolean().default(false),
  default_permission: z.enum(["allow", "deny"]).default("deny"),
  rules: z.array(ruleSchema).max(LIMIT).default([]),
  subjects: z.array(subjectSchema).max(LIMIT).default([]),
  policies: z.array(policySchema).max(LIMIT).default([]),
  users: z.array(userSchema).max(LIMIT).default([]),
  tokens: z.array(tokenSchema).max(LIMIT).default([]),
});
export type AccessControlConfig = z.infer<typeof accessControlSchema>;
export type AccessControlInput = z.input<typeof accessControlSchema>;

/** `plugins.rest.tls`: PEM file paths. */
export const tlsSchema = z.strictObject({
  listen_certificate: z.string().min(1),
  listen_private_key: z.string().min(1),
});
export type TlsConfig = z.infer<typeof tlsSchema>;

/**
 * The security options of `plugins.rest` (the other options, `http_port`, `variant`...,
 * belong to the root schema): parse `plugins.rest` with `restSecuritySchema` after picking
 * these keys, or merge its shape into the REST plugin's schema.
 */
export const restSecuritySchema = z.object({
  tls: tlsSchema.optional(),
  cors: z.strictObject({ allowed_origins: z.array(z.string().min(1).max(2048)).max(1000).default([]) }).optional(),
  /** Host names admin writes (and same-origin browser writes) accept besides IP literals and `localhost`. */
  allowed_hosts: z.array(z.string().min(1).max(253)).max(1000).optional(),
  /** Open connections per client address (64). */
  max_connections_per_address: z.number().int().positive().optional(),
  /** Open connections in all (derived from the file-descriptor limit when unset). */
  max_connections: z.number().int().positive().optional(),
  /** Milliseconds to receive a request head (10 000). */
  headers_timeout_ms: z.number().int().positive().optional(),
  /** Milliseconds a request body may go without receiving a byte (10 000). */
  body_idle_timeout_ms: z.number().int().positive().optional(),
  /**
   * Milliseconds a streamed GET answer may wait for the client to take the next chunk (30 000),
   * at most a day: it becomes a timer, and Node fires a timer past 2^31 - 1 ms after 1 ms.
   */
  response_idle_timeout_ms: z.number().int().positive().max(86_400_000).optional(),
});
export type RestSecurityConfig = z.infer<typeof restSecuritySchema>;

/** The keys of `plugins.rest` that `restSecuritySchema` reads. */
export const REST_SECURITY_KEYS = [
  "tls",
  "cors",
  "allowed_hosts",
  "max_connections_per_address",
  "max_connections",
  "headers_timeout_ms",
  "body_idle_timeout_ms",
  "response_idle_timeout_ms",
] as const;

/** A zod error as one line: `path: message; path: message`. */
export function zodMessage(prefix: string, err: z.ZodError): string {
  const issues = err.issues.slice(0, 3).map((i) => `${[prefix, ...i.path.map(String)].join(".")}: ${i.message}`);
  return issues.join("; ");
}
