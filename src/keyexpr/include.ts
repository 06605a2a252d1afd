/**
 * `includes` (docs/key-expressions.md §1.5): the answers of Rust's `LTRIncluder`, which is sound but
 * incomplete when the right side has a `**` that the left covers with `*`. Its recursion is
 * evaluated as a table over (left index, right index), bottom-up with two rolling rows.
 */
import { chunkIncludes } from "./chunk.js";
import { isVerbatimChunk, isWild } from "./validate.js";

/** Rolling rows reused across calls, up to `KEPT_ROW`; longer ones are allocated and dropped. */
const KEPT_ROW = 1024;
const rowA = new Uint8Array(KEPT_ROW + 1);
const rowB = new Uint8Array(KEPT_ROW + 1);

/**
 * True when the chunk sequence `left` includes `right` (both from canonical KEs), with the
 * LTRIncluder answers. Exposed for callers that already hold split chunks.
 */
export function includesChunks(left: readonly string[], right: readonly string[]): boolean {
  const n = left.length;
  const m = right.length;
  // Rejections without a table: a left side without `**` includes only right sides of its own
  // length without `**` (a non-`**` chunk never covers a right `**`), and every non-`**` left
  // chunk takes one right chunk.
  if (!left.includes("**")) {
    if (m !== n || right.includes("**")) return false;
  } else if (!right.includes("**")) {
    let fixed = 0;
    for (const c of left) if (c !== "**") fixed++;
    if (fixed > m) return false;
  }
  // E(i, j) = "left[i..] includes right[j..]"; next = E(i+1, ·), cur = E(i, ·).
  let next = m <= KEPT_ROW ? rowA : new Uint8Array(m + 1);
  let cur = m <= KEPT_ROW ? rowB : new Uint8Array(m + 1);
  // Row i = n: an exhausted left only includes an exhausted right.
  next.fill(0, 0, m);
  next[m] = 1;
  for (let i = n - 1; i >= 0; i--) {
    const l = left[i]!;
    const lDouble = l === "**";
    // Column j = m: the right is used up; what is left of `left` must be all `**`
    // (this is how `a/**` includes `a`).
    cur[m] = next[m] === 1 && lDouble ? 1 : 0;
    for (let j = m - 1; j >= 0; j--) {
      const r = right[j]!;
      let v: number;
      if (lDouble) {
        // Try the rest of left against this suffix, else let `**` swallow one non-verbatim
        // right chunk (a right `*` or `**` included) and try again.
        v = next[j]!;
        if (v === 0 && !isVerbatimChunk(r)) v = cur[j + 1]!;
      } else {
        // A non-`**` left chunk never covers a right `**` (the documented incompleteness).
        v = r !== "**" && next[j + 1] === 1 && chunkIncludes(l, r) ? 1 : 0;
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
 * True when set(a) ⊇ set(b), following §1.5: the same answers as Rust's LTRIncluder, so sound
 * but incomplete where documented (`includes("*\/**", "**\/a")` is false). Memoized like
 * `intersects`: O(n·m) chunk tests.
 */
export function includes(a: string, b: string): boolean {
  if (a === b) return true;
  // A concrete left side includes only itself.
  if (!isWild(a)) return false;
  return includesChunks(a.split("/"), b.split("/"));
}
