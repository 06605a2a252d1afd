import assert from "node:assert/strict";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { test } from "node:test";
import { repoPath } from "../support/repo.js";

const CLIENT = repoPath("src/rest/explorer/client");

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    return statSync(p).isDirectory() ? files(p) : [p];
  });
}

test("no server module pulls the DOM library into the server compilation; the explorer's sources are left out of it", () => {
  const leaks = files(repoPath("src"))
    .filter((f) => f.endsWith(".ts") && !f.startsWith(CLIENT))
    .filter((f) => /\/\/\/\s*<reference\s+lib="dom/i.test(readFileSync(f, "utf8")))
    .map((f) => relative(repoPath(), f));
  assert.deepEqual(leaks, []);
  const server = JSON.parse(readFileSync(repoPath("tsconfig.json"), "utf8")) as {
    compilerOptions: { lib: string[] };
    exclude?: string[];
  };
  assert.ok(!server.compilerOptions.lib.some((lib) => /^dom/i.test(lib)), "tsconfig.json has no DOM lib");
  assert.ok(server.exclude?.includes("src/rest/explorer/client"), "tsconfig.json leaves the browser code out");
});

test("the build bundles the explorer's modules into one script with no import left", () => {
  const bundle = readFileSync(repoPath("dist/rest/explorer/app.js"), "utf8");
  assert.doesNotMatch(bundle, /^\s*import\s/m, "every module is inlined");
  // Each module of client/ made it in: a function each one defines is in the bundle.
  for (const name of ["renderTree", "renderDetail", "valueView", "setupWriteForm", "loadAdmin", "putEntry", "armOrRun"])
    assert.match(bundle, new RegExp(`function ${name}\\b`), name);
});
