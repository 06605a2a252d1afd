/**
 * Canonization (docs/key-expressions.md §1.3), following the RFC rewrite rules rather than the Rust
 * canonizer, which panics or drops text on `$*` runs that do not start a chunk.
 */
import { KeyExprError } from "./errors.js";
import { checkKeyExpr } from "./validate.js";

/**
 * Rewrites one non-empty chunk other than `*`/`**`: every `*` not already part of `$*` becomes
 * `$*` (the zest extension of docs/key-expressions.md §1.3), runs of `$*` collapse to one, and a chunk left as
 * exactly `$*` becomes `*`. A `$` not followed by `*` is kept so validation reports it.
 */
function canonizeChunk(chunk: string): string {
  if (chunk === "*" || chunk === "**") return chunk;
  if (!chunk.includes("*")) return chunk;
  let out = "";
  let lastWasStar = false;
  const n = chunk.length;
  for (let i = 0; i < n; i++) {
    const c = chunk[i];
    if (c === "$" && chunk[i + 1] === "*") {
      i++;
    } else if (c !== "*") {
      out += c;
      lastWasStar = false;
      continue;
    }
    // Either `$*` or a bare `*`: both are one sub-chunk wildcard; adjacent ones merge.
    if (!lastWasStar) out += "$*";
    lastWasStar = true;
  }
  return out === "$*" ? "*" : out;
}

/**
 * Autocanonize per §1.3 (RFC rules, NOT the buggy Rust `$*`-run behaviour) and return a valid
 * canonical string, or throw KeyExprError.
 *
 * zest extension (docs/key-expressions.md §1.3): a `*` inside a chunk that is not part of `$*`, in a chunk that
 * is not exactly `*` or `**`, is read as `$*` (`demo/example/*eval` → `demo/example/$*eval`,
 * `a*` → `a$*`, `***` → `*`). Non-canonical forms such as `a/**\/**` or `**\/*` are canonized,
 * not refused. Leading, trailing and double slashes are still errors (`EmptyChunk`).
 */
export function canonize(s: string): string {
  // Most inputs are already canonical; keep them (and their identity) as they are.
  if (checkKeyExpr(s) === null) return s;
  if (s.length === 0) throw new KeyExprError("Empty", s);
  const chunks = s.split("/");
  const out: string[] = [];
  // A `**` is held back until the next chunk that is not `*`: this merges `**` runs and moves
  // every `*` to the left of the `**` it touches (`**/*` → `*/**`).
  let pendingDouble = false;
  for (const raw of chunks) {
    if (raw.length === 0) throw new KeyExprError("EmptyChunk", s);
    const c = canonizeChunk(raw);
    if (c === "**") {
      pendingDouble = true;
    } else if (c === "*") {
      out.push(c);
    } else {
      if (pendingDouble) out.push("**");
      pendingDouble = false;
      out.push(c);
    }
  }
  if (pendingDouble) out.push("**");
  const result = out.join("/");
  const kind = checkKeyExpr(result);
  if (kind !== null) throw new KeyExprError(kind, s);
  return result;
}
