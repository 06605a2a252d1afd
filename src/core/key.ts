/**
 * Key expressions as the core takes them from its users (the library API, the front doors):
 * canonical, within the router's limits, refused with a ZestError a door can map to its wire
 * (`too_long` past the length limit, `bad_input` for any other broken rule).
 */
import { canonicalKeyExpr, checkKeyExprLimits, DEFAULT_KEYEXPR_LIMITS, type KeyExprLimits } from "../keyexpr/index.js";
import { toZestError } from "./errors.js";

declare const canonical: unique symbol;

/**
 * A key expression as `toKeyExpr` returns it: canonical, and held to the limits it was given. A
 * type-only mark (at run time it is the string): a front door that made its key with its
 * session's `keyExprLimits` hands it to `Session.putKey` or `deleteKey`, which do not canonize
 * it again.
 */
export type CanonicalKey = string & { readonly [canonical]: true };

/**
 * Canonizes a user-given key expression held to `limits`; throws a ZestError: `bad_input`
 * naming the broken rule, `too_long` past the length limit, `bad_input` past the chunk limit.
 */
export function toKeyExpr(
  ke: string | { toString(): string },
  limits: KeyExprLimits = DEFAULT_KEYEXPR_LIMITS,
): CanonicalKey {
  try {
    return canonicalKeyExpr(ke.toString(), limits) as CanonicalKey;
  } catch (err) {
    throw toZestError(err);
  }
}

/** Throws a ZestError (`too_long`, or `bad_input` for too many chunks) when `ke` breaks `limits`. */
export function checkLimits(ke: string, limits: KeyExprLimits): void {
  try {
    checkKeyExprLimits(ke, limits);
  } catch (err) {
    throw toZestError(err);
  }
}
