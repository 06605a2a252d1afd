/**
 * Chunk-level tests shared by `intersects`, `includes` and the trie. Chunks are canonical and
 * non-empty; `**` is only ever passed where the callers document it.
 */
import { isVerbatimChunk } from "./validate.js";

/**
 * True when the glob `glob` (holding `$*`) matches the literal chunk `s`: the pieces between its
 * wildcards occur in `s` in order, the first at the start and the last at the end. Greedy
 * leftmost placement is exact for `$*`-only globs, and costs a few `indexOf` scans, never a table.
 */
function globMatches(glob: string, s: string): boolean {
  const first = glob.indexOf("$*");
  const last = glob.lastIndexOf("$*");
  const prefix = glob.slice(0, first);
  const suffix = glob.slice(last + 2);
  if (s.length < prefix.length + suffix.length || !s.startsWith(prefix) || !s.endsWith(suffix)) return false;
  let lo = prefix.length;
  const hi = s.length - suffix.length;
  let k = first + 2;
  while (k < last) {
    const next = glob.indexOf("$*", k);
    const piece = glob.slice(k, next);
    const at = s.indexOf(piece, lo);
    if (at === -1 || at + piece.length > hi) return false;
    lo = at + piece.length;
    k = next + 2;
  }
  return true;
}

/**
 * False when the literal text before the first `$` (or after the last `$*`) of two chunks
 * cannot both start (end) one string: a check in O(prefix) before any table.
 */
function endsAgree(a: string, b: string): boolean {
  let pa = a.indexOf("$");
  let pb = b.indexOf("$");
  if (pa === -1) pa = a.length;
  if (pb === -1) pb = b.length;
  const p = Math.min(pa, pb);
  for (let k = 0; k < p; k++) if (a.charCodeAt(k) !== b.charCodeAt(k)) return false;
  const la = a.lastIndexOf("*");
  const lb = b.lastIndexOf("*");
  const sa = a.length - la - 1;
  const sb = b.length - lb - 1;
  const s = Math.min(sa, sb);
  for (let k = 1; k <= s; k++) if (a.charCodeAt(a.length - k) !== b.charCodeAt(b.length - k)) return false;
  return true;
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
  // Cheap rejections first: literal prefixes and suffixes must agree.
  if (!endsAgree(a, b)) return false;
  // A glob against a literal chunk is a match, found greedily without a table.
  if (!bGlob) return globMatches(a, b);
  if (!aGlob) return globMatches(b, a);
  // Two globs, each with a `$*`, whose literal prefixes and suffixes agree always share a
  // string: the longer prefix, then every middle piece of one, then every middle piece of the
  // other, then the longer suffix (each glob's first `$*` absorbs the other's pieces). So no
  // table is needed: the check above, O(prefix + suffix), is the whole answer.
  // A non-verbatim canonical glob always has a literal character, so any common match is a
  // non-empty chunk; and a common match can always be chosen not to start with `@` (a glob
  // starting with a literal starts with that non-`@` literal; two globs starting with `$*`
  // can take any prefix). So the plain string question is the right one.
  return true;
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
