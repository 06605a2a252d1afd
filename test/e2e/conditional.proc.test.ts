/**
 * Conditional requests over real HTTP against the built `zest` command (docs/rest-gateway.md
 * §A.4): ETags on single-key GETs, If-Match / If-None-Match on writes and GETs, 304 and 412.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { hashSecret } from "../../src/access/hash.js";
import { getJson, http, type HttpResult } from "../support/http.js";
import { startZest, zestForSuite, type ZestProcess } from "../support/zest-process.js";

const TEXT = { "content-type": "text/plain" };
const ETAG = /^"[0-9a-f]{16}\/[0-9A-F]+"$/;

describe("conditional writes, Variant A", () => {
  const z = zestForSuite([]);

  const put = (path: string, body: string, headers: Record<string, string> = {}): Promise<HttpResult> =>
    http(z.url, "PUT", path, { body, headers: { ...TEXT, ...headers } });
  const etag = async (path: string): Promise<string | null> => (await http(z.url, "GET", path)).headers.get("etag");
  const value = async (path: string): Promise<unknown> => (await getJson(z.url, path)).entries[0]?.value;

  test("a single-key GET answers a strong ETag, the one the write answered; HEAD too; a wildcard GET none", async () => {
    const w = await put("/c/a", "one");
    assert.equal(w.status, 200);
    assert.equal(w.headers.get("etag"), null, "a plain write makes no claim about the version it left");
    const w2 = await put("/c/a", "two", { "if-match": (await etag("/c/a"))! });
    assert.equal(w2.status, 200, w2.text);
    assert.match(w2.headers.get("etag")!, ETAG);
    const g = await http(z.url, "GET", "/c/a");
    assert.equal(g.headers.get("etag"), w2.headers.get("etag"));
    // The cached answer carries it as well (the second GET is served from the read cache).
    assert.equal(await etag("/c/a"), w2.headers.get("etag"));
    assert.equal((await http(z.url, "HEAD", "/c/a")).headers.get("etag"), w2.headers.get("etag"));
    assert.equal((await http(z.url, "GET", "/c/a?_raw=true")).headers.get("etag"), w2.headers.get("etag"));
    assert.equal(await etag("/c/*"), null);
    assert.equal(await etag("/c/nothing"), null, "an absent key has no ETag");
    assert.equal(await etag("/@/router/local"), null, "admin replies have no timestamp, so no ETag");
  });

  test("If-Match applies a write only while the key holds that version; otherwise 412 and nothing changes", async () => {
    await put("/c/m", "v1");
    const v1 = (await etag("/c/m"))!;
    const ok = await put("/c/m", "v2", { "if-match": v1 });
    assert.equal(ok.status, 200);
    const stale = await put("/c/m", "v3", { "if-match": v1 });
    assert.equal(stale.status, 412);
    assert.equal(stale.headers.get("content-type"), "text/plain; charset=utf-8");
    assert.match(stale.text, /^write condition failed: the key holds another version\n$/);
    assert.equal(await value("/c/m"), "v2");
    // PATCH is a write like PUT.
    const patched = await http(z.url, "PATCH", "/c/m", {
      body: "v4",
      headers: { ...TEXT, "if-match": ok.headers.get("etag")! },
    });
    assert.equal(patched.status, 200, patched.text);
    assert.equal(await value("/c/m"), "v4");
    assert.equal(
      (await http(z.url, "PATCH", "/c/m", { body: "v5", headers: { ...TEXT, "if-match": v1 } })).status,
      412,
    );
  });

  test("If-None-Match: * creates only if absent; a deleted key counts as absent", async () => {
    const created = await put("/c/n", "first", { "if-none-match": "*" });
    assert.equal(created.status, 200, created.text);
    assert.match(created.headers.get("etag")!, ETAG);
    const again = await put("/c/n", "second", { "if-none-match": "*" });
    assert.equal(again.status, 412);
    assert.match(again.text, /already holds a value/);
    assert.equal(await value("/c/n"), "first");
    assert.equal((await http(z.url, "DELETE", "/c/n")).status, 200);
    assert.equal((await put("/c/n", "third", { "if-none-match": "*" })).status, 200);
    assert.equal(await value("/c/n"), "third");
  });

  test("DELETE with If-Match deletes only that version", async () => {
    await put("/c/d", "x");
    const v = (await etag("/c/d"))!;
    await put("/c/d", "y");
    assert.equal((await http(z.url, "DELETE", "/c/d", { headers: { "if-match": v } })).status, 412);
    assert.equal(await value("/c/d"), "y");
    const del = await http(z.url, "DELETE", "/c/d", { headers: { "if-match": (await etag("/c/d"))! } });
    assert.equal(del.status, 200, del.text);
    assert.equal(del.headers.get("etag"), null, "a deleted key has no representation");
    assert.deepEqual((await getJson(z.url, "/c/d")).entries, []);
  });

  test("If-Match: * writes only an existing key; a list of ETags applies when any matches", async () => {
    assert.equal((await put("/c/star", "x", { "if-match": "*" })).status, 412);
    assert.deepEqual((await getJson(z.url, "/c/star")).entries, []);
    await put("/c/star", "exists");
    assert.equal((await put("/c/star", "updated", { "if-match": "*" })).status, 200);
    const current = (await etag("/c/star"))!;
    assert.equal((await put("/c/star", "listed", { "if-match": `"0000000000000000/AA", ${current}` })).status, 200);
    assert.equal(await value("/c/star"), "listed");
    assert.equal((await put("/c/star", "not listed", { "if-match": `"0000000000000000/AA", ${current}` })).status, 412);
    assert.equal(await value("/c/star"), "listed");
  });

  test("malformed, contradictory or wildcard conditions are a 400 with a one-line reason; a weak ETag never matches If-Match", async () => {
    await put("/c/bad", "x");
    const current = (await etag("/c/bad"))!;
    const cases: Array<[string, string, Record<string, string>, RegExp]> = [
      ["PUT", "/c/bad", { "if-match": current.slice(1, -1) }, /quoted ETags/],
      ["PUT", "/c/bad", { "if-match": `"${"a".repeat(300)}"` }, /longer than 256/],
      ["PUT", "/c/bad", { "if-match": '"abc' }, /closing quote/],
      ["PUT", "/c/bad", { "if-match": `${current},` }, /ends with a comma/],
      ["PUT", "/c/bad", { "if-match": Array.from({ length: 17 }, (_, i) => `"${i}"`).join(",") }, /more than 16/],
      ["PUT", "/c/bad", { "if-match": current, "if-none-match": "*" }, /not both/],
      ["PUT", "/c/bad", { "if-none-match": current }, /takes only \*/],
      ["DELETE", "/c/bad", { "if-none-match": "*" }, /not DELETE/],
      ["PUT", "/c/*", { "if-match": current }, /single key/],
      ["DELETE", "/c/**", { "if-match": "*" }, /single key/],
    ];
    for (const [method, path, headers, re] of cases) {
      const r = await http(z.url, method, path, {
        body: method === "DELETE" ? undefined : "y",
        headers: { ...TEXT, ...headers },
      });
      assert.equal(r.status, 400, `${method} ${path} ${JSON.stringify(headers)}: ${r.text}`);
      assert.match(r.text, re);
      assert.equal(r.text.trimEnd().split("\n").length, 1);
    }
    const weak = await put("/c/bad", "y", { "if-match": `W/${current}` });
    assert.equal(weak.status, 412);
    assert.match(weak.text, /weak/);
    assert.equal(await value("/c/bad"), "x");
    assert.equal(await etag("/c/bad"), current);
  });

  test("GET with If-None-Match answers 304 while the version is current; If-Match on GET answers 412 when stale", async () => {
    await put("/c/g", "x");
    const v = (await etag("/c/g"))!;
    const nm = await http(z.url, "GET", "/c/g", { headers: { "if-none-match": v } });
    assert.equal(nm.status, 304);
    assert.equal(nm.headers.get("etag"), v);
    assert.equal(nm.text, "");
    assert.equal(
      (await http(z.url, "GET", "/c/g", { headers: { "if-none-match": `W/${v}` } })).status,
      304,
      "If-None-Match compares weakly",
    );
    assert.equal((await http(z.url, "GET", "/c/g", { headers: { "if-none-match": "*" } })).status, 304);
    assert.equal((await http(z.url, "GET", "/c/g", { headers: { "if-match": v } })).status, 200);
    await put("/c/g", "y");
    const changed = await http(z.url, "GET", "/c/g", { headers: { "if-none-match": v } });
    assert.equal(changed.status, 200);
    assert.notEqual(changed.headers.get("etag"), v);
    assert.equal((await http(z.url, "GET", "/c/g", { headers: { "if-match": v } })).status, 412);
    assert.equal((await http(z.url, "GET", "/c/g", { headers: { "if-none-match": "nope" } })).status, 400);
  });

  test("a conditional write on a key no storage here holds is refused, not silently applied", async () => {
    const z2 = await startZest(["--cfg", "plugins/storage_manager:{storages:{}}"]);
    try {
      const r = await http(z2.url, "PUT", "/c/x", { body: "x", headers: { ...TEXT, "if-none-match": "*" } });
      assert.equal(r.status, 405);
      assert.match(r.text, /needs a storage on this router/);
    } finally {
      await z2.stop();
    }
  });

  test("a cross-origin page may read the ETag (Access-Control-Expose-Headers)", async () => {
    await put("/c/cors", "x");
    const r = await http(z.url, "GET", "/c/cors", { headers: { origin: "http://elsewhere.example" } });
    assert.match(r.headers.get("etag")!, ETAG);
    assert.equal(r.headers.get("access-control-expose-headers"), "ETag");
  });
});

describe("conditional writes, Variant B", () => {
  const z = zestForSuite(["--rest-variant", "b"]);

  test("B keeps its 0.4 replies without condition headers: no ETag", async () => {
    assert.equal((await http(z.url, "PUT", "/b/k", { body: "x", headers: TEXT })).status, 204);
    const g = await http(z.url, "GET", "/b/k");
    assert.equal(g.status, 200);
    assert.equal(g.headers.get("etag"), null);
    // A B client that wants the ETag without a condition sends one that never matches.
    const asked = await http(z.url, "GET", "/b/k", { headers: { "if-none-match": '"-"' } });
    assert.equal(asked.status, 200);
    assert.match(asked.headers.get("etag")!, ETAG);
  });

  test("with condition headers B answers ETags, 304 and 412 like A, and writes answer 204", async () => {
    const created = await http(z.url, "PUT", "/b/c", { body: "one", headers: { ...TEXT, "if-none-match": "*" } });
    assert.equal(created.status, 204);
    const v = created.headers.get("etag")!;
    assert.match(v, ETAG);
    assert.equal(
      (await http(z.url, "PUT", "/b/c", { body: "dup", headers: { ...TEXT, "if-none-match": "*" } })).status,
      412,
    );
    const nm = await http(z.url, "GET", "/b/c", { headers: { "if-none-match": v } });
    assert.equal(nm.status, 304);
    assert.equal(nm.headers.get("etag"), v);
    const next = await http(z.url, "PUT", "/b/c", { body: "two", headers: { ...TEXT, "if-match": v } });
    assert.equal(next.status, 204);
    assert.equal(
      (await http(z.url, "PUT", "/b/c", { body: "three", headers: { ...TEXT, "if-match": v } })).status,
      412,
    );
    const g = await http(z.url, "GET", "/b/c", { headers: { "if-none-match": v } });
    assert.equal(g.status, 200);
    assert.equal(g.headers.get("etag"), next.headers.get("etag"));
    assert.match(g.text, /"two"/);
  });
});

describe("conditional writes under access control", () => {
  let z: ZestProcess;
  const basic = (user: string, password: string): Record<string, string> => ({
    authorization: `Basic ${Buffer.from(`${user}:${password}`).toString("base64")}`,
  });
  const acl = {
    enabled: true,
    default_permission: "deny",
    rules: [
      { id: "read", messages: ["query"], key_exprs: ["acl/**"], permission: "allow" },
      { id: "write", messages: ["put", "delete"], key_exprs: ["acl/**"], permission: "allow" },
    ],
    subjects: ["reader", "writer"].map((u) => ({ id: u, usernames: [u] })),
    policies: [
      { rules: ["read"], subjects: ["reader"] },
      { rules: ["read", "write"], subjects: ["writer"] },
    ],
    users: ["reader", "writer"].map((u) => ({ name: u, password_hash: hashSecret(`${u}-pw`, { ln: 8 }) })),
  };
  before(async () => {
    z = await startZest(["--cfg", `access_control:${JSON.stringify(acl)}`]);
  });
  after(() => z?.stop());

  test("the access decision comes before the condition: a client that may not write gets 403 (401 without credentials), never 412 or 400", async () => {
    const writer = basic("writer", "writer-pw");
    assert.equal(
      (await http(z.url, "PUT", "/acl/k", { body: "x", headers: { ...TEXT, ...writer, "if-none-match": "*" } })).status,
      200,
    );
    const v = (await http(z.url, "GET", "/acl/k", { headers: writer })).headers.get("etag")!;
    const reader = basic("reader", "reader-pw");
    const conds: Array<Record<string, string>> = [
      { "if-match": '"stale/0"' },
      { "if-match": v },
      { "if-none-match": "*" },
      { "if-match": "garbage" },
    ];
    for (const cond of conds) {
      assert.equal(
        (await http(z.url, "PUT", "/acl/k", { body: "y", headers: { ...TEXT, ...reader, ...cond } })).status,
        403,
        JSON.stringify(cond),
      );
      assert.equal((await http(z.url, "PUT", "/acl/k", { body: "y", headers: { ...TEXT, ...cond } })).status, 401);
    }
    const r = await http(z.url, "PUT", "/acl/k", { body: "y", headers: { ...TEXT, ...writer, "if-match": v } });
    assert.equal(r.status, 200, r.text);
  });
});
