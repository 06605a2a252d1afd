/**
 * The literal chunks of a canonical key expression before its first wildcard chunk, or
 * undefined when the first chunk is already wild. Every key that intersects `keyExpr` equals
 * this prefix or lies under it, so ordered stores can scan just that range.
 */
export function literalPrefix(keyExpr: string): string | undefined {
  const chunks = keyExpr.split("/");
  const wild = chunks.findIndex((c) => c.includes("*"));
  const prefix = (wild === -1 ? chunks : chunks.slice(0, wild)).join("/");
  return prefix === "" ? undefined : prefix;
}
