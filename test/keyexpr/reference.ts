/**
 * An independent, deliberately naive model of §1.2 for the property tests: does a key
 * expression (canonical or not) match a concrete key? Globs become regular expressions and
 * `**` is plain backtracking, so it shares no code with src/keyexpr.
 */

function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

const regexCache = new Map<string, RegExp>();

/** Does one KE chunk (not `**`) match one key chunk? */
export function chunkMatches(pattern: string, chunk: string): boolean {
  if (pattern.startsWith("@")) return pattern === chunk; // verbatim: identical only
  if (chunk.startsWith("@") || chunk.length === 0) return false;
  if (pattern === "*") return true;
  if (!pattern.includes("$*")) return pattern === chunk;
  let re = regexCache.get(pattern);
  if (re === undefined) {
    re = new RegExp(`^${pattern.split("$*").map(escapeRegExp).join("[^/]*")}$`);
    regexCache.set(pattern, re);
  }
  return re.test(chunk);
}

/** Does the KE `ke` denote the concrete key `key`? (`**` may match zero chunks.) */
export function matchesKey(ke: string, key: string): boolean {
  return matchChunks(ke.split("/"), 0, key.split("/"), 0);
}

function matchChunks(p: string[], i: number, k: string[], j: number): boolean {
  if (i === p.length) return j === k.length;
  if (p[i] === "**") {
    if (matchChunks(p, i + 1, k, j)) return true;
    return j < k.length && !k[j]!.startsWith("@") && matchChunks(p, i, k, j + 1);
  }
  return j < k.length && chunkMatches(p[i]!, k[j]!) && matchChunks(p, i + 1, k, j + 1);
}

/** Every key of 1..maxDepth chunks over `alphabet`. */
export function universe(alphabet: readonly string[], maxDepth: number): string[] {
  const out: string[] = [];
  let layer: string[] = [...alphabet];
  for (let d = 1; d <= maxDepth; d++) {
    out.push(...layer);
    if (d < maxDepth) layer = layer.flatMap((prefix) => alphabet.map((c) => `${prefix}/${c}`));
  }
  return out;
}

/** A random pick from `items`. */
export function pick<T>(next: () => number, items: readonly T[]): T {
  return items[Math.floor(next() * items.length)]!;
}
