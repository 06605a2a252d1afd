import assert from "node:assert/strict";
import { test } from "node:test";
import { ChangeFeed } from "../../src/core/ports.js";
import { silentLogger } from "../../src/core/log.js";
import { type CachedResponse, ReadCache } from "../../src/rest/read-cache.js";
import { startZest } from "../../src/runtime.js";
import { http } from "../support/http.js";

function entry(cache: ReadCache, keyExpr: string) {
  return { version: cache.version, keyExpr, headers: {}, body: Buffer.from(keyExpr) };
}

test("read cache: a write drops only the answers whose key expression it intersects", () => {
  const feed = new ChangeFeed();
  const cache = new ReadCache(feed, 100);
  cache.set("j/a/1", entry(cache, "a/1"));
  cache.set("h/a/1", entry(cache, "a/1"));
  cache.set("j/a/2", entry(cache, "a/2"));
  cache.set("j/a/**", entry(cache, "a/**"));
  cache.set("j/b/*", entry(cache, "b/*"));
  feed.publish({ key: "a/1", kind: "put" });
  assert.equal(cache.get("j/a/1"), undefined);
  assert.equal(cache.get("h/a/1"), undefined);
  assert.equal(cache.get("j/a/**"), undefined);
  assert.ok(cache.get("j/a/2"));
  assert.ok(cache.get("j/b/*"));
  feed.publish({ key: "b/x", kind: "delete" });
  assert.equal(cache.get("j/b/*"), undefined);
  assert.ok(cache.get("j/a/2"));
  assert.equal(cache.size, 1);
});

test("read cache: a declaration or a wild write drops everything", () => {
  const feed = new ChangeFeed();
  const cache = new ReadCache(feed, 100);
  cache.set("j/a/1", entry(cache, "a/1"));
  feed.publish({ key: "zz/**", kind: "declaration" });
  assert.equal(cache.size, 0);
  cache.set("j/a/1", entry(cache, "a/1"));
  feed.publish({ key: "q/*", kind: "put" });
  assert.equal(cache.size, 0);
});

test("read cache: an answer whose query raced any change is not kept", () => {
  const feed = new ChangeFeed();
  const cache = new ReadCache(feed, 100);
  const e = entry(cache, "a/1"); // version read before the query
  feed.publish({ key: "other/key", kind: "put" }); // a write lands while the query runs
  cache.set("j/a/1", e);
  assert.equal(cache.get("j/a/1"), undefined);
});

test("read cache: replacing and evicting entries keeps the per-key index exact", () => {
  const feed = new ChangeFeed();
  const cache = new ReadCache(feed, 2);
  cache.set("j/a", entry(cache, "a"));
  cache.set("j/a", entry(cache, "a"));
  cache.set("j/b", entry(cache, "b"));
  cache.set("j/c", entry(cache, "c")); // evicts j/a
  assert.equal(cache.get("j/a"), undefined);
  feed.publish({ key: "b", kind: "put" });
  assert.equal(cache.get("j/b"), undefined);
  assert.ok(cache.get("j/c"));
  assert.equal(cache.size, 1);
});

test("read cache: bodies are held to a byte budget (oldest answers go first) and one too large is not kept", () => {
  const feed = new ChangeFeed();
  const cache = new ReadCache(feed, 100, 300, 1000);
  const sized = (keyExpr: string, bytes: number): CachedResponse => ({
    version: cache.version,
    keyExpr,
    headers: {},
    body: Buffer.alloc(bytes),
  });
  cache.set("j/a/**", sized("a/**", 300));
  cache.set("j/b/**", sized("b/**", 300));
  cache.set("j/c/**", sized("c/**", 300));
  assert.equal(cache.bytes, 900);
  cache.set("j/d/**", sized("d/**", 300)); // 1,200 > 1,000: j/a/** goes
  assert.equal(cache.get("j/a/**"), undefined);
  assert.ok(cache.get("j/d/**"));
  assert.equal(cache.bytes, 900);
  cache.set("j/e/**", sized("e/**", 301)); // over the per-answer limit: not kept, nothing evicted
  assert.equal(cache.get("j/e/**"), undefined);
  assert.equal(cache.size, 3);
  cache.set("j/d/**", sized("d/**", 100)); // replacing counts the new body only
  assert.equal(cache.bytes, 700);
  feed.publish({ key: "b/x", kind: "put" });
  assert.equal(cache.get("j/b/**"), undefined);
  assert.equal(cache.bytes, 400);
  feed.publish({ key: "*", kind: "declaration" });
  assert.equal(cache.bytes, 0);
});

test("a wild GET of more than 64 KiB is served again after a write with the written value (its cached answer is dropped)", async () => {
  const zest = await startZest({ plugins: { rest: { http_port: "127.0.0.1:0" } } }, { logger: silentLogger });
  try {
    const url = zest.restUrl!.replace("localhost", "127.0.0.1");
    const value = "v".repeat(200);
    for (let i = 0; i < 500; i++) await zest.session.put(`wide/k${i}`, value);
    const first = await http(url, "GET", "/wide/**");
    assert.ok(first.text.length > 100_000, `${first.text.length} bytes`);
    assert.equal((await http(url, "GET", "/wide/**")).text, first.text);
    assert.equal((await http(url, "PUT", "/wide/k7", { body: "changed" })).status, 200);
    const after = JSON.parse((await http(url, "GET", "/wide/**")).text) as Array<{ key: string; value: string }>;
    assert.equal(after.length, 500);
    assert.equal(after.find((e) => e.key === "wide/k7")?.value, "changed");
  } finally {
    await zest.close();
  }
});
