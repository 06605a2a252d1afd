/**
 * The zenoh door's config, one schema composing its sections, kept at the root of the
 * configuration with zenohd's names (docs/zenoh-protocol.md, docs/zenoh-network.md): `listen`
 * (here), `connect` (connect/schema.ts), `scouting` (scouting/schema.ts) and `transport`
 * (transport-schema.ts). Parsed once with the whole configuration: the door and scouting get
 * their sections with every default filled. Kept apart from the door so the config schema does
 * not load the door.
 */
import { z } from "zod";
import { closed } from "../config/schema.js";
import { errorMessage } from "../core/errors.js";
import { connectSchema } from "./connect/schema.js";
import { parseEndpoint } from "./endpoint.js";
import { scoutingSchema } from "./scouting/schema.js";
import { transportSchema } from "./transport-schema.js";

/** One endpoint, parsed here so a malformed one is refused at start with its path (`listen.endpoints.0`). */
const endpoint = z
  .string()
  .max(256)
  .superRefine((text, ctx) => {
    try {
      parseEndpoint(text);
    } catch (err) {
      ctx.addIssue({ code: "custom", message: errorMessage(err) });
    }
  });

/** `listen`: where zenoh clients and peers connect. */
export const listenSchema = closed(
  {
    endpoints: z
      .array(endpoint)
      .max(64)
      .optional()
      .describe(
        "zenoh endpoints to listen on, `tcp/`, `udp/` or `tls/` then `<ip>:<port>` or `[<ipv6>]:<port>` (absent: tcp/ on 127.0.0.1 at zenoh's port 7447; [] turns the door off)",
      ),
  },
  "the zenoh protocol door: where zenoh clients and peers (pico, zenoh-c, python, Rust) connect",
);

export type ListenConfig = z.output<typeof listenSchema>;

/** The zenoh door's sections, at the root of the configuration as zenohd has them. */
export const zenohDoorSchema = closed(
  {
    listen: listenSchema.optional(),
    connect: connectSchema.optional(),
    // Always parsed, so scouting gets its defaults from here and nowhere else.
    scouting: scoutingSchema.prefault({}),
    transport: transportSchema.optional(),
  },
  "the zenoh protocol door (zenohd's root sections)",
);

export type ZenohDoorConfig = z.output<typeof zenohDoorSchema>;
