/**
 * zod building blocks of zest's schemas: closed objects that answer an unknown key with the
 * closest known one, maps of names, and one-line reasons for what does not pass.
 */
import { closest } from "fastest-levenshtein";
import { z } from "zod";

/** Deepest nesting accepted in a config value or an admin body (objects and arrays). */
export const MAX_DEPTH = 64;

/** A schema with the keys it knows, so an unknown key can be answered with the closest one. */
export function closed<T extends z.ZodRawShape>(shape: T, description: string) {
  const known = Object.keys(shape);
  return z
    .strictObject(shape, {
      error: (iss) =>
        iss.code === "unrecognized_keys" && known.length > 0
          ? `did you mean ${closest(String(iss.keys[0]), known)}?`
          : undefined,
    })
    .describe(description);
}

/** The one name a plain object reads as its prototype. */
const PROTO = "__proto__";

/**
 * A map of names (storages, volumes) to values. zod's record skips a `__proto__` key, so that
 * entry is checked here: names are data, and every name must be valid like any other.
 */
export function names<T extends z.ZodType>(value: T, description: string) {
  return z
    .unknown()
    .superRefine((map, ctx) => {
      if (typeof map !== "object" || map === null || !Object.hasOwn(map, PROTO)) return;
      const r = value.safeParse((map as Record<string, unknown>)[PROTO]);
      for (const issue of r.error?.issues ?? [])
        ctx.addIssue({ ...issue, path: [PROTO, ...issue.path] } as Parameters<typeof ctx.addIssue>[0]);
    })
    .pipe(z.record(z.string(), value))
    .describe(description);
}

/**
 * One problem found in a value, as a one-line reason: the one formatter of every config error
 * (the configuration, a door's section, a driver's options). `prefix` is the path of the value
 * checked; `of` names what the value configures (`volume v`) for a driver's options, whose
 * reasons read `unknown option "x" of volume v` rather than `unknown key x`.
 */
export function describeIssue(issue: z.core.$ZodIssue, prefix: readonly string[], of?: string): string {
  const path = [...prefix, ...issue.path.map(String)];
  if (issue.code === "unrecognized_keys") {
    const hint = /^(did you mean|known options|this level)/.test(issue.message) ? ` (${issue.message})` : "";
    if (of !== undefined) return `unknown option "${[...path, String(issue.keys[0])].join(".")}" of ${of}${hint}`;
    const keys = issue.keys.map((k) => [...path, k].join("."));
    return keys.length === 1 ? `unknown key ${keys[0]}${hint}` : `unknown keys ${keys.join(", ")}${hint}`;
  }
  if (of !== undefined)
    return path.length === 0 ? `${of}: ${issue.message}` : `\`${path.join(".")}\` of ${of} ${issue.message}`;
  return `${path.length > 0 ? path.join(".") : "value"}: ${issue.message}`;
}

/**
 * Checks `value` against `schema` (after its depth); returns the one-line reasons, first
 * problem first, or an empty list when it is valid.
 */
export function problems(schema: z.ZodType, value: unknown, prefix: readonly string[] = []): string[] {
  const deep = depthProblem(value, prefix);
  if (deep) return [deep];
  const r = schema.safeParse(value);
  return r.success ? [] : r.error.issues.map((i) => describeIssue(i, prefix));
}

/** A reason when `value` nests deeper than `MAX_DEPTH`, measured without recursion. */
export function depthProblem(value: unknown, prefix: readonly string[] = [], limit = MAX_DEPTH): string | undefined {
  const stack: Array<[unknown, number]> = [[value, 0]];
  while (stack.length > 0) {
    const [v, depth] = stack.pop()!;
    if (typeof v !== "object" || v === null) continue;
    if (depth + 1 > limit)
      return `${prefix.length > 0 ? `${prefix.join(".")}: ` : ""}value nested deeper than ${limit} levels`;
    for (const child of Object.values(v)) stack.push([child, depth + 1]);
  }
  return undefined;
}
