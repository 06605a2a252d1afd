/**
 * The REST variants a router ships with (docs/rest-gateway.md, "Variants"). Registering a variant
 * is one line here (or one entry of `StartOptions.variants` for an embedder): its name becomes a
 * choice of `plugins.rest.variant`, `--rest-variant` and `adminspace.layout`, and everything else
 * about it comes from its `RestVariant`.
 */
import { ConfigError } from "../config/config.js";
import type { RestVariant } from "./codec.js";
import { variantA } from "./variant-a.js";
import { variantB } from "./variant-b.js";

/** The built-in variants; the first is the default. */
export const BUILTIN_VARIANTS: readonly RestVariant[] = [variantA, variantB];

/**
 * The built-in variants, then `extra` (an embedder's), each once: the same object given twice
 * is kept once, two different variants of one name are a ConfigError.
 */
export function variantRegistry(extra: readonly RestVariant[] = []): readonly RestVariant[] {
  if (extra.length === 0) return BUILTIN_VARIANTS;
  const out = [...BUILTIN_VARIANTS];
  for (const v of extra) {
    const same = out.find((o) => o.name === v.name);
    if (same === v) continue;
    if (same !== undefined)
      throw new ConfigError(`two REST variants are named ${v.name}: variant names must be unique`);
    out.push(v);
  }
  return out;
}

/** The names of `variants`, for a schema's choices (at least one). */
export function variantNames(variants: readonly RestVariant[]): [string, ...string[]] {
  if (variants.length === 0) throw new ConfigError("no REST variant is registered");
  return variants.map((v) => v.name) as [string, ...string[]];
}
