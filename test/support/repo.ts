/**
 * The repository's root, for tests that read its files (README, docs) or run what it built
 * (dist/). Found by walking up to tsconfig.test.json rather than by a fixed `../..`: the suite
 * runs from a compiled copy of the tests (.test-build/test/), one level deeper than the sources.
 */
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { findUp } from "../../src/find-up.js";

/** The repository root. */
export const REPO_ROOT = dirname(findUp(dirname(fileURLToPath(import.meta.url)), "tsconfig.test.json"));

/** A path inside the repository. */
export function repoPath(...parts: string[]): string {
  return join(REPO_ROOT, ...parts);
}
