import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { getJson, http, openSse, rawRequest } from "../support/http.js";
import { zestForSuite } from "../support/zest-process.js";

const TEXT = { "content-type": "text/plain" };

/** A key of `n` chunks, each `c<digit>`, about 3n bytes. */
function chunks(n: number): string {
  return Array.from({ length: n }, (_, i) => `c${i % 10}`).join("/");
}

/** A key of exactly `bytes` bytes in `n` chunks. */
function sized(bytes: number, n: number): string {
  const base = chunks(n - 1);
  return `${base}/${"x".repeat(bytes - base.length - 1)}`;
}

describe("Variant A: key expressions past the limits are refused, and never crash the router", () => {
  const z = zestForSuite();

  test("an SSE subscription on a 3,000-chunk key then PUT /** leaves the router serving", async () => {
    // On a router without limits this subscription overflowed the stack at the next PUT /**.
    const sse = await fetch(`${z.url}/${chunks(3_000)}`, { headers: { accept: "text/event-stream" } });
    assert.equal(sse.status, 414);
    assert.match(await sse.text(), /more than the limit of 4096/);
    const sse2 = await fetch(`${z.url}/${chunks(1_000)}`, { headers: { accept: "text/event-stream" } });
    assert.equal(sse2.status, 400);
    assert.match(await sse2.text(), /1000 chunks, more than the limit of 512/);
    const put = await http(z.url, "PUT", "/**", { body: "v", headers: { "content-type": "text/plain" } });
    assert.equal(put.status, 200);
    assert.equal(z.proc.exitCode, null);
    assert.equal((await http(z.url, "GET", "/demo")).status, 200);
  });

  test("a key of 4,096 bytes and 512 chunks is accepted everywhere; one byte or one chunk more is not", async () => {
    const max = sized(4096, 512);
    assert.equal(Buffer.byteLength(max), 4096);
    assert.equal(
      (await http(z.url, "PUT", `/${max}`, { body: "v", headers: { "content-type": "text/plain" } })).status,
      200,
    );
    const { entries } = await getJson(z.url, `/${max}`);
    assert.equal(entries[0]?.key, max);
    const sse = await openSse(`${z.url}/${max}`);
    assert.equal(sse.status, 200);
    sse.close();

    const long = await rawRequest(z.url, "GET", `/${sized(4097, 10)}`);
    assert.equal(long.status, 414);
    assert.equal(long.text.trim().split("\n").length, 1);
    assert.match(long.text, /4097 bytes long, more than the limit of 4096/);
    assert.equal((await rawRequest(z.url, "PUT", `/${sized(4097, 10)}`, "v", TEXT)).status, 414);
    const many = await rawRequest(z.url, "GET", `/${chunks(513)}`);
    assert.equal(many.status, 400);
    assert.match(many.text, /513 chunks/);
    assert.equal((await rawRequest(z.url, "DELETE", `/${chunks(513)}`)).status, 400);
  });

  test("multi-byte characters count as UTF-8 bytes", async () => {
    const key = `k/${"é".repeat(2047)}`; // 2 + 4094 bytes
    assert.equal((await rawRequest(z.url, "GET", `/${encodeURI(key)}`)).status, 200);
    assert.equal((await rawRequest(z.url, "GET", `/${encodeURI(`${key}é`)}`)).status, 414);
  });
});

describe("Variant B: key expressions past the limits are refused", () => {
  const z = zestForSuite(["--rest-variant", "b"]);

  test("414 past the length limit, 400 past the chunk limit, the maxima accepted", async () => {
    const max = sized(4096, 512);
    assert.equal((await rawRequest(z.url, "PUT", `/${max}`, "v", TEXT)).status, 204);
    const got = await rawRequest(z.url, "GET", `/${max}`);
    assert.equal(got.status, 200);
    assert.match(got.text, /"value": "v"/);
    const long = await rawRequest(z.url, "GET", `/${sized(4097, 3)}`);
    assert.equal(long.status, 414);
    assert.match(long.text, /more than the limit of 4096/);
    assert.equal((await rawRequest(z.url, "GET", `/${chunks(513)}`)).status, 400);
    assert.equal((await rawRequest(z.url, "PUT", `/${chunks(1_000)}`, "v", TEXT)).status, 400);
    assert.equal((await rawRequest(z.url, "PUT", "/still/here", "v", TEXT)).status, 204);
    assert.equal(z.proc.exitCode, null);
  });
});

describe("the default storage's memory quota", () => {
  const z = zestForSuite([
    "--cfg",
    'plugins/storage_manager/storages/default:{key_expr:"**",volume:{id:"memory",quota:2000}}',
  ]);

  test("a PUT beyond the quota is a 507 with the reason, and the stored value stays", async () => {
    assert.equal((await rawRequest(z.url, "PUT", "/q/a", "x".repeat(1000), TEXT)).status, 200);
    const full = await rawRequest(z.url, "PUT", "/q/b", "y".repeat(1000), TEXT);
    assert.equal(full.status, 507);
    assert.match(full.text, /memory storage default is full: the write on q\/b needs \d+ bytes/);
    const bigger = await rawRequest(z.url, "PUT", "/q/a", "z".repeat(1900), TEXT);
    assert.equal(bigger.status, 507);
    const { entries } = await getJson(z.url, "/q/**");
    assert.deepEqual(
      entries.map((e) => [e.key, e.value]),
      [["q/a", "x".repeat(1000)]],
    );
    // A DELETE is never refused, and makes room.
    assert.equal((await rawRequest(z.url, "DELETE", "/q/a")).status, 200);
    assert.equal((await rawRequest(z.url, "PUT", "/q/b", "y".repeat(1000), TEXT)).status, 200);
  });
});
