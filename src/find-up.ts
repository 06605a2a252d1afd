import { existsSync } from "node:fs";
import { dirname, join } from "node:path";

/**
 * The path of the nearest file called `name` in `dir` or a directory above it; throws when there
 * is none up to the root.
 */
export function findUp(dir: string, name: string): string {
  for (let d = dir; ; ) {
    const candidate = join(d, name);
    if (existsSync(candidate)) return candidate;
    const up = dirname(d);
    if (up === d) throw new Error(`no ${name} in ${dir} or above`);
    d = up;
  }
}
