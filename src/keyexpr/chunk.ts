/**
 * Chunk-level tests shared by `intersects`, `includes` and the trie. Chunks are canonical and
 * non-empty; `**` is only ever passed where the callers document it.
 */
import { isVerbatimChunk } from "./validate.js";

const DOLLAR = 0x24; // $
const STAR = 0x2a; // *

/** Scratch table reused by every glob comparison, so the hot path does not allocate. */
let scratch = new Uint8Array(256);

/**
 * True when some string is matched by both `$*` globs `a` and `b` (each `$*` matches any run,
 * possibly empty). Dynamic programming over (i, j) string positions: O(|a|·|b|), no
 * backtracking blow-up. Positions inside a `$*` are never reached because every move over a
 * wildcard skips both of its characters.
 */
function globsIntersect(a: string, b: string): boolean {
  const n = a.length;
  const m = b.length;
  const w = m + 1;
  const size = (n + 1) * w;
  if (scratch.length < size) scratch = new Uint8Array(Math.max(size, scratch.length * 2));
  const dp = scratch;
  for (let i = n; i >= 0; i--) {
    const aStar = i < n && a.charCodeAt(i) === DOLLAR;
    for (let j = m; j >= 0; j--) {
      let v = 0;
      if (i === n && j === m) {
        v = 1;
      } else if (aStar) {
        // a's wildcard matches nothing more, or absorbs b's next token (a char, or b's wildcard).
        v = dp[(i + 2) * w + j]!;
        if (v === 0 && j < m) v = dp[i * w + j + (b.charCodeAt(j) === DOLLAR ? 2 : 1)]!;
      } else if (j < m && b.charCodeAt(j) === DOLLAR) {
        v = dp[i * w + j + 2]!;
        if (v === 0 && i < n) v = dp[(i + 1) * w + j]!;
      } else if (i < n && j < m && a.charCodeAt(i) === b.charCodeAt(j)) {
        v = dp[(i + 1) * w + j + 1]!;
      }
      dp[i * w + j] = v;
    }
  }
  return dp[0] === 1;
}

/**
 * True when the two chunks share a key chunk (§1.2). `*` and `**` both stand for "any one
 * non-verbatim chunk" here; the zero-chunk reading of `**` is handled by the KE-level walks.
 * A verbatim (`@`-prefixed) chunk meets only the identical chunk, even if it contains `$*`.
 */
export function chunkIntersects(a: string, b: string): boolean {
  if (a === b) return true;
  if (isVerbatimChunk(a) || isVerbatimChunk(b)) return false;
  if (a === "*" || b === "*" || a === "**" || b === "**") return true;
  const aGlob = a.includes("$");
  const bGlob = b.includes("$");
  if (!aGlob && !bGlob) return false;
  // Cheap rejections before the table: literal first/last characters must agree.
  const a0 = a.charCodeAt(0);
  const b0 = b.charCodeAt(0);
  if (a0 !== DOLLAR && b0 !== DOLLAR && a0 !== b0) return false;
  const aL = a.charCodeAt(a.length - 1);
  const bL = b.charCodeAt(b.length - 1);
  if (aL !== STAR && bL !== STAR && aL !== bL) return false;
  // A non-verbatim canonical glob always has a literal character, so any common match is a
  // non-empty chunk; and a common match can always be chosen not to start with `@` (a glob
  // starting with a literal starts with that non-`@` literal; two globs starting with `$*`
  // can take any prefix). So the plain string question is the right one.
  return globsIntersect(a, b);
}

/**
 * True when the non-`**` chunk `left` includes the chunk `right`, exactly as Rust's
 * `LTRIncluder` decides it (§1.5): equal; or neither verbatim and `left` is `*`; or `left` is a
 * `$*` pattern whose prefix, suffix and middle pieces occur in `right` in order. A right `*`
 * or `**` is only included by an equal left chunk (`*` ⊇ `*`), never by a pattern: sound but
 * incomplete.
 */
export function chunkIncludes(left: string, right: string): boolean {
  if (left === right) return true;
  if (isVerbatimChunk(left) || isVerbatimChunk(right)) return false;
  if (right === "**") return false;
  if (left === "*") return true;
  let k = left.indexOf("$*");
  if (k === -1) return false;
  // Prefix before the first `$*` must start `right`.
  if (!right.startsWith(left.slice(0, k))) return false;
  let lo = k;
  const last = left.lastIndexOf("$*");
  const suffix = left.slice(last + 2);
  const hi = right.length - suffix.length;
  if (hi < lo || !right.endsWith(suffix)) return false;
  // Middle pieces, greedily leftmost, inside right[lo, hi). Pieces hold no `$`/`*`, so they
  // can never match into a `$*` of `right`: a match is always a literal stretch of `right`.
  k += 2;
  while (k < last) {
    const next = left.indexOf("$*", k);
    const piece = left.slice(k, next);
    const at = right.indexOf(piece, lo);
    if (at === -1 || at + piece.length > hi) return false;
    lo = at + piece.length;
    k = next + 2;
  }
  return true;
}
