/**
 * A key expression as a user gives it, made canonical within limits (docs/keyexpr-limits.md):
 * the limits are checked before canonizing, so canonization's cost is bounded too, and the
 * canonical forms of recent inputs are remembered, since hot keys are written (and validated)
 * again and again.
 */
import { canonize } from "./canon.js";
import { checkKeyExprLimits, DEFAULT_KEYEXPR_LIMITS, type KeyExprLimits } from "./limits.js";

/** Recently canonized key expressions, input → canonical form. */
const canonical = new Map<string, string>();
/** Bounded: a stream of distinct keys must not grow the cache without end. */
const CANONICAL_CACHE_MAX = 4096;

/**
 * The canonical form of `ke` held to `limits`; throws a KeyExprError naming the broken rule
 * (`TooLong` past the length limit, `TooManyChunks` past the chunk limit).
 */
export function canonicalKeyExpr(ke: string, limits: KeyExprLimits = DEFAULT_KEYEXPR_LIMITS): string {
  checkKeyExprLimits(ke, limits);
  const known = canonical.get(ke);
  if (known !== undefined) {
    if (known.length > ke.length) checkKeyExprLimits(known, limits);
    return known;
  }
  const c = canonize(ke);
  // Canonizing can lengthen (an in-chunk `*` becomes `$*`).
  if (c.length > ke.length) checkKeyExprLimits(c, limits);
  if (canonical.size >= CANONICAL_CACHE_MAX) canonical.clear();
  canonical.set(ke, c);
  return c;
}
