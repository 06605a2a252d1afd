/**
 * Variant B (legacy 0.4/0.5 paths, docs/key-expressions.md §2) mapped onto the one modern key space.
 * A legacy path `/a/b*` is the modern KE `a/b$*`: the legacy in-chunk glob `*` is `$*`, a whole
 * `*` chunk is `*` (one non-empty chunk), `**` is `**`, and the `/@/` admin prefix becomes the
 * verbatim `@` chunk, which `**` never reaches.
 */
import { canonize } from "./canon.js";
import { KeyExprError } from "./errors.js";

/** Characters a legacy path never allows (selector punctuation). */
const PATH_FORBIDDEN = ["?", "#", "[", "]"] as const;

function invalid(path: string, reason: string): KeyExprError {
  return new KeyExprError("InvalidPath", path, reason);
}

/**
 * Variant B path or path expression → canonical modern KE string.
 *
 * The input is trimmed; it must start with `/`; runs of `/` collapse and one trailing `/` is
 * dropped; the leading `/` is stripped. `*` inside a chunk becomes `$*`; `**` is allowed only as
 * a whole chunk (`/a**`, `/**a` rejected, as 0.4 did). `?`, `#`, `[`, `]` are rejected. `/` alone
 * (no chunk at all) is rejected as "empty path". With `opts.expr` false (a key for PUT) any `*`
 * is rejected. `$`, legal in a legacy path but reserved by modern KEs, is rejected. Every
 * rejection is a KeyExprError of kind "InvalidPath".
 */
export function pathToKeyExpr(path: string, opts: { expr: boolean }): string {
  const p = path.trim();
  if (p.length === 0) throw invalid(path, "empty path");
  if (p[0] !== "/") throw invalid(path, 'a path must start with "/"');
  for (const c of PATH_FORBIDDEN) {
    if (p.includes(c)) throw invalid(path, `"${c}" is not allowed in a path`);
  }
  if (p.includes("$")) throw invalid(path, '"$" is not allowed in a path (key expressions reserve it)');
  if (!opts.expr && p.includes("*")) throw invalid(path, '"*" is not allowed in a key, only in a path expression');
  // Splitting on "/" and dropping empty pieces is exactly "collapse runs, drop the leading and
  // one trailing slash".
  const chunks = p.split("/").filter((c) => c.length > 0);
  if (chunks.length === 0) throw invalid(path, "empty path");
  for (const c of chunks) {
    if (c !== "**" && c.includes("**")) {
      throw invalid(path, `"**" must be a whole chunk, as in "/a/**/b" (found "${c}")`);
    }
  }
  // canonize reads an in-chunk `*` as `$*` and puts `**`/`*` runs in canonical order.
  try {
    return canonize(chunks.join("/"));
  } catch (err) {
    throw err instanceof KeyExprError ? invalid(path, err.message) : err;
  }
}

/** Inverse for display: `"/" + ke`, with each `$*` shown as the legacy in-chunk `*`. */
export function keyExprToPath(ke: string): string {
  return `/${ke.replaceAll("$*", "*")}`;
}
