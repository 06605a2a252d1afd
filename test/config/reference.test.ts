import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import { configReference, REFERENCE_END, REFERENCE_START } from "../../src/config/reference.js";
import { repoPath } from "../support/repo.js";

test("the README's configuration reference is the one generated from the schema (npm run docs:config)", () => {
  const readme = readFileSync(repoPath("README.md"), "utf8");
  const start = readme.indexOf(REFERENCE_START);
  const end = readme.indexOf(REFERENCE_END);
  assert.ok(start !== -1 && end > start, "README.md lacks the generated reference block");
  assert.equal(readme.slice(start + REFERENCE_START.length, end).trim(), configReference());
  // Every key of the sample config file in the README is in the reference.
  for (const key of [
    "data_dir",
    "queries_default_timeout",
    "plugins.rest.body_limit",
    "plugins.storage_manager.allowed_paths",
    "fabric.nats.servers",
  ]) {
    assert.ok(configReference().includes(`| \`${key}\` |`), key);
  }
});
