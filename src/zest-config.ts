/**
 * The root of zest's configuration schema, composed at the top from the sections their owners
 * register (docs/configuration.md, docs/architecture.md): each front door's section under
 * `plugins.<door>`, the storage manager's, the fabric's, the admin space's, and `access_control`.
 * `ZestConfig` is derived from it, never written twice.
 */
import { z } from "zod";
import type { AnyFrontDoor } from "./access/front-door.js";
import { accessControlSchema } from "./access/schema.js";
import { ConfigError } from "./config/config.js";
import { depthProblem, describeIssue, rootConfigSchema } from "./config/schema.js";
import { remoteApiDoor } from "./remote/door.js";
import type { RestVariant } from "./rest/codec.js";
import { restDoor } from "./rest/door.js";
import { storageManagerSchema } from "./storage/schema.js";
import { variantA } from "./rest/variant-a.js";
import { zenohDoor } from "./zenoh/door.js";

/**
 * The front doors a router ships with, in start order. Registering a door is one line here: its
 * section joins the schema (and `ZestConfig`), and `startZest` starts it.
 */
export function builtinDoors(variants: readonly RestVariant[] = [variantA]) {
  return [restDoor(variants), remoteApiDoor, zenohDoor] as const;
}

/** A door whose sections live at the root of the configuration (`FrontDoor.atRoot`). */
type RootDoor = { readonly atRoot: true };

/** `plugins.<door>` for each door: its schema, filled with its defaults when the section is absent. */
type DoorSections<Doors extends readonly AnyFrontDoor[]> = {
  [Door in Doors[number] as Door extends RootDoor ? never : Door["name"]]: z.ZodPrefault<Door["schema"]>;
};

type UnionToIntersection<U> = (U extends unknown ? (x: U) => void : never) extends (x: infer I) => void ? I : never;
type RootShapes<D> = D extends RootDoor & { readonly schema: z.ZodObject<infer S> } ? S : never;
/** The root sections of the doors that keep theirs at the root, by section name. */
type RootSections<Doors extends readonly AnyFrontDoor[]> = [RootShapes<Doors[number]>] extends [never]
  ? Record<never, never>
  : UnionToIntersection<RootShapes<Doors[number]>>;

/** The door sections of `plugins`, by door name. */
export function doorSections<const Doors extends readonly AnyFrontDoor[]>(doors: Doors): DoorSections<Doors> {
  const shape: Record<string, z.ZodType> = {};
  for (const door of doors) if (!door.atRoot) shape[door.name] = door.schema.prefault({});
  return shape as DoorSections<Doors>;
}

/** The root sections of the doors that keep theirs at the root (zenohd's `listen`, `scouting`). */
export function rootDoorSections<const Doors extends readonly AnyFrontDoor[]>(doors: Doors): RootSections<Doors> {
  const shape: Record<string, z.ZodType> = {};
  for (const door of doors)
    if (door.atRoot && door.schema instanceof z.ZodObject) Object.assign(shape, door.schema.shape);
  return shape as RootSections<Doors>;
}

/** The whole configuration's schema. */
export const configSchema = rootConfigSchema(
  { ...doorSections(builtinDoors()), storage_manager: storageManagerSchema.optional() },
  {
    ...rootDoorSections(builtinDoors()),
    access_control: accessControlSchema
      .optional()
      .describe("access control: rules, subjects, policies, users and tokens (docs/security.md)"),
  },
);

/** The router's configuration as written (JSON5 file, `--cfg` overrides and flags, in that order). */
export type ZestConfig = z.input<typeof configSchema>;
/** The configuration once parsed: every default filled in. What `startZest` hands each part. */
export type ResolvedConfig = z.output<typeof configSchema>;

/**
 * Checks and parses the whole configuration once: an unknown key, a wrong type or a value nested
 * too deep is a ConfigError (exit 2) naming the key (and the closest known one).
 */
export function parseConfig(config: unknown): ResolvedConfig {
  const deep = depthProblem(config);
  if (deep) throw new ConfigError(deep);
  const r = configSchema.safeParse(config);
  if (r.success) return r.data;
  const found = r.error.issues.map((i) => describeIssue(i, []));
  throw new ConfigError(
    found.length === 1 ? found[0]! : `${found[0]} (and ${found.length - 1} more: ${found.slice(1, 4).join("; ")})`,
  );
}

/** Checks the whole configuration (see `parseConfig`), for embedders that only want the check. */
export function validateConfig(config: unknown): asserts config is ZestConfig {
  parseConfig(config);
}
