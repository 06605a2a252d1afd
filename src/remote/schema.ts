/**
 * `plugins.remote_api` in the config (zenoh's plugin name and its `websocket_port`), with the
 * limits zest adds. Unknown fields are refused, as zenoh's config structs do.
 */
import { z } from "zod";

/** `port`, `ip:port` or `[ipv6]:port`; a number is a port. */
const portSpec = z.union([
  z.number().int().min(0).max(65535),
  z.string().regex(/^(?:.*:)?\d{1,5}$/, "expected a port or ip:port"),
]);

export const remoteApiSchema = z
  .object({
    /** Where the WebSocket server listens (off when absent). Loopback unless an address is given. */
    websocket_port: portSpec.optional(),
    /** Largest frame a client may send, in bytes (default 16 MiB; 1009 beyond it). */
    max_frame_bytes: z.number().int().positive().optional(),
    /** Declarations one connection may hold (default 10 000). */
    max_declarations: z.number().int().positive().optional(),
    /** Gets one connection may have in flight (default 1 000). */
    max_pending_gets: z.number().int().positive().optional(),
    /** Queries waiting for one connection's queryables (default 1 000, as zenoh's plugin). */
    max_pending_queries: z.number().int().positive().optional(),
    /** Bytes queued for a client that does not read before it is dropped (default 16 MiB). */
    max_buffered_bytes: z.number().int().positive().optional(),
    /** Connections at once (default 1 000). */
    max_connections: z.number().int().positive().optional(),
  })
  .strict();

export type RemoteApiConfig = z.infer<typeof remoteApiSchema>;

/** Reads `plugins.remote_api`; throws an Error with a one-line reason naming the field. */
export function parseRemoteApiConfig(value: unknown): RemoteApiConfig {
  const r = remoteApiSchema.safeParse(value ?? {});
  if (r.success) return r.data;
  const issue = r.error.issues[0]!;
  const path = ["plugins", "remote_api", ...issue.path.map(String)].join(".");
  throw new Error(`${path}: ${issue.message}`);
}

/** Where to listen: `{ host?, port }`, or undefined when the server is off. */
export function parseWebsocketPort(value: number | string | undefined): { host?: string; port: number } | undefined {
  if (value === undefined) return undefined;
  const s = String(value).trim();
  const colon = s.lastIndexOf(":");
  const host = colon === -1 ? undefined : s.slice(0, colon).replace(/^\[|\]$/g, "");
  const port = Number(colon === -1 ? s : s.slice(colon + 1));
  if (!Number.isInteger(port) || port < 0 || port > 65535)
    throw new Error(`invalid remote API port "${s}": expected a port or ip:port`);
  return host === undefined || host === "" ? { port } : { host, port };
}
