/**
 * The zenoh door's config section, in zenohd's name (docs/zenoh-protocol.md): `listen.endpoints`.
 * Kept apart from the door so the config schema does not load the door.
 */
import { z } from "zod";

/** `listen`: where zenoh clients and peers connect. */
export const listenSchema = z
  .strictObject({
    endpoints: z
      .array(z.string().max(256))
      .max(64)
      .optional()
      .describe(
        "zenoh endpoints to listen on, `tcp/`, `udp/` or `tls/` then `<ip>:<port>` or `[<ipv6>]:<port>` (default tcp/127.0.0.1:7447; [] turns the door off)",
      ),
  })
  .describe("the zenoh protocol door: where zenoh clients and peers (pico, zenoh-c, python, Rust) connect");
