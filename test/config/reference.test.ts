import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import { configReference, REFERENCE_END, REFERENCE_START } from "../../src/config/reference.js";
import { DEFAULT_PER_ADDRESS } from "../../src/access/connections.js";
import { defaultStartOptions } from "../../src/defaults.js";
import {
  VOLUME_OPTIONS_END,
  VOLUME_OPTIONS_START,
  volumeOptionsReference,
} from "../../src/storage/options-reference.js";
import { DEFAULT_MEMORY_QUOTA, memoryDriver } from "../../src/storage/volumes/memory.js";
import { configSchema } from "../../src/zest-config.js";
import { repoPath } from "../support/repo.js";

/** The text between `start` and `end` in docs/configuration.md. */
function block(start: string, end: string): string {
  const page = readFileSync(repoPath("docs/configuration.md"), "utf8");
  const a = page.indexOf(start);
  const b = page.indexOf(end);
  assert.ok(a !== -1 && b > a, `docs/configuration.md lacks the ${start} block`);
  return page.slice(a + start.length, b).trim();
}

test("docs/configuration.md's configuration reference is the one generated from the schema (npm run docs:config)", () => {
  assert.equal(block(REFERENCE_START, REFERENCE_END), configReference(configSchema));
  // Every key of the sample config file in the README is in the reference.
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

test("docs/configuration.md's volume options are those of the drivers' schemas, defaults included (npm run docs:config)", () => {
  const drivers = [memoryDriver, ...(defaultStartOptions().drivers ?? [])];
  const generated = volumeOptionsReference(drivers);
  assert.equal(block(VOLUME_OPTIONS_START, VOLUME_OPTIONS_END), generated);
  // Defaults come from the schemas the drivers parse with, so the page shows what the code does.
  assert.ok(generated.includes(`| volume | \`quota\` | integer | \`${DEFAULT_MEMORY_QUOTA}\` |`), generated);
  assert.ok(generated.includes("| storage | `create_db` | boolean | `true` |"), generated);
  assert.ok(generated.includes("| volume | `timeout_ms` | integer | `5000` |"), generated);
  for (const d of drivers) assert.ok(generated.includes(`#### \`${d.name}\``), d.name);
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
