/**
 * The root of zest's configuration schema, composed at the top from the sections their owners
 * register (docs/configuration.md, docs/architecture.md): each front door's section under
 * `plugins.<door>`, the storage manager's, the fabric's, the admin space's, and `access_control`.
 * `ZestConfig` is derived from it, never written twice.
 */
import { z } from "zod";
import type { AnyFrontDoor } from "./access/front-door.js";
import { accessControlSchema, adminspaceSchema, tlsSchema } from "./access/schema.js";
import { ConfigError } from "./config/config.js";
import { depthProblem, describeIssue, rootConfigSchema } from "./config/schema.js";
import { fabricSchema } from "./fabric/schema.js";
import { remoteApiDoor } from "./remote/door.js";
import type { RestVariant } from "./rest/codec.js";
import { restDoor } from "./rest/door.js";
import { BUILTIN_VARIANTS, variantNames } from "./rest/variants.js";
import { storageManagerSchema } from "./storage/schema.js";
import { zenohDoor } from "./zenoh/door.js";

/**
 * The front doors a router ships with, in start order. Registering a door is one line here: its
 * section joins the schema (and `ZestConfig`), its flags join the command line, and `startZest`
 * starts it. `variants`: the REST variants the REST door serves (their registry, rest/variants.ts).
 */
export function builtinDoors(variants: readonly RestVariant[] = BUILTIN_VARIANTS) {
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

/**
 * The whole configuration's schema for a router serving `variants`: their names are the choices
 * of `plugins.rest.variant` and `adminspace.layout`. Settings that moved keep loading: the
 * transform fills the router-level keys from them (`deprecatedKeys` names them for a warning).
 */
function composeSchema(variants: readonly RestVariant[]) {
  const doors = builtinDoors(variants);
  return rootConfigSchema(
    { ...doorSections(doors), storage_manager: storageManagerSchema.optional() },
    {
      ...rootDoorSections(doors),
      adminspace: adminspaceSchema(variantNames(variants)).optional(),
      fabric: fabricSchema.optional(),
      tls: tlsSchema
        .optional()
        .describe(
          "the router's TLS, `{ listen_certificate, listen_private_key }` (PEM files): HTTPS on the REST gateway, `wss` on the remote API, and `tls/` zenoh endpoints (docs/security.md)",
        ),
      access_control: accessControlSchema
        .optional()
        .describe("access control: rules, subjects, policies, users and tokens (docs/security.md)"),
    },
  ).transform((c) => ({
    ...c,
    // `plugins.rest.tls` was the router's TLS before it had its own key: still read.
    tls: c.tls ?? c.plugins.rest.tls,
    // The admin layout follows the REST variant unless the config names one.
    adminspace: { ...c.adminspace, layout: c.adminspace?.layout ?? c.plugins.rest.variant },
  }));
}

/** The whole configuration's schema, with the built-in REST variants. */
export const configSchema = composeSchema(BUILTIN_VARIANTS);

/** Schemas composed for other variant lists (an embedder's `StartOptions.variants`), by their names. */
const composed = new Map<string, typeof configSchema>([[variantNames(BUILTIN_VARIANTS).join("\0"), configSchema]]);

/** The configuration's schema for a router serving `variants` (composed once per list of names). */
export function configSchemaFor(variants: readonly RestVariant[]): typeof configSchema {
  const key = variantNames(variants).join("\0");
  let schema = composed.get(key);
  if (schema === undefined) {
    schema = composeSchema(variants) as unknown as typeof configSchema;
    composed.set(key, schema);
  }
  return schema;
}

/** Keys of an old spelling that still load, and the key that replaced each. */
const MOVED: ReadonlyArray<{ readonly path: readonly string[]; readonly use: string }> = [
  { path: ["plugins", "rest", "tls"], use: "tls" },
];

/** The old spellings `config` uses, for a deprecation warning at start (docs/configuration.md, "Moved keys"). */
export function deprecatedKeys(config: unknown): Array<{ key: string; use: string }> {
  const out: Array<{ key: string; use: string }> = [];
  for (const { path, use } of MOVED) {
    let node: unknown = config;
    for (const part of path)
      node =
        typeof node === "object" && node !== null && Object.hasOwn(node, part)
          ? (node as Record<string, unknown>)[part]
          : undefined;
    if (node !== undefined) out.push({ key: path.join("."), use });
  }
  return out;
}

/** The router's configuration as written (JSON5 file, `--cfg` overrides and flags, in that order). */
export type ZestConfig = z.input<typeof configSchema>;
/** The configuration once parsed: every default filled in. What `startZest` hands each part. */
export type ResolvedConfig = z.output<typeof configSchema>;

/**
 * Checks and parses the whole configuration once: an unknown key, a wrong type or a value nested
 * too deep is a ConfigError (exit 2) naming the key (and the closest known one).
 */
export function parseConfig(config: unknown, variants: readonly RestVariant[] = BUILTIN_VARIANTS): ResolvedConfig {
  const deep = depthProblem(config);
  if (deep) throw new ConfigError(deep);
  const r = configSchemaFor(variants).safeParse(config);
  if (r.success) return r.data;
  const found = r.error.issues.map((i) => describeIssue(i, []));
  throw new ConfigError(
    found.length === 1 ? found[0]! : `${found[0]} (and ${found.length - 1} more: ${found.slice(1, 4).join("; ")})`,
  );
}

/** Checks the whole configuration (see `parseConfig`), for embedders that only want the check. */
export function validateConfig(
  config: unknown,
  variants: readonly RestVariant[] = BUILTIN_VARIANTS,
): asserts config is ZestConfig {
  parseConfig(config, variants);
}
