/**
 * The zenoh door's `transport` section, in zenohd's names (docs/zenoh-protocol.md,
 * "Credentials"): `transport.auth.usrpwd.dictionary_file`, the users zenoh clients authenticate
 * as in the handshake, and `transport.link.tx.lease`. Kept apart from the door so the config schema does not load the door.
 */
import { z } from "zod";
import { closed } from "../config/closed-schema.js";

/** zenohd's own-credential keys: null (as zenohd's default config has them) or absent. */
const ownCredential = (key: string) =>
  z
    .string()
    .max(1024)
    .nullable()
    .optional()
    .refine(
      (v) => v === undefined || v === null,
      `transport.auth.usrpwd.${key} is the credential a zenohd uses to open links to others; zest opens no zenoh links: list its clients' users in dictionary_file`,
    )
    .describe("zenohd's own credential for the links it opens: only null is accepted (zest opens none)");

export const transportSchema = closed(
  {
    auth: closed(
      {
        usrpwd: closed(
          {
            dictionary_file: z
              .string()
              .min(1)
              .max(4096)
              .nullable()
              .optional()
              .describe("a file of `user:password` lines: the users zenoh clients may authenticate as"),
            user: ownCredential("user"),
            password: ownCredential("password"),
          },
          "zenoh's user/password authentication",
        ).optional(),
      },
      "authentication in the zenoh handshake",
    ).optional(),
    link: closed(
      {
        tx: closed(
          {
            lease: z
              .number()
              .int()
              .min(500)
              .max(3_600_000)
              .optional()
              .describe("the router's lease in ms (10000): a session silent this long is closed"),
          },
          "what the router sends on zenoh links",
        ).optional(),
      },
      "zenoh links",
    ).optional(),
  },
  "the zenoh transport (zenohd's names)",
);

export type TransportConfig = z.output<typeof transportSchema>;
