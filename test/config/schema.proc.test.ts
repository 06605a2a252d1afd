import assert from "node:assert/strict";
import { test } from "node:test";
import type { z } from "zod";
import { applyCfgOverride, ConfigError } from "../../src/config/config.js";
import { MAX_DEPTH, problems } from "../../src/config/schema.js";
import { configSchema, validateConfig, type ZestConfig } from "../../src/zest-config.js";
import { runZestExpectingExit } from "../support/zest-process.js";

/** The one-line reason `validateConfig` refuses `config` with. */
function refusal(config: unknown): string {
  try {
    validateConfig(config);
  } catch (err) {
    assert.ok(err instanceof ConfigError);
    return err.message;
  }
  assert.fail("the config was accepted");
}

function nested(depth: number): unknown {
  let v: unknown = 1;
  for (let i = 0; i < depth; i++) v = { a: v };
  return v;
}

test("an unknown key at start-up is exit 2, naming the key and the closest valid one", async () => {
  const { code, stderr } = await runZestExpectingExit([
    "--rest-http-port",
    "127.0.0.1:0",
    "--cfg",
    "plugins/rest/htp_port:9000",
  ]);
  assert.equal(code, 2);
  assert.equal(stderr, "zest: unknown key plugins.rest.htp_port (did you mean http_port?)\n");
});

test("unknown keys are refused in every section, with a suggestion", () => {
  assert.equal(
    refusal({ queries_default_timout: 5 }),
    "unknown key queries_default_timout (did you mean queries_default_timeout?)",
  );
  assert.equal(
    refusal({ adminspace: { permissions: { wirte: true } } }),
    "unknown key adminspace.permissions.wirte (did you mean write?)",
  );
  assert.equal(
    refusal({ fabric: { nats: { server: ["nats://a"] } } }),
    "unknown key fabric.nats.server (did you mean servers?)",
  );
  assert.equal(
    refusal({
      plugins: { storage_manager: { storages: { s: { key_expr: "a/**", volume: "memory", key_exp: "b" } } } },
    }),
    "unknown key plugins.storage_manager.storages.s.key_exp (did you mean key_expr?)",
  );
  assert.equal(
    refusal({ plugins: { storage_manager: { storage: {} } } }),
    "unknown key plugins.storage_manager.storage (did you mean storages?)",
  );
});

test("wrong types name the key", () => {
  assert.match(refusal({ plugins: { rest: { variant: "c" } } }), /^plugins\.rest\.variant: /);
  assert.match(refusal({ id: "xyz" }), /^id: expected 1 to 16 bytes of hex/);
  assert.match(
    refusal({ plugins: { storage_manager: { storages: { s: { key_expr: 3, volume: "memory" } } } } }),
    /^plugins\.storage_manager\.storages\.s\.key_expr: /,
  );
});

test("response_idle_timeout_ms takes a whole number of milliseconds from 1 to a day", () => {
  for (const bad of [0, -1, 1.5, "30000", 86_400_001, 2 ** 31, null])
    assert.match(refusal({ plugins: { rest: { response_idle_timeout_ms: bad } } }), /response_idle_timeout_ms/);
  validateConfig({ plugins: { rest: { response_idle_timeout_ms: 86_400_000 } } });
  validateConfig({ plugins: { rest: { response_idle_timeout_ms: 1 } } });
});

test("the SSE resume settings are bounded: the log's size and bytes, and the timers to a day", () => {
  const sse = (v: Record<string, unknown>) => ({ plugins: { rest: { sse: v } } });
  for (const [name, bad] of [
    ["resume_log", 1_000_001],
    ["resume_log", 1e12],
    ["resume_log_bytes", 512 * 1024 * 1024 + 1],
    ["resume_linger_ms", 86_400_001],
    ["retry_ms", 2 ** 31],
    ["resume_log", -1],
  ] as const)
    assert.match(refusal(sse({ [name]: bad })), new RegExp(`sse\\.${name}`));
  validateConfig(sse({ resume_log: 1_000_000, resume_log_bytes: 512 * 1024 * 1024, resume_linger_ms: 86_400_000 }));
});

test("a storage named __proto__ is checked like any other (zod's record skips that key)", () => {
  const config = JSON.parse(
    '{"plugins":{"storage_manager":{"storages":{"__proto__":{"key_expr":"a/**","volume":"memory","oops":1}}}}}',
  );
  assert.equal(refusal(config), "unknown key plugins.storage_manager.storages.__proto__.oops (did you mean volume?)");
});

test("volumes keep driver options, plugins of -P pass through, and the front doors' sections are checked by their schemas", () => {
  validateConfig({
    access_control: { enabled: true, default_permission: "deny" },
    plugins: {
      rest: {
        http_port: 8000,
        tls: { listen_certificate: "c", listen_private_key: "k" },
        cors: { allowed_origins: [] },
        allowed_hosts: ["x"],
      },
      remote_api: { websocket_port: 10000 },
      my_plugin: { anything: [1, 2] },
      storage_manager: {
        volumes: { influx: { backend: "influxdb", url: "http://127.0.0.1:8086", db_opts: 1 } },
        allowed_paths: ["/tmp"],
        allowed_hosts: ["h"],
      },
    },
  });
  // Each door's section is its own schema's: an unknown key there names the door's section.
  assert.match(
    refusal({ plugins: { remote_api: { websocket_prot: 1 } } }),
    /^unknown key plugins\.remote_api\.websocket_prot \(did you mean websocket_port\?\)/,
  );
});

test(`values nested deeper than ${MAX_DEPTH} levels are refused at start-up`, async () => {
  validateConfig({
    plugins: { storage_manager: { volumes: { v: { backend: "memory", deep: nested(MAX_DEPTH - 6) } } } },
  });
  assert.match(
    refusal({ plugins: { storage_manager: { volumes: { v: { backend: "memory", deep: nested(5_000) } } } } }),
    /nested deeper than 64 levels/,
  );
  const deep = `plugins/storage_manager/volumes/v:{deep:${"[".repeat(100)}${"]".repeat(100)}}`;
  const { code, stderr } = await runZestExpectingExit(["--rest-http-port", "127.0.0.1:0", "--cfg", deep]);
  assert.equal(code, 2);
  assert.match(stderr, /nested deeper than 64 levels/);
});

test("--cfg paths are names: __proto__ becomes a key, never the prototype", () => {
  const config: Record<string, unknown> = {};
  applyCfgOverride(config, 'plugins/storage_manager/storages/__proto__:{key_expr:"p/**",volume:"memory"}');
  applyCfgOverride(config, "__proto__/polluted:true");
  assert.equal(({} as Record<string, unknown>).polluted, undefined);
  const storages = (config as ZestConfig).plugins?.storage_manager?.storages ?? {};
  assert.deepEqual(Object.keys(storages), ["__proto__"]);
  assert.deepEqual(problems(configSchema, config), ["unknown key __proto__ (did you mean plugins?)"]);
});

test("startZest checks an embedder's config like the CLI does", async () => {
  const { startZest } = await import("../../src/runtime.js");
  const { silentLogger } = await import("../../src/core/log.js");
  const bad = { plugins: { rest: { http_port: "none", varaint: "b" } } } as unknown as ZestConfig;
  await assert.rejects(
    startZest(bad, { logger: silentLogger }),
    (err: unknown) =>
      err instanceof ConfigError && /unknown key plugins\.rest\.varaint \(did you mean variant\?\)/.test(err.message),
  );
});

/** The zod definition behind a schema (the reference generator reads it the same way). */
interface Def {
  type: string;
  shape?: Record<string, z.ZodType>;
  innerType?: z.ZodType;
  in?: z.ZodType;
  options?: z.ZodType[];
  valueType?: z.ZodType;
}
const defOf = (s: z.ZodType): Def => (s as unknown as { _zod: { def: Def } })._zod.def;

/** Every numeric setting whose name says it is a duration, as a path (records entered under "x"). */
function timerSettings(s: z.ZodType, path: string[] = [], out: string[][] = []): string[][] {
  let d = defOf(s);
  for (;;) {
    const next = ["optional", "default", "prefault", "nullable"].includes(d.type)
      ? d.innerType
      : d.type === "pipe"
        ? d.in
        : undefined;
    if (next === undefined) break;
    d = defOf(next);
  }
  if (d.type === "object") for (const [k, v] of Object.entries(d.shape!)) timerSettings(v, [...path, k], out);
  else if (d.type === "record") timerSettings(d.valueType!, [...path, "x"], out);
  else if (d.type === "union") for (const o of d.options!) timerSettings(o, path, out);
  else if (d.type === "number" && /_ms$|timeout|interval|lease|delay|retention/.test(path.at(-1) ?? "")) out.push(path);
  return out;
}

test("every duration in the configuration is bounded to what Node's timers hold: 2^31 ms is refused, naming the setting", () => {
  const paths = timerSettings(configSchema as unknown as z.ZodType);
  assert.ok(paths.length >= 15, `found ${paths.length} duration settings`);
  for (const path of paths) {
    const config: Record<string, unknown> = {};
    let at = config;
    for (const k of path.slice(0, -1)) at = at[k] = {} as Record<string, unknown>;
    at[path.at(-1)!] = 2 ** 31;
    let message = "accepted";
    try {
      validateConfig(config);
    } catch (err) {
      message = (err as Error).message;
    }
    assert.match(message, new RegExp(path.at(-1)!), `${path.join(".")}: ${message}`);
  }
});
