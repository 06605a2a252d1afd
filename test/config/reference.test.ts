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
    new RegExp(`\\| \`plugins\\.rest\\.max_connections_per_address\` \\|[^\\n]*at most ${DEFAULT_PER_ADDRESS}\\)`),
  );
  assert.equal(DEFAULT_PER_ADDRESS, 256);
  // A parsed config carries the same defaults.
  const parsed = configSchema.parse({});
  assert.equal(parsed.plugins.rest.body_limit, 16 * 1024 * 1024);
  assert.equal(parsed.plugins.remote_api.max_connections, 1000);
});

/**
 * A default written in a description's prose ("(300000)", "(default true)", "`auto` (default)")
 * agrees with the code only by care: defaults go in the schema (`.default(CONST)`), where the
 * reference's default column and the parsed config read them. A default the schema cannot hold
 * (derived: "default: random", "a quarter of max_connections") is written as a rule, not a value.
 */
const PROSE_DEFAULT = [
  /\((?:-?\d[\d_.]*(?: ?(?:ms|s|MB|bytes))?|true|false)[,;)]/,
  /\bdefault:?\s+(?:-?\d|true\b|false\b|none\b|tcp\/)/i,
  /\(default\)/i,
];

test("no description in the configuration schema names a default in prose", () => {
  // The patterns catch the phrasings the schema used to have, and let rules and bounds through.
  for (const old of ["in ms (300000)", "per connection (256)", "(256, at most a quarter)", "(10000 ms)", "(true)"])
    assert.ok(
      PROSE_DEFAULT.some((p) => p.test(old)),
      old,
    );
  for (const old of ["(default true)", "(default 1)", "`auto` (default)", "(default tcp/127.0.0.1:7447)"])
    assert.ok(
      PROSE_DEFAULT.some((p) => p.test(old)),
      old,
    );
  for (const fine of ["(0 disables it)", "(at most 86400000)", "(default: random)", "(1009 beyond it)"])
    assert.ok(!PROSE_DEFAULT.some((p) => p.test(fine)), fine);
  const named: string[] = [];
  for (const row of configReference(configSchema).split("\n").slice(2)) {
    const cells = row.split(" | ");
    const description = cells[cells.length - 1]!.replace(/ \|$/, "");
    if (PROSE_DEFAULT.some((p) => p.test(description))) named.push(row);
  }
  assert.deepEqual(named, []);
});

test("sections whose defaults were prose parse to their defaults", () => {
  const parsed = configSchema.parse({ fabric: { nats: { servers: "nats://a:4222, nats://b:4222" } } });
  assert.deepEqual(parsed.fabric?.nats, {
    servers: ["nats://a:4222", "nats://b:4222"],
    heartbeatMs: 1_000,
    peerTimeoutMs: 4_000,
    ackTimeoutMs: 5_000,
    connectTimeoutMs: 5_000,
    reconnectTimeWaitMs: 250,
  });
  assert.equal(configSchema.parse({ fabric: { nats: { servers: " , " } } }).fabric?.nats, undefined);
  assert.deepEqual(parsed.plugins.rest.long_poll, {
    max_wait_ms: 300_000,
    max_waits: 10_000,
    max_waits_per_address: 1_000,
  });
  assert.deepEqual(parsed.plugins.rest.http2, {
    enabled: true,
    max_concurrent_streams: 256,
    max_session_memory_mb: 10,
    idle_timeout_ms: 65_000,
  });
  // A quarter of the remote API's 1000 connections: the cap its guard applies, now in the parsed config.
  assert.equal(parsed.plugins.remote_api.max_connections_per_address, 250);
  assert.equal(
    configSchema.parse({ plugins: { remote_api: { max_connections: 40 } } }).plugins.remote_api
      .max_connections_per_address,
    10,
  );
  assert.equal(parsed.scouting.multicast.ttl, 1);
  assert.equal(parsed.adminspace.layout, "a");
  assert.equal(configSchema.parse({ plugins: { rest: { variant: "b" } } }).adminspace.layout, "b");
});
