/**
 * `findUp` (src/find-up.ts): how zest finds its package.json and the tests find the repository,
 * from wherever their compiled copy runs.
 */
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { findUp } from "../src/find-up.js";

const root = mkdtempSync(join(tmpdir(), "zest-find-up-"));
after(() => rmSync(root, { recursive: true, force: true }));

test("the nearest file of that name wins: in the directory itself, else the closest one above", () => {
  const deep = join(root, "a", "b", "c");
  mkdirSync(deep, { recursive: true });
  writeFileSync(join(root, "marker.json"), "{}");
  writeFileSync(join(root, "a", "marker.json"), "{}");
  assert.equal(findUp(deep, "marker.json"), join(root, "a", "marker.json"));
  assert.equal(findUp(join(root, "a"), "marker.json"), join(root, "a", "marker.json"));
  writeFileSync(join(deep, "marker.json"), "{}");
  assert.equal(findUp(deep, "marker.json"), join(deep, "marker.json"));
});

test("a name found nowhere up to the root is an error naming it and where the search began", () => {
  const name = `no-such-file-${process.pid}-${Date.now()}.json`;
  assert.throws(() => findUp(root, name), new RegExp(`^Error: no ${name.replace(/\./g, "\\.")} in ${root} or above$`));
});
