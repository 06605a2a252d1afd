/**
 * Keys with a lifetime over REST (docs/ttl-and-leases.md): `?_ttl=`, the `Zest-Expires` header,
 * conditional writes with a TTL, leases in the admin space, bad input, and access control,
 * against a real router and HTTP server in both variants.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { hashSecret } from "../../src/access/hash.js";
import type { Zest } from "../../src/runtime.js";
import { http, openSse } from "../support/http.js";
import { routerForSuite, startRouter, TEXT } from "../support/router.js";
import { eventually } from "../support/wait.js";

const LEASES = "/@/router/local/leases";

/** A lease as its admin entry shows it. */
interface LeaseView {
  keys: string[];
  ttl_ms: number;
  deadline: string;
}

describe("TTL over REST (Variant A)", () => {
  const suite = routerForSuite();
  const put = (path: string, body: string, headers: Record<string, string> = {}) =>
    http(suite.url, "PUT", path, { body, headers: { ...TEXT, ...headers } });
  const value = async (path: string): Promise<string | undefined> => {
    const r = await http(suite.url, "GET", path);
    const entries = JSON.parse(r.text) as Array<{ value: unknown }>;
    return entries[0]?.value as string | undefined;
  };

  it("PUT ?_ttl= writes a value that a single-key GET shows with Zest-Expires, gone after its deadline", async () => {
    const before = Date.now();
    assert.equal((await put("/t/a?_ttl=400ms", "short")).status, 200);
    assert.equal((await put("/t/b", "forever")).status, 200);
    const got = await http(suite.url, "GET", "/t/a");
    assert.match(got.text, /"short"/);
    const expires = Date.parse(got.headers.get("zest-expires") ?? "");
    assert.ok(
      expires >= before + 400 && expires <= Date.now() + 400,
      `Zest-Expires ${got.headers.get("zest-expires")}`,
    );
    assert.equal(
      (await http(suite.url, "GET", "/t/b")).headers.get("zest-expires"),
      null,
      "a permanent value has none",
    );
    await eventually(async () => (await value("/t/a")) === undefined, 5_000, "the expiry");
    assert.ok(Date.now() >= expires, "not gone before its deadline");
    assert.equal(await value("/t/b"), "forever");
    assert.deepEqual(
      JSON.parse((await http(suite.url, "GET", "/t/**")).text).map((e: { key: string }) => e.key),
      ["t/b"],
    );
  });

  it("a PUT without _ttl makes a key permanent again, and a PUT with _ttl refreshes it", async () => {
    await put("/p/a?_ttl=300ms", "1");
    await put("/p/a", "2");
    await put("/p/b?_ttl=300ms", "1");
    await put("/p/b?_ttl=1h", "2");
    await put("/p/witness?_ttl=300ms", "w");
    await eventually(async () => (await value("/p/witness")) === undefined, 5_000, "the witness's expiry");
    assert.equal(await value("/p/a"), "2");
    assert.equal(await value("/p/b"), "2");
    assert.equal((await http(suite.url, "GET", "/p/a")).headers.get("zest-expires"), null);
    assert.ok((await http(suite.url, "GET", "/p/b")).headers.get("zest-expires"));
  });

  it("If-None-Match and If-Match work with _ttl: create-only again after expiry, conditional refresh", async () => {
    assert.equal((await put("/c/a?_ttl=300ms", "1", { "if-none-match": "*" })).status, 200);
    assert.equal((await put("/c/a?_ttl=300ms", "x", { "if-none-match": "*" })).status, 412);
    await eventually(async () => (await value("/c/a")) === undefined, 5_000, "the expiry");
    assert.equal((await put("/c/a?_ttl=1h", "2", { "if-none-match": "*" })).status, 200);
    const etag = (await http(suite.url, "GET", "/c/a")).headers.get("etag")!;
    const refreshed = await put("/c/a?_ttl=2h", "3", { "if-match": etag });
    assert.equal(refreshed.status, 200, refreshed.text);
    assert.equal((await put("/c/a?_ttl=2h", "4", { "if-match": etag })).status, 412);
    assert.equal(await value("/c/a"), "3");
  });

  it("bad durations are a 400 with a one-line reason, and nothing is written", async () => {
    for (const bad of ["abc", "0s", "10", "1.5s", "-1s", "400d", "5y", "", "1".repeat(40)]) {
      const r = await put(`/bad/a?_ttl=${encodeURIComponent(bad)}`, "x");
      assert.equal(r.status, 400, `_ttl=${bad}: ${r.text}`);
      assert.match(r.text, /_ttl must be/);
      assert.ok(!r.text.trim().includes("\n"), "one line");
    }
    assert.equal((await http(suite.url, "DELETE", "/bad/a?_ttl=1s")).status, 400);
    assert.equal(await value("/bad/a"), undefined);
  });

  it("the same query string again reads the same: a TTL on each key, a DELETE with it refused, other queries read anew", async () => {
    for (const k of ["a", "b", "c"]) assert.equal((await put(`/again/${k}?_ttl=1h`, k)).status, 200);
    for (const k of ["a", "b", "c"]) {
      const expires = (await http(suite.url, "GET", `/again/${k}`)).headers.get("zest-expires");
      assert.ok(Date.parse(expires ?? "") > Date.now() + 3_500_000, `${k}: ${expires}`);
    }
    const refused = await http(suite.url, "DELETE", "/again/a?_ttl=1h");
    assert.equal(refused.status, 400, refused.text);
    assert.match(refused.text, /not DELETE/);
    assert.equal(await value("/again/a"), "a");
    // A query of the same length that asks another lifetime, then none.
    assert.equal((await put("/again/a?_ttl=2h", "a2")).status, 200);
    const later = Date.parse((await http(suite.url, "GET", "/again/a")).headers.get("zest-expires") ?? "");
    assert.ok(later > Date.now() + 7_100_000, `${later}`);
    assert.equal((await put("/again/a?_xyz=2h", "a3")).status, 200);
    assert.equal((await http(suite.url, "GET", "/again/a")).headers.get("zest-expires"), null, "permanent again");
    assert.equal((await put("/again/a?_ttl=2x", "a4")).status, 400);
    assert.equal((await put("/again/a?_ttl=2x", "a4")).status, 400, "a bad query is refused each time");
    assert.equal(await value("/again/a"), "a3");
  });

  it("a lease is created, kept alive, listed with its keys and deadline, and its keys go together when revoked", async () => {
    const created = await put(`${LEASES}/l1`, '{ ttl: "2s" }');
    assert.equal(created.status, 200, created.text);
    for (const k of ["a", "b", "c"]) assert.equal((await put(`/ls/${k}?_lease=l1`, k)).status, 200);
    await put("/ls/d", "not leased");
    const listed = JSON.parse((await http(suite.url, "GET", `${LEASES}/l1`)).text) as Array<{
      key: string;
      value: LeaseView;
    }>;
    assert.equal(listed[0]?.key, `@/router/${suite.zest.router.zid}/leases/l1`);
    assert.deepEqual(listed[0]?.value.keys, ["ls/a", "ls/b", "ls/c"]);
    assert.equal(listed[0]?.value.ttl_ms, 2000);
    const deadline = Date.parse(listed[0]?.value.deadline ?? "");
    assert.equal((await put(`${LEASES}/l1`, '{ ttl: "1h" }')).status, 200, "kept alive");
    const kept = JSON.parse((await http(suite.url, "GET", `${LEASES}/*`)).text) as Array<{ value: LeaseView }>;
    assert.ok(Date.parse(kept[0]!.value.deadline) > deadline + 3_000_000);
    // A write without the lease detaches the key from it.
    await put("/ls/c", "mine now");
    assert.equal((await http(suite.url, "DELETE", `${LEASES}/l1`)).status, 200);
    await eventually(async () => (await value("/ls/a")) === undefined && (await value("/ls/b")) === undefined);
    assert.equal(await value("/ls/c"), "mine now");
    assert.equal(await value("/ls/d"), "not leased");
    assert.equal((await http(suite.url, "GET", `${LEASES}/l1`)).text, "[\n\n]\n");
    assert.equal((await http(suite.url, "DELETE", `${LEASES}/l1`)).status, 404);
  });

  it("a lease that is not kept alive expires, and deletes its keys", async () => {
    await put(`${LEASES}/short`, '{ "ttl": "3s" }');
    await Promise.all(Array.from({ length: 100 }, (_, i) => put(`/many/${i}?_lease=short`, String(i))));
    assert.equal(JSON.parse((await http(suite.url, "GET", "/many/**")).text).length, 100);
    await eventually(async () => JSON.parse((await http(suite.url, "GET", "/many/**")).text).length === 0, 5_000);
  });

  it("a storage's ttl option expires what it keeps without a TTL of its own; a bad one is a 400", async () => {
    const storages = "/@/router/local/config/plugins/storage_manager/storages";
    const made = await put(`${storages}/cache`, '{ key_expr: "cache/**", volume: { id: "memory", ttl: "400ms" } }');
    assert.equal(made.status, 200, made.text);
    await put("/cache/a", "default ttl");
    await put("/cache/b?_ttl=1h", "own ttl");
    // The default storage on ** holds cache/a too, without a deadline: the first expiry deletes it everywhere.
    await eventually(async () => (await value("/cache/a")) === undefined, 5_000, "the storage's expiry");
    assert.equal(await value("/cache/b"), "own ttl");
    const bad = await put(`${storages}/bad`, '{ key_expr: "bad2/**", volume: { id: "memory", ttl: "soon" } }');
    assert.equal(bad.status, 400);
    assert.match(bad.text, /`ttl` of storage bad must be a duration/);
  });

  it("bad lease ids, unknown leases and bad lease bodies are a 400", async () => {
    for (const [path, body, re] of [
      [`/k?_lease=${encodeURIComponent("bad id")}`, "x", /_lease must be 1 to 128/],
      [`/k?_lease=${"x".repeat(129)}`, "x", /_lease must be 1 to 128/],
      ["/k?_lease=nope", "x", /no lease nope/],
      [`${LEASES}/ok`, "{}", /"ttl"/],
      [`${LEASES}/ok`, '{ ttl: "1s", x: 1 }', /only "ttl"/],
      [`${LEASES}/ok`, '{ ttl: "soon" }', /ttl must be/],
      [`${LEASES}/ok`, "not json", /JSON/],
      [`${LEASES}/a%20b`, '{ ttl: "1s" }', /lease id must be/],
      [`${LEASES}/session.1`, '{ ttl: "1s" }', /sessions' own/],
    ] as const) {
      const r = await put(path, body);
      assert.equal(r.status, 400, `${path} ${body}: ${r.status} ${r.text}`);
      assert.match(r.text, re);
    }
  });
});

describe("?_expires=true: each entry names its deadline (Variant A)", () => {
  const suite = routerForSuite();

  it("a wide GET with ?_expires=true gives each entry its deadline or null; without it the entries are unchanged", async () => {
    const before = Date.now();
    assert.equal((await http(suite.url, "PUT", "/ex/a?_ttl=1h", { body: "a", headers: TEXT })).status, 200);
    assert.equal((await http(suite.url, "PUT", "/ex/b", { body: "b", headers: TEXT })).status, 200);
    const plain = await http(suite.url, "GET", "/ex/**");
    assert.doesNotMatch(plain.text, /expires/);
    const entries = JSON.parse(plain.text) as Array<Record<string, unknown>>;
    assert.deepEqual(Object.keys(entries[0]!), ["key", "value", "encoding", "time"]);
    const got = await http(suite.url, "GET", "/ex/**?_expires=true");
    assert.equal(got.status, 200);
    const withExpires = JSON.parse(got.text) as Array<{ key: string; expires: string | null; time: string }>;
    assert.deepEqual(
      withExpires.map((e) => e.key),
      ["ex/a", "ex/b"],
    );
    const a = Date.parse(withExpires[0]!.expires!);
    assert.ok(a >= before + 3_600_000 && a <= Date.now() + 3_600_000, withExpires[0]!.expires!);
    assert.equal(withExpires[1]!.expires, null);
    // The same field on a single key, and the same deadline as its header.
    const one = await http(suite.url, "GET", "/ex/a?_expires=true");
    assert.equal(JSON.parse(one.text)[0].expires, one.headers.get("zest-expires"));
    // Each entry is the default one with the field added at the end.
    assert.equal(got.text.replace(/, "expires": (null|"[^"]+")/g, ""), plain.text);
  });

  it("?_expires takes true or false; anything else is a 400", async () => {
    assert.equal((await http(suite.url, "GET", "/ex/**?_expires=false")).text.includes("expires"), false);
    const bad = await http(suite.url, "GET", "/ex/**?_expires=soon");
    assert.equal(bad.status, 400);
    assert.match(bad.text, /_expires takes true or false/);
  });

  it("a wide GET over more entries than one batch streams them with their deadlines", async () => {
    for (let i = 0; i < 2100; i += 30)
      await Promise.all(
        Array.from({ length: 30 }, (_, j) =>
          http(suite.url, "PUT", `/many/${i + j}?_ttl=1h`, { body: String(i + j), headers: TEXT }),
        ),
      );
    const got = await http(suite.url, "GET", "/many/**?_expires=true");
    const entries = JSON.parse(got.text) as Array<{ expires: string | null }>;
    assert.equal(entries.length, 2100);
    assert.ok(entries.every((e) => typeof e.expires === "string"));
  });

  it("an SSE stream opened with ?_expires=true names the deadline of each put that has one, and sees its expiry", async () => {
    const plain = await openSse(`${suite.url}/sse-ex/**`);
    const sse = await openSse(`${suite.url}/sse-ex/**?_expires=true`);
    try {
      assert.equal((await http(suite.url, "PUT", "/sse-ex/a?_ttl=500ms", { body: "a", headers: TEXT })).status, 200);
      assert.equal((await http(suite.url, "PUT", "/sse-ex/b", { body: "b", headers: TEXT })).status, 200);
      const [a, b, gone] = await sse.next(3);
      assert.equal(a!.event, "PUT");
      assert.ok(Date.parse(JSON.parse(a!.data).expires) > Date.now() - 1000);
      assert.equal(JSON.parse(b!.data).expires, null);
      assert.equal(gone!.event, "DELETE");
      assert.equal(JSON.parse(gone!.data).key, "sse-ex/a");
      const [pa] = await plain.next(1);
      assert.doesNotMatch(pa!.data, /expires/);
    } finally {
      sse.close();
      plain.close();
    }
  });
});

describe("TTL over REST (Variant B)", () => {
  let z: Zest;
  let url: string;
  before(async () => {
    z = await startRouter({ plugins: { rest: { variant: "b" } } });
    url = z.restUrl!;
  });
  after(async () => {
    await z?.close();
  });

  it("PUT ?_ttl= and ?(_ttl=) expire the key; a bad duration is a 400", async () => {
    assert.equal((await http(url, "PUT", "/vb/a?_ttl=300ms", { body: "x", headers: TEXT })).status, 204);
    assert.equal((await http(url, "PUT", "/vb/b?(_ttl=300ms)", { body: "y", headers: TEXT })).status, 204);
    assert.equal((await http(url, "PUT", "/vb/c", { body: "z", headers: TEXT })).status, 204);
    const got = await http(url, "GET", "/vb/a");
    assert.match(got.text, /"x"/);
    assert.ok(got.headers.get("zest-expires"));
    await eventually(async () => !/"[xy]"/.test((await http(url, "GET", "/vb/**")).text), 5_000, "the expiry");
    assert.match((await http(url, "GET", "/vb/**")).text, /"z"/);
    const bad = await http(url, "PUT", "/vb/a?_ttl=never", { body: "x", headers: TEXT });
    assert.equal(bad.status, 400);
    assert.match(bad.text, /_ttl must be/);
  });

  it("GET ?(_expires=true) gives each entry its deadline or null, after its time", async () => {
    assert.equal((await http(url, "PUT", "/vbx/a?_ttl=1h", { body: "x", headers: TEXT })).status, 204);
    assert.equal((await http(url, "PUT", "/vbx/b", { body: "y", headers: TEXT })).status, 204);
    const plain = await http(url, "GET", "/vbx/**");
    assert.doesNotMatch(plain.text, /expires/);
    const got = await http(url, "GET", "/vbx/**?(_expires=true)");
    const entries = JSON.parse(got.text) as Array<{ key: string; expires: string | null }>;
    // Variant B lists keys in descending order.
    assert.deepEqual(
      entries.map((e) => [e.key, e.expires === null ? null : typeof e.expires]),
      [
        ["/vbx/b", null],
        ["/vbx/a", "string"],
      ],
    );
    assert.equal(got.text.replace(/,\n {2}"expires": (null|"[^"]+")/g, ""), plain.text);
  });
});

describe("TTL and leases under access control", () => {
  let z: Zest;
  let url: string;
  const hash = (s: string): string => hashSecret(s, { ln: 8 });
  const basic = (user: string): Record<string, string> => ({
    authorization: `Basic ${Buffer.from(`${user}:${user}-pw`).toString("base64")}`,
  });
  before(async () => {
    z = await startRouter({
      access_control: {
        enabled: true,
        default_permission: "deny",
        rules: [
          { id: "data", messages: ["put", "delete", "query"], key_exprs: ["data/**"], permission: "allow" },
          { id: "lease", messages: ["put", "query"], key_exprs: ["@/router/*/leases/mine"], permission: "allow" },
          { id: "all", messages: ["put", "delete", "query"], key_exprs: ["**", "@/**"], permission: "allow" },
        ],
        subjects: [
          { id: "u", usernames: ["user"] },
          { id: "r", usernames: ["root"] },
        ],
        policies: [
          { rules: ["data", "lease"], subjects: ["u"] },
          { rules: ["all"], subjects: ["r"] },
        ],
        users: [
          { name: "user", password_hash: hash("user-pw") },
          { name: "root", password_hash: hash("root-pw") },
        ],
      },
    });
    url = z.restUrl!;
  });
  after(async () => {
    await z?.close();
  });
  const put = (path: string, body: string, user: string) =>
    http(url, "PUT", path, { body, headers: { ...TEXT, ...basic(user) } });

  it("a write with _ttl or _lease is a put on the key; a lease is a put or delete on its admin key", async () => {
    assert.equal((await put("/data/a?_ttl=1h", "x", "user")).status, 200);
    assert.equal((await put("/other/a?_ttl=1h", "x", "user")).status, 403);
    assert.equal((await put(`${LEASES}/mine`, '{ ttl: "1h" }', "user")).status, 200);
    assert.equal((await put(`${LEASES}/theirs`, '{ ttl: "1h" }', "user")).status, 403);
    assert.equal((await put(`${LEASES}/theirs`, '{ ttl: "1h" }', "root")).status, 200);
    assert.equal((await put("/data/b?_lease=mine", "x", "user")).status, 200);
    const revoke = await http(url, "DELETE", `${LEASES}/mine`, { headers: basic("user") });
    assert.equal(revoke.status, 403, "revoking is a delete on the lease's key, which the user may not do");
    assert.equal((await http(url, "DELETE", `${LEASES}/mine`, { headers: basic("root") })).status, 200);
  });
});
