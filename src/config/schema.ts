/**
 * The parts of zest's configuration schema that belong to no door and no storage: the root's own
 * keys, `session_bound`, and the helpers every section uses (`closed`, one issue
 * formatter, in closed-schema.ts). The root schema is composed at the top (`src/zest-config.ts`)
 * from these, the storage manager's section (storage/schema.ts) and the sections the front doors
 * register, so this folder imports no door and no storage (docs/architecture.md). Every object is closed: an
 * unknown key is refused, naming it and the closest valid key.
 */
import { z } from "zod";
import { closed } from "./closed-schema.js";

export { closed, depthProblem, describeIssue, MAX_DEPTH, names, problems } from "./closed-schema.js";

const hexId = z.string().regex(/^([0-9a-fA-F]{2}){1,16}$/, "expected 1 to 16 bytes of hex");

/** The longest timer a setting may ask for: a day (Node fires a timer past 2^31 - 1 ms after 1 ms). */
export const MAX_TIMER_MS = 86_400_000;

/** Most key expressions `session_bound.key_exprs` may list. */
export const MAX_SESSION_BOUND_KEY_EXPRS = 1024;

/** `session_bound`: puts on these keys through a zenoh door are bound to the writer's session. */
export const sessionBoundSchema = closed(
  {
    key_exprs: z
      .array(z.string().min(1).max(4096))
      .max(MAX_SESSION_BOUND_KEY_EXPRS)
      .default([])
      .describe("puts through a zenoh session on keys these include are deleted when that session ends"),
  },
  "values bound to the writer's zenoh session, on either zenoh door (a zest extension)",
);

/**
 * The root schema, from the sections registered at the top: `plugins` holds the door sections
 * (each filled with its defaults when absent) and the storage manager's; any other key of
 * `plugins` is the config of the `-P` plugin of that name. `top` adds root sections owned
 * elsewhere (`access_control`, `adminspace`, `fabric`, `tls`).
 */
export function rootConfigSchema<Plugins extends z.ZodRawShape, Top extends z.ZodRawShape>(plugins: Plugins, top: Top) {
  return closed(
    {
      id: hexId.optional().describe("router id, 1 to 16 bytes of hex (default: random)"),
      data_dir: z.string().optional().describe("where run-time storages and file volumes are kept"),
      queries_default_timeout: z
        .number()
        .positive()
        .max(MAX_TIMER_MS)
        .default(DEFAULT_QUERY_TIMEOUT_MS)
        .describe(`default query timeout in ms (at most ${MAX_TIMER_MS})`),
      session_bound: sessionBoundSchema.optional(),
      plugins: z
        .looseObject(plugins)
        // Absent `plugins` is `{}`, so every door section gets its defaults.
        .prefault({} as never)
        .describe("plugins: built-in ones, and any other key is the config of the -P plugin of that name"),
      ...top,
    },
    "zest configuration",
  );
}

/** Milliseconds a query waits for its replies when it says nothing. */
export const DEFAULT_QUERY_TIMEOUT_MS = 10_000;
