/**
 * The door's `transport` section, in zenohd's names (docs/zenoh-protocol.md, "TLS"):
 * `transport.link.tls` holds the certificate and key of `tls/` endpoints and mutual TLS. Kept
 * apart from the door so the config schema does not load the door.
 */
import { z } from "zod";
import { closed } from "../config/schema.js";

const path = (what: string) => z.string().min(1).max(4096).nullable().optional().describe(what);

/** `transport.link.tls`, zenohd's names; the `connect_*` keys load but are unused (zest does not connect). */
export const linkTlsSchema = closed(
  {
    listen_certificate: path("PEM certificate chain of tls/ endpoints (default: plugins.rest.tls's)"),
    listen_private_key: path("PEM private key of tls/ endpoints (default: plugins.rest.tls's)"),
    root_ca_certificate: path("PEM root CA that client certificates are verified against (with enable_mtls)"),
    enable_mtls: z
      .boolean()
      .optional()
      .describe("mutual TLS: refuse clients without a certificate signed by root_ca_certificate (false)"),
    connect_private_key: path("accepted so a zenohd config loads; unused (zest does not connect)"),
    connect_certificate: path("accepted so a zenohd config loads; unused"),
    verify_name_on_connect: z.boolean().optional().describe("accepted so a zenohd config loads; unused"),
    close_link_on_expiration: z.boolean().optional().describe("accepted so a zenohd config loads; unused"),
  },
  "TLS of the zenoh door's tls/ endpoints",
)
  .refine((t) => (t.listen_certificate == null) === (t.listen_private_key == null), {
    message: "listen_certificate and listen_private_key go together",
  })
  .refine((t) => t.enable_mtls !== true || t.root_ca_certificate != null, {
    message: "enable_mtls needs root_ca_certificate (the CA client certificates are verified against)",
  });

/** `transport`: how zenoh links are secured. */
export const transportSchema = closed(
  {
    link: closed({ tls: linkTlsSchema.optional() }, "zenoh link settings").optional(),
  },
  "the zenoh door's transport settings (zenohd's names)",
);

export type TransportConfig = z.output<typeof transportSchema>;
