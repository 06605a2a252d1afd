/**
 * Key expressions as the core takes them from its users (the library API, the front doors):
 * canonical, within the router's limits, refused with a ZestError a door can map to its wire
 * (`too_long` past the length limit, `bad_input` for any other broken rule).
 */
import { canonicalKeyExpr, checkKeyExprLimits, DEFAULT_KEYEXPR_LIMITS, type KeyExprLimits } from "../keyexpr/index.js";
import { toZestError } from "./errors.js";

/**
 * Canonizes a user-given key expression held to `limits`; throws a ZestError: `bad_input`
 * naming the broken rule, `too_long` past the length limit, `bad_input` past the chunk limit.
 */
export function toKeyExpr(ke: string | { toString(): string }, limits: KeyExprLimits = DEFAULT_KEYEXPR_LIMITS): string {
  try {
    return canonicalKeyExpr(ke.toString(), limits);
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
