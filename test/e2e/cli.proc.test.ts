import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { getJson, http } from "../support/http.js";
import { CLI, runZestExpectingExit, startZest } from "../support/zest-process.js";

const STORAGES = "/@/router/local/config/plugins/storage_manager/storages";

describe("the command line: config files, flags and exit codes", () => {
  let dir: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), "zest-cli-"));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  const file = (name: string, text: string): string => {
    const p = join(dir, name);
    writeFileSync(p, text);
    return p;
  };

  test("-c reads a JSON5 file with comments and trailing commas", async () => {
    const cfg = file(
      "ok.json5",
      `// a storage and an id
      {
        id: "0a0b",
        plugins: {
          storage_manager: {
            storages: { demo: { key_expr: "demo/example/**", volume: "memory", }, },
          },
        },
      }`,
    );
    const z = await startZest(["-c", cfg]);
    try {
      const { entries } = await getJson(z.url, "/@/router/local/status/plugins/storage_manager/storages/*");
      assert.deepEqual(
        entries.map((e) => e.key),
        ["@/router/0A0B/status/plugins/storage_manager/storages/demo"],
      );
      await http(z.url, "PUT", "/demo/example/x", { body: "1", headers: { "content-type": "text/plain" } });
      assert.equal((await getJson(z.url, "/demo/example/x")).entries[0]?.value, "1");
    } finally {
      await z.stop();
    }
  });

  test("a malformed JSON5 file exits 2 with one line", async () => {
    const r = await runZestExpectingExit(["-c", file("bad.json5", "{ plugins: { rest: ")]);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /^zest: config file .*bad\.json5 is not valid JSON5: /);
    assert.equal(r.stderr.trim().split("\n").length, 1);
  });

  test("an invalid storage in the config file exits 2 with the reason on one line", async () => {
    for (const [name, storage, re] of [
      ["badke.json5", '{key_expr:"x//y", volume:"memory"}', /not a valid key expression/],
      ["novol.json5", '{key_expr:"x/**", volume:"nosuch"}', /`nosuch` volume not found/],
    ] as const) {
      const r = await runZestExpectingExit([
        "--rest-http-port",
        "127.0.0.1:0",
        "-c",
        file(name, `{plugins:{storage_manager:{storages:{s:${storage}}}}}`),
      ]);
      assert.equal(r.code, 2, r.stderr);
      assert.match(r.stderr, /^zest: invalid storage_manager configuration: /);
      assert.match(r.stderr, re);
      assert.equal(r.stderr.trim().split("\n").length, 1);
    }
  });

  test("-v shows info logs; without it the router is quiet", async () => {
    const quiet = await startZest([]);
    const loud = await startZest(["-v"]);
    try {
      assert.doesNotMatch(quiet.stderr(), /"level":30/);
      assert.match(loud.stderr(), /"level":30.*REST gateway listening/);
    } finally {
      await quiet.stop();
      await loud.stop();
    }
  });

  test("--help lists every flag", () => {
    const r = spawnSync(process.execPath, [CLI, "--help"], { encoding: "utf8" });
    assert.equal(r.status, 0);
    for (const flag of [
      "-c, --config",
      "--cfg",
      "--rest-http-port",
      "--rest-variant",
      "--id",
      "--adminspace-permissions",
      "-P, --plugin",
      "--data-dir",
      "--nats",
      "--query-timeout",
      "--body-limit",
      "-e, --connect",
      "-v, --verbose",
      "-V, --version",
      "-h, --help",
    ]) {
      assert.ok(r.stdout.includes(flag), flag);
    }
  });
});

describe("query timeout over HTTP", () => {
  const check = async (url: string): Promise<void> => {
    const started = Date.now();
    const r = await http(url, "GET", "/test/slow/**");
    assert.ok(Date.now() - started < 1500, "answered at the timeout, not when the slow queryable finished");
    assert.equal(r.status, 504);
    const entries = JSON.parse(r.text) as Array<Record<string, unknown>>;
    assert.deepEqual(entries[0], { key: "test/slow/fast", value: "fast", encoding: "text/plain", time: "None" });
    assert.equal(entries.length, 2);
    assert.equal(entries[1]?.key, "ERROR");
    assert.match(entries[1]?.value as string, /^Timeout/);
    assert.match(r.text, /\n\{ "key": "ERROR", "value": "Timeout[^"]*", "encoding": "text\/plain"\}\n\]\n$/);
  };

  test("--query-timeout 300: a slow queryable gives 504 with the fast replies and an ERROR entry", async () => {
    const z = await startZest(["--query-timeout", "300", "-P", "test/fixtures/slow-plugin.js"]);
    try {
      await check(z.url);
    } finally {
      await z.stop();
    }
  });

  test("queries_default_timeout from a -c config file does the same", async () => {
    const dir = mkdtempSync(join(tmpdir(), "zest-cli-"));
    try {
      const cfg = join(dir, "timeout.json5");
      writeFileSync(cfg, "{ queries_default_timeout: 300 }");
      const z = await startZest(["-c", cfg, "-P", "test/fixtures/slow-plugin.js"]);
      try {
        await check(z.url);
      } finally {
        await z.stop();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("--adminspace-permissions", () => {
  test("none: admin reads and writes are 403", async () => {
    const z = await startZest(["--adminspace-permissions", "none"]);
    try {
      const get = await http(z.url, "GET", "/@/router/local");
      assert.equal(get.status, 403);
      assert.match(get.text, /reading the admin space is disabled/);
      const put = await http(z.url, "PUT", `${STORAGES}/x`, { body: '{key_expr:"x/**",volume:"memory"}' });
      assert.equal(put.status, 403);
      assert.equal((await getJson(z.url, "/demo/**")).status, 200);
    } finally {
      await z.stop();
    }
  });

  test("w: admin writes work, admin reads are 403", async () => {
    const z = await startZest(["--adminspace-permissions", "w"]);
    try {
      const put = await http(z.url, "PUT", `${STORAGES}/x`, { body: '{key_expr:"x/**",volume:"memory"}' });
      assert.equal(put.status, 200);
      assert.equal((await http(z.url, "GET", "/@/**/storages/**")).status, 403);
      await http(z.url, "PUT", "/x/k", { body: "v", headers: { "content-type": "text/plain" } });
      assert.equal((await getJson(z.url, "/x/k")).entries[0]?.value, "v");
    } finally {
      await z.stop();
    }
  });
});
