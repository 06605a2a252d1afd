/**
 * The zenoh door's `connect` section, in zenohd's names (docs/zenoh-network.md): the routers zest
 * joins as a zenoh client, and the backoff between attempts. Kept apart from the door so the
 * config schema does not load the door.
 */
import { z } from "zod";
import { errorMessage } from "../../core/errors.js";
import { closed } from "../../config/closed-schema.js";
import { MAX_TIMER_MS } from "../../config/schema.js";
import { parseEndpoint } from "../endpoint.js";
import { DEFAULT_BACKOFF } from "./joiner.js";

const endpoint = z
  .string()
  .max(256)
  .superRefine((text, ctx) => {
    try {
      const e = parseEndpoint(text);
      if (e.port === 0) ctx.addIssue({ code: "custom", message: `endpoint "${text}": a router's port, not 0` });
    } catch (err) {
      ctx.addIssue({ code: "custom", message: errorMessage(err) });
    }
  });

/** zenohd's form of a value given per mode (`{ router: -1, peer: -1, client: 0 }`), or one value. */
const perMode = <T extends z.ZodType>(v: T) =>
  z.union([v, z.strictObject({ router: v.optional(), peer: v.optional(), client: v.optional() })]).optional();

export const connectSchema = closed(
  {
    endpoints: z
      .array(endpoint)
      .max(64)
      .optional()
      .describe(
        "zenoh routers to join as a client, tcp/, tls/ or udp/ then <ip>:<port>: the first that answers, the next one when it goes away (absent: zest joins none)",
      ),
    retry: closed(
      {
        period_init_ms: z
          .number()
          .int()
          .min(10)
          .max(3_600_000)
          .default(DEFAULT_BACKOFF.initialMs)
          .describe("the first wait before trying again, in ms, doubled at each failure"),
        period_max_ms: z
          .number()
          .int()
          .min(10)
          .max(3_600_000)
          .default(DEFAULT_BACKOFF.maxMs)
          .describe("the longest wait between attempts, in ms"),
        period_increase_factor: z
          .number()
          .min(1)
          .max(1000)
          .optional()
          .describe("accepted so a zenohd config loads; zest doubles"),
      },
      "how zest tries again when a router is away (zenohd's names)",
    ).optional(),
    timeout_ms: perMode(z.number().int().min(-1).max(MAX_TIMER_MS)).describe(
      `accepted so a zenohd config loads (-1: none); unused; at most ${MAX_TIMER_MS}`,
    ),
    exit_on_failure: perMode(z.boolean()).describe("accepted so a zenohd config loads; zest keeps trying"),
  },
  "zenoh routers zest joins (zenohd's connect section)",
);

export type ConnectConfig = z.output<typeof connectSchema>;
