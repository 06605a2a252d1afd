import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import { configReference, REFERENCE_END, REFERENCE_START } from "../../src/config/reference.js";
import { repoPath } from "../support/repo.js";

test("docs/configuration.md holds the configuration reference generated from the schema (npm run docs:config)", () => {
  const page = readFileSync(repoPath("docs/configuration.md"), "utf8");
  const start = page.indexOf(REFERENCE_START);
  const end = page.indexOf(REFERENCE_END);
  assert.ok(start !== -1 && end > start, "docs/configuration.md lacks the generated reference block");
  assert.equal(page.slice(start + REFERENCE_START.length, end).trim(), configReference());
  // Every key of the sample configuration file on that page is in the reference.
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
