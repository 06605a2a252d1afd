/**
 * Validation of canonical key expressions (docs/key-expressions.md §1.1). One left-to-right scan over
 * char codes, no allocation: this runs on every PUT and every declaration.
 */
import { KeyExprError, type KeyExprErrorKind } from "./errors.js";

const STAR = 0x2a; // *
const DOLLAR = 0x24; // $
const SHARP = 0x23; // #
const QMARK = 0x3f; // ?

/**
 * Returns the kind of the first rule `s` breaks, scanning left to right, or `null` when `s` is a
 * valid canonical key expression.
 */
export function checkKeyExpr(s: string): KeyExprErrorKind | null {
  const len = s.length;
  if (len === 0) return "Empty";
  let prevDouble = false;
  let start = 0;
  while (start <= len) {
    let end = s.indexOf("/", start);
    if (end === -1) end = len;
    const n = end - start;
    // A trailing "/" leaves start === len, i.e. an empty last chunk.
    if (n === 0) return "EmptyChunk";
    const c0 = s.charCodeAt(start);
    if (n === 1 && c0 === STAR) {
      if (prevDouble) return "SingleStarAfterDoubleStar";
      prevDouble = false;
    } else if (n === 2 && c0 === STAR && s.charCodeAt(start + 1) === STAR) {
      if (prevDouble) return "DoubleStarAfterDoubleStar";
      prevDouble = true;
    } else {
      if (n === 2 && c0 === DOLLAR && s.charCodeAt(start + 1) === STAR) return "LoneDollarStar";
      for (let k = start; k < end; k++) {
        const c = s.charCodeAt(k);
        if (c === SHARP || c === QMARK) return "SharpOrQMark";
        if (c === STAR) return "StarInChunk";
        if (c === DOLLAR) {
          if (k + 1 >= end || s.charCodeAt(k + 1) !== STAR) return "UnboundDollar";
          if (k + 2 < end && s.charCodeAt(k + 2) === DOLLAR) return "DollarAfterDollar";
          k++; // the `*` of this `$*` is consumed
        }
      }
      prevDouble = false;
    }
    if (end === len) break;
    start = end + 1;
  }
  return null;
}

/** Throws KeyExprError unless `s` is a valid canonical key expression (modern rules §1.1). */
export function validate(s: string): void {
  const kind = checkKeyExpr(s);
  if (kind !== null) throw new KeyExprError(kind, s);
}

/** True when `s` is a valid canonical key expression; never throws. */
export function isValid(s: string): boolean {
  return checkKeyExpr(s) === null;
}

/**
 * True when the KE contains any wildcard (`*`, `**`, `$*`). In a valid KE every `*` belongs to a
 * wildcard, so one character search suffices.
 */
export function isWild(s: string): boolean {
  return s.includes("*");
}

/** True for a chunk starting with `@`: it is matched only by the byte-identical chunk (§1.2). */
export function isVerbatimChunk(chunk: string): boolean {
  return chunk.charCodeAt(0) === 0x40; // @
}
