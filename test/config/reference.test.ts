import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import { configReference, REFERENCE_END, REFERENCE_START } from "../../src/config/reference.js";
import { DEFAULT_PER_ADDRESS } from "../../src/access/connections.js";
import { configSchema } from "../../src/zest-config.js";
import { repoPath } from "../support/repo.js";

test("docs/configuration.md's reference is the one generated from the schema (npm run docs:config)", () => {
  const page = readFileSync(repoPath("docs/configuration.md"), "utf8");
  const start = page.indexOf(REFERENCE_START);
  const end = page.indexOf(REFERENCE_END);
  assert.ok(start !== -1 && end > start, "docs/configuration.md lacks the generated reference block");
  assert.equal(page.slice(start + REFERENCE_START.length, end).trim(), configReference(configSchema));
  for (const key of [
    "data_dir",
    "queries_default_timeout",
    "plugins.rest.body_limit",
    "plugins.remote_api.websocket_port",
    "plugins.storage_manager.allowed_paths",
    "fabric.nats.servers",
  ]) {
    assert.ok(configReference(configSchema).includes(`| \`${key}\` |`), key);
  }
});

test("the reference shows the defaults the code uses, read from the schema", () => {
  const ref = configReference(configSchema);
  assert.match(ref, /\| `plugins\.rest\.body_limit` \| number \| `16777216` \|/);
  assert.match(ref, /\| `plugins\.rest\.http_port` \| number \\\| string \| `8000` \|/);
  // max_connections_per_address is derived (at most a quarter of the total); its text names the code's constant.
  assert.match(
    ref,
    new RegExp(`\\| \`plugins\\.rest\\.max_connections_per_address\` \\|[^\\n]*\\(${DEFAULT_PER_ADDRESS},`),
  );
  assert.equal(DEFAULT_PER_ADDRESS, 256);
  // A parsed config carries the same defaults.
  const parsed = configSchema.parse({});
  assert.equal(parsed.plugins.rest.body_limit, 16 * 1024 * 1024);
  assert.equal(parsed.plugins.remote_api.max_connections, 1000);
});
