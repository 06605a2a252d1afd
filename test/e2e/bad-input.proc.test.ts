import assert from "node:assert/strict";
import { request } from "node:http";
import { after, before, describe, test } from "node:test";
import { getJson, http, rawRequest } from "../support/http.js";
import { runZestExpectingExit, startZest, type ZestProcess } from "../support/zest-process.js";

const STORAGES = "/@/router/local/config/plugins/storage_manager/storages";

describe("bad input gets a clear status and one-line reason, and loses nothing", () => {
  let z: ZestProcess;
  before(async () => {
    z = await startZest(["--body-limit", "1024"]);
    await http(z.url, "PUT", "/keep/me", { body: "safe", headers: { "content-type": "text/plain" } });
  });
  after(() => z.stop());

  const stillServing = async (): Promise<void> => {
    const { entries } = await getJson(z.url, "/keep/me");
    assert.equal(entries[0]?.value, "safe");
  };

  test("invalid key expressions are 400 with the rule broken", async () => {
    for (const path of ["/demo//x", "/demo/x/", "/a$b", "/"]) {
      const r = await rawRequest(z.url, "GET", path);
      assert.equal(r.status, 400, path);
      assert.equal(r.text.trim().split("\n").length, 1);
      assert.match(r.text, /key expression|empty/i);
    }
    const put = await rawRequest(z.url, "PUT", "/demo//x", "v");
    assert.equal(put.status, 400);
    await stillServing();
  });

  test("malformed percent-encoding in the path is a 400; %3F and %23 are key characters", async () => {
    for (const path of ["/demo/%E0%A4%A", "/demo/%zz", "/demo/a%"]) {
      const r = await rawRequest(z.url, "GET", path);
      assert.equal(r.status, 400, path);
      assert.match(r.text, /malformed percent-encoding/);
      assert.equal((await rawRequest(z.url, "PUT", path, "v")).status, 400, path);
    }
    const put = await rawRequest(z.url, "PUT", "/pct/what%3fnot%23tag%20x", "v");
    assert.equal(put.status, 200, put.text);
    const got = await getJson(z.url, "/pct/**");
    assert.deepEqual(
      got.entries.map((e) => e.key),
      ["pct/what%3Fnot%23tag x"],
    );
    assert.equal((await getJson(z.url, "/pct/what%3Fnot%23tag%20x")).entries.length, 1);
    await stillServing();
  });

  test("PATCH stores like PUT", async () => {
    const r = await http(z.url, "PATCH", "/patched/k", { body: "p", headers: { "content-type": "text/plain" } });
    assert.equal(r.status, 200);
    assert.equal((await getJson(z.url, "/patched/k")).entries[0]?.value, "p");
  });

  test("non-canonical but fixable expressions are canonized, not refused", async () => {
    const r = await http(z.url, "GET", "/keep/**/**");
    assert.equal(r.status, 200);
    assert.equal((JSON.parse(r.text) as unknown[]).length, 1);
  });

  test("a body above the limit is a 413 and the router keeps serving", async () => {
    const r = await http(z.url, "PUT", "/big/one", {
      body: "x".repeat(5000),
      headers: { "content-type": "text/plain" },
    });
    assert.equal(r.status, 413);
    assert.match(r.text, /exceeds the limit of 1024 bytes/);
    const { entries } = await getJson(z.url, "/big/**");
    assert.deepEqual(entries, []);
    await stillServing();
  });

  test("unknown volume, malformed storage JSON, missing fields: 400 with the reason", async () => {
    const cases: Array<[string, RegExp]> = [
      ['{key_expr:"x/**", volume:"nosuch"}', /`nosuch` volume not found/],
      ["{key_expr: ", /invalid JSON5/],
      ['{volume:"memory"}', /`key_expr` field missing/],
      ['{key_expr:"x//y", volume:"memory"}', /not a valid key expression/],
      ['{key_expr:"x/**"}', /`volume` field missing/],
      ['"just a string"', /expected a JSON object/],
    ];
    for (const [body, re] of cases) {
      const r = await http(z.url, "PUT", `${STORAGES}/bad`, { body, headers: { "content-type": "application/json" } });
      assert.equal(r.status, 400, body);
      assert.match(r.text, re);
    }
    const list = await getJson(z.url, "/@/**/storages/bad");
    assert.deepEqual(list.entries, []);
    await stillServing();
  });

  test("writing a read-only admin key is a 403, not a silent 200", async () => {
    const r = await http(z.url, "PUT", "/@/router/local/status/plugins/storage_manager/storages/x", { body: "{}" });
    assert.equal(r.status, 403);
    assert.match(r.text, /read-only/);
  });

  test("removing a storage that does not exist is a 404", async () => {
    const r = await http(z.url, "DELETE", `${STORAGES}/nosuch`);
    assert.equal(r.status, 404);
    assert.match(r.text, /no storage named nosuch/);
  });

  test("other methods are 405 with an Allow header", async () => {
    for (const m of ["POST", "PROPFIND"]) {
      const r = await http(z.url, m, "/keep/me");
      assert.equal(r.status, 405, m);
      assert.match(r.headers.get("allow") ?? "", /GET/);
    }
    await stillServing();
  });

  test("CORS preflight from a foreign origin allows reads only, and never echoes the requested headers", async () => {
    const r = await http(z.url, "OPTIONS", "/keep/me", {
      headers: {
        origin: "http://example.test",
        "access-control-request-method": "PUT",
        "access-control-request-headers": "content-type, x-evil",
      },
    });
    assert.equal(r.status, 204);
    assert.equal(r.headers.get("access-control-allow-origin"), "*");
    assert.equal(r.headers.get("access-control-allow-methods"), "GET");
    assert.doesNotMatch(r.headers.get("access-control-allow-headers") ?? "", /x-evil/);
    const get = await http(z.url, "GET", "/keep/me", { headers: { origin: "http://example.test" } });
    assert.equal(get.headers.get("access-control-allow-origin"), "*");
  });

  test("a client still sending a refused body gets its 413, never a reset (content-length and chunked)", async () => {
    // 4 MiB against a 1 KiB limit: the client is mid-upload when the router refuses.
    const big = "x".repeat(4 * 1024 * 1024);
    for (let i = 0; i < 10; i++) {
      const sized = await http(z.url, "PUT", "/big/sized", { body: big, headers: { "content-type": "text/plain" } });
      assert.equal(sized.status, 413);
      const chunk = new TextEncoder().encode(big.slice(0, 512 * 1024));
      const body = new ReadableStream<Uint8Array>({
        start(c) {
          for (let k = 0; k < 8; k++) c.enqueue(chunk);
          c.close();
        },
      });
      const chunked = await fetch(`${z.url}/big/chunked`, {
        method: "PUT",
        body,
        duplex: "half",
        headers: { "content-type": "text/plain" },
      } as RequestInit);
      assert.equal(chunked.status, 413);
      assert.match(await chunked.text(), /exceeds the limit of 1024 bytes/);
    }
    const { entries } = await getJson(z.url, "/big/**");
    assert.deepEqual(entries, []);
    await stillServing();
  });

  test("a client that drops mid-request loses nothing else", async () => {
    const u = new URL(z.url);
    await new Promise<void>((resolve) => {
      const req = request({
        host: u.hostname,
        port: u.port,
        method: "PUT",
        path: "/half/sent",
        headers: { "content-length": "100" },
      });
      req.on("error", () => resolve());
      req.write("only part");
      setTimeout(() => {
        req.destroy();
        resolve();
      }, 50);
    });
    const { entries } = await getJson(z.url, "/half/**");
    assert.deepEqual(entries, []);
    await stillServing();
  });
});

describe("default limits", () => {
  test("without --body-limit a body above 16 MiB is a 413", async () => {
    const z = await startZest([]);
    try {
      const r = await http(z.url, "PUT", "/big/default", {
        body: "x".repeat(16 * 1024 * 1024 + 1),
        headers: { "content-type": "text/plain" },
      });
      assert.equal(r.status, 413);
      assert.match(r.text, /exceeds the limit of 16777216 bytes/);
    } finally {
      await z.stop();
    }
  });
});

describe("admin permissions", () => {
  test("with --adminspace-permissions r a storage write is a 403", async () => {
    const z = await startZest(["--adminspace-permissions", "r"]);
    try {
      const r = await http(z.url, "PUT", `${STORAGES}/x`, { body: '{key_expr:"x/**",volume:"memory"}' });
      assert.equal(r.status, 403);
      assert.match(r.text, /disabled/);
      const list = await getJson(z.url, "/@/**/storages/x");
      assert.deepEqual(list.entries, []);
    } finally {
      await z.stop();
    }
  });
});

describe("command line errors", () => {
  test("a bad flag exits 2 with one line", async () => {
    const r = await runZestExpectingExit(["--no-such-flag"]);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /^zest: unknown option '--no-such-flag'/);
    assert.equal(r.stderr.trim().split("\n").length, 1);
  });

  test("a missing or malformed config file exits 2 with one line", async () => {
    const missing = await runZestExpectingExit(["-c", "/nonexistent/zest.json5"]);
    assert.equal(missing.code, 2);
    assert.match(missing.stderr, /cannot read config file \/nonexistent\/zest.json5: no such file/);
    const bad = await runZestExpectingExit(["--cfg", "plugins/rest/http_port:{oops"]);
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /invalid --cfg value/);
  });

  test("a port already in use exits 1 with one line", async () => {
    const z = await startZest([]);
    try {
      const port = new URL(z.url).port;
      const r = await runZestExpectingExit(["--rest-http-port", `127.0.0.1:${port}`]);
      assert.equal(r.code, 1);
      assert.match(r.stderr, /already in use/);
    } finally {
      await z.stop();
    }
  });

  test("--help documents every flag", async () => {
    const { spawnSync } = await import("node:child_process");
    const { CLI } = await import("../support/zest-process.js");
    const r = spawnSync(process.execPath, [CLI, "--help"], { encoding: "utf8" });
    assert.equal(r.status, 0);
    for (const flag of [
      "--config",
      "--cfg",
      "--rest-http-port",
      "--rest-variant",
      "--id",
      "--adminspace-permissions",
      "--plugin",
      "--data-dir",
      "--nats",
      "--verbose",
    ]) {
      assert.ok(r.stdout.includes(flag), flag);
    }
  });

  test("--cfg creates a storage and turns the default one off", async () => {
    const z = await startZest([
      "--cfg",
      'plugins/storage_manager/storages/demo:{key_expr:"demo/example/**",volume:"memory"}',
    ]);
    try {
      const { entries } = await getJson(z.url, "/@/**/storages/**");
      assert.deepEqual(
        entries.map((e) => (e.key as string).split("/").pop()),
        ["demo"],
      );
      await fetch(`${z.url}/demo/example/test`, { method: "PUT", body: Buffer.from("Hello World!") });
      const got = await getJson(z.url, "/demo/example/test");
      assert.equal(got.entries[0]?.encoding, "application/octet-stream");
      const outside = await http(z.url, "PUT", "/elsewhere/k", { body: "x" });
      assert.equal(outside.status, 200);
      assert.deepEqual((await getJson(z.url, "/elsewhere/k")).entries, []);
    } finally {
      await z.stop();
    }
  });
});
