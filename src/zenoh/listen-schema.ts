/**
 * The zenoh door's config section, in zenohd's name (docs/zenoh-protocol.md): `listen.endpoints`.
 * Kept apart from the door so the config schema does not load the door.
 */
import { z } from "zod";
import { errorMessage } from "../core/errors.js";
import { parseEndpoint } from "./endpoint.js";

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
export const listenSchema = z
  .strictObject({
    endpoints: z
      .array(endpoint)
      .max(64)
      .optional()
      .describe(
        "zenoh endpoints to listen on, `tcp/`, `udp/` or `tls/` then `<ip>:<port>` or `[<ipv6>]:<port>` (default tcp/127.0.0.1:7447; [] turns the door off)",
      ),
  })
  .describe("the zenoh protocol door: where zenoh clients and peers (pico, zenoh-c, python, Rust) connect");
