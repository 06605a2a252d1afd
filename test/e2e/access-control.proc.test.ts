import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { hashSecret } from "../../src/access/hash.js";
import { getJson, http, openSse } from "../support/http.js";
import { runZestExpectingExit, startZest, type ZestProcess } from "../support/zest-process.js";
import { eventually } from "../support/wait.js";

const STORAGES = "/@/router/local/config/plugins/storage_manager/storages";
// A low scrypt cost keeps the test fast; the format and the check are the same.
const hash = (s: string): string => hashSecret(s, { ln: 8 });
const basic = (user: string, password: string): Record<string, string> => ({
  authorization: `Basic ${Buffer.from(`${user}:${password}`).toString("base64")}`,
});
const TOKEN = "ci.s3cr3t-token-value";

/** The access-control section the tests run with (JSON5 in a config file, as a user writes it). */
function accessControl(): unknown {
  return {
    enabled: true,
    default_permission: "deny",
    rules: [
      { id: "read demo", messages: ["query", "declare_subscriber"], key_exprs: ["demo/**"], permission: "allow" },
      { id: "write demo", messages: ["put", "delete"], key_exprs: ["demo/**"], permission: "allow" },
      {
        id: "no secrets",
        messages: ["query", "declare_subscriber"],
        key_exprs: ["demo/secret/**"],
        permission: "deny",
      },
      {
        id: "everything",
        messages: ["put", "delete", "query", "declare_subscriber"],
        key_exprs: ["**", "@/**"],
        permission: "allow",
      },
      { id: "public read", messages: ["query"], key_exprs: ["public/**"], permission: "allow" },
    ],
    subjects: [
      { id: "alice", usernames: ["alice"] },
      { id: "root", usernames: ["root"] },
      { id: "local clients", cidrs: ["127.0.0.0/8", "::1/128"] },
    ],
    policies: [
      { id: "demo users", rules: ["read demo", "write demo", "no secrets"], subjects: ["alice"] },
      { rules: ["everything"], subjects: ["root"] },
      { rules: ["public read"], subjects: ["local clients"] },
    ],
    users: [
      { name: "alice", password_hash: hash("alice-pw") },
      { name: "root", password_hash: hash("root-pw") },
    ],
    tokens: [{ id: "ci", user: "alice", token_hash: hash(TOKEN) }],
  };
}

describe("access control on the REST gateway", () => {
  let dir: string;
  let z: ZestProcess;
  const alice = basic("alice", "alice-pw");
  const root = basic("root", "root-pw");
  const put = (path: string, body: string, headers: Record<string, string>) =>
    http(z.url, "PUT", path, { body, headers: { "content-type": "text/plain", ...headers } });

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), "zest-acl-"));
    const cfg = join(dir, "acl.json5");
    writeFileSync(cfg, JSON.stringify({ access_control: accessControl() }));
    z = await startZest(["-c", cfg, "--id", "0A1C"]);
  });
  after(async () => {
    await z?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  test("a request without credentials that the rules refuse is a 401 asking for Basic credentials", async () => {
    const r = await http(z.url, "GET", "/demo/a");
    assert.equal(r.status, 401);
    assert.equal(r.headers.get("www-authenticate"), 'Basic realm="zest", charset="UTF-8"');
    assert.match(r.text, /needs credentials/);
    assert.equal((await put("/demo/a", "x", {})).status, 401);
  });

  test("an anonymous client matching a cidrs subject gets what its rules allow", async () => {
    assert.equal((await put("/public/p", "open", root)).status, 200);
    const { status, entries } = await getJson(z.url, "/public/p");
    assert.equal(status, 200);
    assert.equal(entries[0]?.value, "open");
  });

  test("wrong passwords, unknown users, bad tokens and unknown schemes are 401", async () => {
    for (const headers of [
      basic("alice", "nope"),
      basic("mallory", "alice-pw"),
      { authorization: "Basic !!!" },
      { authorization: "Bearer ci.wrong" },
      { authorization: "Bearer nodot" },
      { authorization: "Digest x" },
    ]) {
      const r = await http(z.url, "GET", "/demo/a", { headers });
      assert.equal(r.status, 401, JSON.stringify(headers));
      assert.match(r.headers.get("www-authenticate") ?? "", /^Basic realm="zest"/);
    }
  });

  test("Basic credentials write and read inside the user's rules", async () => {
    assert.equal((await put("/demo/a", "from alice", alice)).status, 200);
    const { status, entries } = await getJson(z.url, "/demo/a", alice);
    assert.equal(status, 200);
    assert.equal(entries[0]?.value, "from alice");
    // The second request with the same header is answered from the verification cache.
    assert.equal((await getJson(z.url, "/demo/a", alice)).entries.length, 1);
  });

  test("a Bearer token authenticates as its user", async () => {
    const bearer = { authorization: `Bearer ${TOKEN}` };
    assert.equal((await put("/demo/t", "by token", bearer)).status, 200);
    assert.equal((await getJson(z.url, "/demo/t", bearer)).entries[0]?.value, "by token");
    assert.equal((await put("/other/t", "no", bearer)).status, 403);
  });

  test("a GET on ** returns only the entries the user may read (filtered, not refused)", async () => {
    await put("/other/x", "hidden", root);
    await put("/demo/b", "visible", root);
    await put("/demo/secret/k", "denied by a deny rule", root);
    const { status, entries } = await getJson(z.url, "/**", alice);
    assert.equal(status, 200);
    const keys = entries.map((e) => e.key as string);
    assert.ok(keys.includes("demo/b") && keys.includes("demo/a"), keys.join());
    // alice also matches the "local clients" subject (she connects from loopback): public/** too.
    assert.ok(
      keys.every((k) => (k.startsWith("demo/") && !k.startsWith("demo/secret/")) || k.startsWith("public/")),
      keys.join(),
    );
    assert.ok(!keys.includes("other/x"));
    const all = (await getJson(z.url, "/**", root)).entries.map((e) => e.key as string);
    assert.ok(all.includes("other/x") && all.includes("demo/secret/k"));
  });

  test("a read wholly outside the user's rules is a 403 (the user is known)", async () => {
    const r = await http(z.url, "GET", "/other/x", { headers: alice });
    assert.equal(r.status, 403);
    assert.match(r.text, /user "alice" may not read other\/x/);
    assert.equal((await http(z.url, "GET", "/@/router/local", { headers: alice })).status, 403);
  });

  test("a PUT or DELETE reaching outside the user's write rules is refused whole and writes nothing", async () => {
    const del = await http(z.url, "DELETE", "/**", { headers: alice });
    assert.equal(del.status, 403);
    assert.match(del.text, /reaches keys outside/);
    assert.equal((await put("/other/y", "no", alice)).status, 403);
    const keys = (await getJson(z.url, "/**", root)).entries.map((e) => e.key);
    assert.ok(keys.includes("other/x") && keys.includes("demo/a"), "nothing was deleted");
    assert.ok(!keys.includes("other/y"));
    // Inside the rules, a wildcard delete is fine.
    assert.equal((await http(z.url, "DELETE", "/demo/t", { headers: alice })).status, 200);
  });

  test("an SSE stream delivers only the samples its user may read", async () => {
    const sse = await openSse(`${z.url}/**`, alice);
    try {
      assert.equal(sse.status, 200);
      await put("/other/live", "hidden", root);
      await put("/demo/secret/live", "hidden", root);
      await put("/demo/live", "shown", root);
      const [event] = await sse.next(1);
      assert.equal(JSON.parse(event!.data).key, "demo/live");
      await put("/demo/live2", "shown", root);
      assert.equal(JSON.parse((await sse.next(1))[0]!.data).key, "demo/live2");
    } finally {
      sse.close();
    }
    const refused = await http(z.url, "GET", "/other/**", { headers: { ...alice, accept: "text/event-stream" } });
    assert.equal(refused.status, 403);
  });

  test("the admin space follows the same rules on @/**", async () => {
    const denied = await put(`${STORAGES}/s1`, '{key_expr:"s1/**",volume:"memory"}', alice);
    assert.equal(denied.status, 403);
    const ok = await put(`${STORAGES}/s1`, '{key_expr:"s1/**",volume:"memory"}', root);
    assert.equal(ok.status, 200, ok.text);
    assert.equal(
      (await getJson(z.url, "/@/router/local/status/plugins/storage_manager/storages/s1", root)).entries.length,
      1,
    );
  });
});

describe("access control configuration errors", () => {
  test("a policy naming an unknown rule, a bad hash or a bad range exits 2 with the reason", async () => {
    const dir = mkdtempSync(join(tmpdir(), "zest-acl-bad-"));
    try {
      const cases: Array<[unknown, RegExp]> = [
        [
          { enabled: true, rules: [], subjects: [{ id: "s" }], policies: [{ rules: ["nope"], subjects: ["s"] }] },
          /no rule has id "nope"/,
        ],
        [{ enabled: true, users: [{ name: "u", password_hash: "plain" }] }, /not a zest password hash/],
        [{ enabled: true, subjects: [{ id: "s", cidrs: ["10.0.0.0/99"] }] }, /not an address range/],
        [{ enabled: true, default_permission: "maybe" }, /access_control\.default_permission/],
        [
          {
            enabled: true,
            rules: [{ id: "r", messages: ["put"], key_exprs: ["a"], permission: "allow", flows: ["egress"] }],
          },
          /flows must include "ingress"/,
        ],
      ];
      for (const [i, [section, re]] of cases.entries()) {
        const file = join(dir, `c${i}.json5`);
        writeFileSync(file, JSON.stringify({ access_control: section }));
        const r = await runZestExpectingExit(["--rest-http-port", "127.0.0.1:0", "-c", file]);
        assert.equal(r.code, 2, r.stderr);
        assert.match(r.stderr, re);
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("protected mode", () => {
  test("with no access control and no interface, the gateway listens on loopback and says how to change it", async () => {
    const z = await startZest(["--rest-http-port", "0"]);
    try {
      assert.match(z.url, /^http:\/\/127\.0\.0\.1:\d+$/);
      const lines = z
        .stderr()
        .split("\n")
        .filter((l) => l.includes("protected mode"));
      assert.equal(lines.length, 1);
      assert.match(lines[0]!, /--rest-http-port 0\.0\.0\.0:8000/);
      await eventually(async () => (await http(z.url, "GET", "/demo/**")).status === 200);
    } finally {
      await z.stop();
    }
  });

  test("with access control on, a port alone still listens where it says and logs no protected-mode line", async () => {
    const dir = mkdtempSync(join(tmpdir(), "zest-acl-pm-"));
    const file = join(dir, "c.json5");
    writeFileSync(file, JSON.stringify({ access_control: { enabled: true, default_permission: "allow" } }));
    const z = await startZest(["-c", file]);
    try {
      assert.doesNotMatch(z.stderr(), /protected mode/);
      assert.equal((await http(z.url, "GET", "/demo/**")).status, 200);
    } finally {
      await z.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
