/**
 * The zenoh door's `transport` section, in zenohd's names (docs/zenoh-protocol.md,
 * "Credentials" and "TLS"): `transport.auth.usrpwd.dictionary_file`, the users zenoh clients
 * authenticate as in the handshake; `transport.link.tx.lease` and `…tx.queue.congestion_control.block.wait_before_close`; and `transport.link.tls`, the
 * certificate and key of `tls/` endpoints and mutual TLS. Kept apart from the door so the config schema does not load the door.
 */
import { z } from "zod";
import { DEFAULT_PER_ADDRESS } from "../access/connections.js";
import { closed } from "../config/closed-schema.js";
import { DEFAULT_ZENOH_LIMITS } from "./server.js";

const path = (what: string) => z.string().min(1).max(4096).nullable().optional().describe(what);

/** `transport.link.tls`, zenohd's names: the `listen_*` keys serve tls/ endpoints, the `connect_*` keys the tls/ routers zest joins. */
export const linkTlsSchema = closed(
  {
    listen_certificate: path("PEM certificate chain of tls/ endpoints (default: the router's `tls`)"),
    listen_private_key: path("PEM private key of tls/ endpoints (default: the router's `tls`)"),
    root_ca_certificate: path(
      "PEM root CA that client certificates are verified against (with enable_mtls), and the certificates of tls/ routers zest joins",
    ),
    enable_mtls: z
      .boolean()
      .default(false)
      .describe("mutual TLS: refuse clients without a certificate signed by root_ca_certificate"),
    connect_private_key: path("PEM private key zest presents to tls/ routers it joins (mutual TLS)"),
    connect_certificate: path("PEM certificate chain zest presents to tls/ routers it joins (mutual TLS)"),
    verify_name_on_connect: z
      .boolean()
      .default(true)
      .describe("a tls/ router zest joins must have a certificate naming its host"),
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

/** zenohd's own credential: what zest presents to the routers it joins (`connect.endpoints`). */
const ownCredential = (key: string, max: number) =>
  z
    .string()
    .min(1)
    .max(max)
    .nullable()
    .optional()
    .describe(
      `the ${key} zest presents to the zenoh routers it joins (connect.endpoints), as zenohd's own credential for the links it opens`,
    );

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
            user: ownCredential("user", 256),
            password: ownCredential("password", 1024),
          },
          "zenoh's user/password authentication",
        )
          .refine((u) => (u.user == null) === (u.password == null), {
            message: "user and password go together",
          })
          .optional(),
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
              .default(DEFAULT_ZENOH_LIMITS.leaseMs)
              .describe(
                "the router's lease in ms, announced to each peer: it sends KEEP_ALIVE within a quarter of it (a peer is expired by the lease it announced)",
              ),
            queue: closed(
              {
                congestion_control: closed(
                  {
                    block: closed(
                      {
                        wait_before_close: z
                          .number()
                          .int()
                          .min(1_000)
                          .max(3_600_000_000)
                          .default(DEFAULT_ZENOH_LIMITS.blockWaitBeforeCloseMs * 1000)
                          .describe(
                            "µs a session may hold congestion control BLOCK publishers back without reading before it is closed (zenohd's name and default, 5 s)",
                          ),
                      },
                      "congestion control BLOCK",
                    ).optional(),
                  },
                  "congestion control on the way out",
                ).optional(),
              },
              "the output queue of each session",
            ).optional(),
          },
          "what the router sends on zenoh links",
        ).optional(),
        tls: linkTlsSchema.optional(),
      },
      "zenoh links",
    ).optional(),
    unicast: closed(
      {
        max_sessions: z
          .number()
          .int()
          .positive()
          .max(1_000_000)
          .optional()
          .describe(
            "zenoh sessions open at once, handshakes included (default: from the descriptor limit, as every door)",
          ),
        max_sessions_per_address: z
          .number()
          .int()
          .positive()
          .max(1_000_000)
          .optional()
          .describe(
            `zenoh sessions from one IP address (default: a quarter of max_sessions, at most ${DEFAULT_PER_ADDRESS}; a zest extension)`,
          ),
      },
      "unicast sessions: the door's connection caps, the edge policy's guard",
    ).optional(),
  },
  "the zenoh transport (zenohd's names)",
);

export type TransportConfig = z.output<typeof transportSchema>;
