/**
 * The repository's root, for tests that read its files (README, docs) or run what it built
 * (dist/). Found by walking up to tsconfig.test.json rather than by a fixed `../..`: the suite
 * runs from a compiled copy of the tests (.test-build/test/), one level deeper than the sources.
 */
import { existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

function findRoot(from: string): string {
  for (let dir = from; ; ) {
    if (existsSync(join(dir, "tsconfig.test.json"))) return dir;
    const up = dirname(dir);
    if (up === dir) throw new Error(`no tsconfig.test.json above ${from}`);
    dir = up;
  }
}

/** The repository root. */
export const REPO_ROOT = findRoot(dirname(fileURLToPath(import.meta.url)));

/** A path inside the repository. */
export function repoPath(...parts: string[]): string {
  return join(REPO_ROOT, ...parts);
}
