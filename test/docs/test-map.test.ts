/**
 * Every module of src/ has a test that can be found by its path (docs/testing.md, "Where a
 * module's test is"): `test/<dir>/<module>.<aspect>.test.ts` beside the same folders as src/, or a
 * row in the page's table of modules without one, which says where they are tested and why.
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { basename, dirname, relative } from "node:path";
import { test } from "node:test";
import { sources } from "../support/imports.js";
import { repoPath } from "../support/repo.js";

/** The test files, as paths below test/. */
function testFiles(): string[] {
  return sources(repoPath("test"))
    .map((f) => relative(repoPath("test"), f))
    .filter((f) => f.endsWith(".test.ts"));
}

/** The modules of src/ without a test at their mirrored path (`src/a/b.ts` → `test/a/b.*.test.ts`). */
function withoutMirroredTest(): string[] {
  const tests = testFiles();
  return sources(repoPath("src"))
    .map((f) => relative(repoPath(), f))
    .filter((module) => {
      const rel = module.slice("src/".length, -".ts".length);
      const dir = dirname(rel);
      const stem = `${basename(rel)}.`;
      return !tests.some((t) => dirname(t) === dir && basename(t).startsWith(stem));
    })
    .sort();
}

/** The modules docs/testing.md lists as having no test of their own. */
function listed(): string[] {
  const page = readFileSync(repoPath("docs/testing.md"), "utf8");
  return [...page.matchAll(/^\| `(src\/[^`]+\.ts)` \|/gm)].map((m) => m[1]!).sort();
}

test("every src module has a test at its mirrored path, or a row in docs/testing.md that says where it is tested", () => {
  const missing = withoutMirroredTest();
  const rows = new Set(listed());
  assert.deepEqual(
    missing.filter((m) => !rows.has(m)),
    [],
    "modules with neither a mirrored test nor a row in docs/testing.md",
  );
  assert.deepEqual(
    [...rows].filter((m) => !missing.includes(m)),
    [],
    "rows of docs/testing.md for modules that have a mirrored test now, or no longer exist",
  );
});

test("test basenames are unique, so a failure report names one file", () => {
  const seen = new Map<string, string>();
  const twice: string[] = [];
  for (const t of testFiles()) {
    const b = basename(t);
    const other = seen.get(b);
    if (other !== undefined) twice.push(`${other} and ${t}`);
    seen.set(b, t);
  }
  assert.deepEqual(twice, []);
});
