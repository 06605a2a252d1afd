/**
 * How large a key expression may be (docs/keyexpr-limits.md). Every key that enters the router
 * (a REST path, a library call, a sample or query from another router) is checked against
 * these limits, so every walk, match and index over keys has a bounded cost. The key-expression
 * functions themselves (`intersects`, `KeTrie`...) take any size: they never recurse per chunk.
 */
import { Buffer } from "node:buffer";
import { KeyExprError } from "./errors.js";

/** Limits on one key expression. */
export interface KeyExprLimits {
  /** Longest key expression, in UTF-8 bytes (4096). */
  readonly maxLength: number;
  /** Most chunks (`/`-separated parts) in a key expression (512). */
  readonly maxChunks: number;
}

/** The defaults: they admit every key of the REST specification and of zenoh's documentation. */
export const DEFAULT_KEYEXPR_LIMITS: KeyExprLimits = Object.freeze({ maxLength: 4096, maxChunks: 512 });

/** `limits` completed with the defaults; throws on a limit that is not a positive integer. */
export function keyExprLimits(limits: Partial<KeyExprLimits> = {}): KeyExprLimits {
  const out = { ...DEFAULT_KEYEXPR_LIMITS };
  for (const name of ["maxLength", "maxChunks"] as const) {
    const v = limits[name];
    if (v === undefined) continue;
    if (!Number.isSafeInteger(v) || v < 1)
      throw new RangeError(`key expression limit ${name} must be a positive integer, got ${String(v)}`);
    out[name] = v;
  }
  return Object.freeze(out);
}

/** UTF-8 length of `s`, computed only when the code-unit length cannot settle the comparison with `max`. */
function utf8Exceeds(s: string, max: number): number | undefined {
  // One UTF-16 code unit is 1 to 3 UTF-8 bytes (a surrogate pair, two units, is 4 bytes).
  if (s.length > max) return s.length;
  if (s.length * 3 <= max) return undefined;
  const bytes = Buffer.byteLength(s, "utf8");
  return bytes > max ? bytes : undefined;
}

/**
 * Throws KeyExprError `TooLong` or `TooManyChunks` when `ke` breaks `limits`; O(1) for keys
 * far from the limits, one scan otherwise. Checks size only, not validity.
 */
export function checkKeyExprLimits(ke: string, limits: KeyExprLimits = DEFAULT_KEYEXPR_LIMITS): void {
  const bytes = utf8Exceeds(ke, limits.maxLength);
  if (bytes !== undefined) {
    throw new KeyExprError(
      "TooLong",
      ke,
      `${bytes > ke.length ? "it is" : "it is at least"} ${bytes} bytes long, more than the limit of ${limits.maxLength}`,
    );
  }
  // n chunks need at least 2n - 1 characters.
  if (ke.length < 2 * limits.maxChunks + 1) return;
  let chunks = 1;
  for (let i = ke.indexOf("/"); i !== -1; i = ke.indexOf("/", i + 1)) chunks++;
  if (chunks > limits.maxChunks)
    throw new KeyExprError("TooManyChunks", ke, `it has ${chunks} chunks, more than the limit of ${limits.maxChunks}`);
}
