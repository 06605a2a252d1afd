/**
 * `plugins.remote_api` in the config (zenoh's plugin name and its `websocket_port`), with the
 * limits zest adds. Unknown fields are refused, as zenoh's config structs do. Defaults live here
 * (the configuration reference is generated from them).
 */
import { z } from "zod";
import { DEFAULT_PER_ADDRESS, perAddressCap } from "../access/connections.js";
import { endpointSchema } from "../access/listen.js";
import { closed } from "../config/schema.js";
import { DEFAULT_LIMITS } from "./limits.js";

/** `port`, `ip:port` or `[ipv6]:port`; a number is a port. */
const portSpec = endpointSchema("remote API port");

const positive = () => z.number().int().positive();

export const remoteApiSchema = closed(
  {
    websocket_port: portSpec
      .optional()
      .describe(
        "where the WebSocket server listens: a port or `ip:port` (off when absent; loopback unless an address is given)",
      ),
    max_frame_bytes: positive()
      .default(DEFAULT_LIMITS.maxFrameBytes)
      .describe("largest frame a client may send, in bytes (a larger one closes the connection with 1009)"),
    max_declarations: positive()
      .default(DEFAULT_LIMITS.maxDeclarations)
      .describe("declarations one connection may hold"),
    max_pending_gets: positive()
      .default(DEFAULT_LIMITS.maxPendingGets)
      .describe(
        "gets one connection may have in flight before one is refused, a memory bound: the connection is no longer read from 16384 in flight until one ends",
      ),
    max_pending_queries: positive()
      .default(DEFAULT_LIMITS.maxPendingQueries)
      .describe("queries waiting for one connection's queryables (as zenoh's plugin)"),
    max_buffered_bytes: positive()
      .default(DEFAULT_LIMITS.maxBufferedBytes)
      .describe("bytes queued for a client that does not read before it is dropped"),
    max_connections: positive().default(DEFAULT_LIMITS.maxConnections).describe("connections at once"),
    max_connections_per_address: positive()
      .optional()
      .describe(
        `open connections per client address (default: a quarter of \`max_connections\`, at most ${DEFAULT_PER_ADDRESS})`,
      ),
  },
  "the zenoh-ts remote API over WebSocket (off unless websocket_port is set)",
).transform((c) => ({
  ...c,
  // Known once max_connections is: the parsed section holds the cap the door applies.
  max_connections_per_address: c.max_connections_per_address ?? perAddressCap(c.max_connections),
}));

export type RemoteApiConfig = z.output<typeof remoteApiSchema>;
