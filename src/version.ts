import { existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

/**
 * The package.json of the package this module belongs to: the nearest one above it (beside
 * `dist/` when built, beside `src/` in a compiled copy of the tests, which has none of its own).
 */
function packageJson(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const candidate = join(dir, "package.json");
    if (existsSync(candidate)) return candidate;
    const up = dirname(dir);
    if (up === dir) throw new Error(`zest: no package.json above ${fileURLToPath(import.meta.url)}`);
    dir = up;
  }
}

/** zest's version, from package.json. */
export const VERSION: string = (JSON.parse(readFileSync(packageJson(), "utf8")) as { version: string }).version;
