/**
 * The import graph of src/, as the layer and import-circle tests read it: every relative import
 * of a module, type-only and dynamic ones included, resolved to the source file it names.
 */
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, normalize } from "node:path";

/** A relative import or re-export (`m[1]`), or a dynamic import (`m[2]`). */
export const IMPORT = /(?:import|export)\s[^;]*?from\s+["'](\.[^"']+)["']|import\(\s*["'](\.[^"']+)["']\s*\)/gs;

/** Every .ts file below `dir`. */
export function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    return statSync(p).isDirectory() ? sources(p) : p.endsWith(".ts") ? [p] : [];
  });
}

/** The source files `file` imports (a folder's import is its index.ts). */
export function importsOf(file: string): string[] {
  const out: string[] = [];
  for (const m of readFileSync(file, "utf8").matchAll(IMPORT)) {
    const target = normalize(join(dirname(file), m[1] ?? m[2] ?? "")).replace(/\.js$/, ".ts");
    out.push(existsSync(target) ? target : join(target.replace(/\.ts$/, ""), "index.ts"));
  }
  return out;
}
