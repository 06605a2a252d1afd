/**
 * `intersects` (docs/key-expressions.md §1.2, §1.4). Rust's ClassicIntersector recurses without
 * memoization and is exponential in the number of `**`; here the same recursion is evaluated as
 * a table over (left chunk index, right chunk index), bottom-up with two rolling rows: O(n·m)
 * chunk tests at most, O(m) memory, no recursion depth to worry about.
 */
import { chunkIntersects } from "./chunk.js";
import { isVerbatimChunk, isWild } from "./validate.js";

/** Rolling rows reused across calls (the walk never re-enters itself), up to `KEPT_ROW`. */
const KEPT_ROW = 1024;
const rowA = new Uint8Array(KEPT_ROW + 1);
const rowB = new Uint8Array(KEPT_ROW + 1);

/**
 * Rejections that need no table: without a `**`, a side has exactly as many chunks as the keys
 * it denotes, and with one it has at least its other chunks; and first and last chunks that are
 * not `**` must meet. True means "may intersect".
 */
function mayIntersect(a: readonly string[], b: readonly string[]): boolean {
  let aDouble = 0;
  let bDouble = 0;
  for (const c of a) if (c === "**") aDouble++;
  for (const c of b) if (c === "**") bDouble++;
  const aFixed = a.length - aDouble;
  const bFixed = b.length - bDouble;
  if (aDouble === 0 && bFixed > aFixed) return false;
  if (bDouble === 0 && aFixed > bFixed) return false;
  const a0 = a[0]!;
  const b0 = b[0]!;
  if (a0 !== "**" && b0 !== "**" && !chunkIntersects(a0, b0)) return false;
  const aL = a[a.length - 1]!;
  const bL = b[b.length - 1]!;
  if (aL !== "**" && bL !== "**" && !chunkIntersects(aL, bL)) return false;
  return true;
}

/**
 * True when the chunk sequences `a` and `b` (each from a canonical KE) denote sets sharing a
 * key. Exposed for callers that already hold split chunks.
 */
export function intersectsChunks(a: readonly string[], b: readonly string[]): boolean {
  if (!mayIntersect(a, b)) return false;
  // The row runs along the shorter side (the relation is symmetric).
  if (b.length > a.length) [a, b] = [b, a];
  const n = a.length;
  const m = b.length;
  // next = X(i+1, ·), cur = X(i, ·), where X(i, j) = "a[i..] and b[j..] share a key"
  // (the empty key included, which only all-`**` suffixes contain).
  let next = m <= KEPT_ROW ? rowA : new Uint8Array(m + 1);
  let cur = m <= KEPT_ROW ? rowB : new Uint8Array(m + 1);
  // Row i = n: a is used up, so b[j..] must be all `**`.
  next[m] = 1;
  for (let j = m - 1; j >= 0; j--) next[j] = next[j + 1] === 1 && b[j] === "**" ? 1 : 0;
  for (let i = n - 1; i >= 0; i--) {
    const l = a[i]!;
    const lDouble = l === "**";
    const lVerbatim = isVerbatimChunk(l);
    // Column j = m: b is used up, so a[i..] must be all `**`.
    cur[m] = next[m] === 1 && lDouble ? 1 : 0;
    for (let j = m - 1; j >= 0; j--) {
      const r = b[j]!;
      let v: number;
      if (lDouble) {
        // `**` eats nothing and is dropped, or eats b's chunk (never a verbatim one) and stays.
        v = next[j]!;
        if (v === 0 && !isVerbatimChunk(r)) v = cur[j + 1]!;
      } else if (r === "**") {
        v = cur[j + 1]!;
        if (v === 0 && !lVerbatim) v = next[j]!;
      } else {
        v = next[j + 1] === 1 && chunkIntersects(l, r) ? 1 : 0;
      }
      cur[j] = v;
    }
    const t = next;
    next = cur;
    cur = t;
  }
  return next[0] === 1;
}

/**
 * True when the sets of keys denoted by two canonical KEs share a key (§1.2, with verbatim `@`
 * chunks and zero-chunk `**`). Symmetric. Memoized on (i, j) chunk-index pairs, so
 * `(**\/a)^12/b` against `a^24/c` costs a few hundred chunk tests, not 2^25 calls.
 */
export function intersects(a: string, b: string): boolean {
  if (a === b) return true;
  // Canonical forms are unique, so two distinct concrete keys never meet.
  if (!isWild(a) && !isWild(b)) return false;
  return intersectsChunks(a.split("/"), b.split("/"));
}
