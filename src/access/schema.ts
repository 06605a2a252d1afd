/**
 * Config schemas of the security sections, the edge policy's input (docs/security.md): the
 * top-level `access_control` (zenoh 1.x's shape plus zest's credentials and `cidrs`), the router's
 * `tls` that every door speaking TLS shares, and `adminspace`. Objects are strict: an unknown
 * field is a mistake worth a one-line error, not something to ignore.
 */
import * as z from "zod";
import { closed } from "../config/schema.js";
import { DEFAULT_ADMIN_PERMISSIONS } from "./admin-permissions.js";

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

/** zenoh's link protocol names (`InterceptorLink`), all accepted so that a zenohd config loads. */
export const LINK_PROTOCOLS = [
  "tcp",
  "udp",
  "tls",
  "quic",
  "serial",
  "unixpipe",
  "unixsock-stream",
  "vsock",
  "ws",
] as const;
export type LinkProtocol = (typeof LINK_PROTOCOLS)[number];

const subjectSchema = z.strictObject({
  id: name,
  usernames: idList.optional(),
  /** Client address ranges, e.g. `10.0.0.0/8`, `::1/128`, or a single address. */
  cidrs: z.array(z.string().min(1).max(64)).max(LIMIT).optional(),
  /** zenoh session ids (hex, as `z_info` prints them): only zenoh-door sessions have one. */
  zids: z
    .array(z.string().regex(/^[0-9a-fA-F]{1,32}$/, "a zid is 1 to 32 hex digits"))
    .min(1)
    .max(LIMIT)
    .optional(),
  /** The link a client came over: `tcp` (zenoh door), `ws` (remote API), ... */
  link_protocols: z.array(z.enum(LINK_PROTOCOLS)).min(1).max(LINK_PROTOCOLS.length).optional(),
  /** Names of this host's network interfaces a client's connection arrived on (`lo`, `eth0`). */
  interfaces: z.array(z.string().min(1).max(64)).min(1).max(LIMIT).optional(),
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
 * `adminspace`, for a router whose admin layouts are named `layouts` (the REST variants' names,
 * from their registry): its layout, and who may use it on every door (the edge policy's input,
 * docs/security.md). Defaults are `DEFAULT_ADMIN_PERMISSIONS`.
 */
export const adminspaceSchema = (layouts: readonly [string, ...string[]]) =>
  closed(
    {
      layout: z
        .enum(layouts)
        .optional()
        .describe("the admin space's layout, by the REST variant it comes with (default: `plugins.rest.variant`)"),
      permissions: closed(
        {
          read: z.boolean().default(DEFAULT_ADMIN_PERMISSIONS.read).describe("admin reads"),
          write: z
            .union([z.boolean(), z.literal("loopback")])
            .default(DEFAULT_ADMIN_PERMISSIONS.write)
            .describe('admin writes: true, false or "loopback" (from clients on this machine only)'),
        },
        "who may use the admin space, on every door",
      ).optional(),
    },
    "the admin space",
  );
