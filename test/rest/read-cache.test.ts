import assert from "node:assert/strict";
import { test } from "node:test";
import { ChangeFeed } from "../../src/core/ports.js";
import { ReadCache } from "../../src/rest/read-cache.js";

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
