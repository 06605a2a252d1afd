/**
 * The top-level `scouting` section, with zenohd's names (its DEFAULT_CONFIG.json5), as they apply
 * to a router (docs/zenoh-protocol.md, "Scouting"). Unknown fields are refused, as zenoh's
 * config structs do. zest routers mesh over NATS, never by zenoh's router-to-router
 * autoconnect or gossip: those keys are accepted so a zenohd config file loads, and a router
 * autoconnect list that is not empty is refused.
 */
import { z } from "zod";
import { closed } from "../../config/closed-schema.js";
import { DEFAULT_SCOUTING_ADDRESS, parseScoutingAddress } from "./address.js";

/** Time-to-live of the datagrams scouting sends: zenohd's, one hop. */
export const DEFAULT_SCOUTING_TTL = 1;

/** Largest JSON of a key zest accepts for zenohd's configs and ignores. */
const MAX_IGNORED_JSON = 1024;

/** A key kept for zenohd's configs with no effect on a router: any JSON value, of bounded size. */
const ignored = () =>
  z.unknown().superRefine((v, ctx) => {
    if ((JSON.stringify(v) ?? "").length > MAX_IGNORED_JSON)
      ctx.addIssue({ code: "custom", message: `longer than ${MAX_IGNORED_JSON} characters of JSON` });
  });

/** Milliseconds of zenohd's client and peer scouting, at most a day. */
const scoutMs = () => z.number().int().min(0).max(86_400_000);

const kinds = z.array(z.enum(["router", "peer", "client"]));
/** A value for every mode, or one per mode (`{ router, peer, client }`), as zenohd's `ModeDependentValue`. */
const perMode = <T extends z.ZodType>(v: T) =>
  z.union([
    v,
    closed({ router: v.optional(), peer: v.optional(), client: v.optional() }, "a value per mode, as zenohd's"),
  ]);

const address = z
  .string()
  .superRefine((s, ctx) => {
    try {
      parseScoutingAddress(s);
    } catch (err) {
      ctx.addIssue({ code: "custom", message: (err as Error).message.replace(/^scouting\.multicast\.address: /, "") });
    }
  })
  .describe("the multicast group and port SCOUTs arrive on, IPv4");

const autoconnect = perMode(kinds).superRefine((v, ctx) => {
  const forRouter = Array.isArray(v) ? v : v.router;
  if (forRouter !== undefined && forRouter.length > 0)
    ctx.addIssue({
      code: "custom",
      message: "a zest router connects to no zenoh node it scouts (routers mesh over NATS): use [] for router",
    });
});

export const multicastScoutingSchema = closed(
  {
    enabled: z.boolean().default(true).describe("answer multicast scouting"),
    address: address.default(DEFAULT_SCOUTING_ADDRESS),
    interface: z
      .string()
      .max(1024)
      .default("auto")
      .describe(
        "`auto`: the interfaces where the zenoh listener is reachable (loopback only in protected mode); or interface names or IPv4 addresses, comma-separated",
      ),
    ttl: z.number().int().min(1).max(255).default(DEFAULT_SCOUTING_TTL).describe("time-to-live of the datagrams sent"),
    listen: perMode(z.boolean())
      .default(true)
      .describe("answer SCOUTs (of a per-mode object, the `router` value applies)"),
    autoconnect: autoconnect.optional().describe("accepted for zenohd configs; must be [] for a router"),
    autoconnect_strategy: ignored().optional().describe("accepted for zenohd configs; no effect on a router"),
  },
  "multicast scouting: SCOUT on UDP, answered with a HELLO listing the zenoh listener's locators",
);

export const scoutingSchema = closed(
  {
    timeout: scoutMs().optional().describe("zenohd's client scouting period; no effect on a router"),
    delay: scoutMs().optional().describe("zenohd's peer scouting delay; no effect on a router"),
    // Always parsed: the responder reads its defaults from here.
    multicast: multicastScoutingSchema.prefault({}),
    gossip: closed(
      {
        enabled: z.boolean().optional(),
        multihop: z.boolean().optional(),
        target: ignored().optional(),
        autoconnect: autoconnect.optional(),
        autoconnect_strategy: ignored().optional(),
      },
      "accepted for zenohd configs; zest routers do not gossip",
    ).optional(),
  },
  "how zenoh clients find this router (zenohd's `scouting` section)",
);

/** The parsed `scouting` section, defaults filled in (`multicast` too when it was absent). */
export type ScoutingConfig = z.output<typeof scoutingSchema>;

/** True when this router answers SCOUTs: `enabled` and `listen` (its `router` value). */
export function answersScouts(config: ScoutingConfig): boolean {
  const { enabled, listen } = config.multicast;
  return enabled && (typeof listen === "boolean" ? listen : (listen.router ?? true));
}
