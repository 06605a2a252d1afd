/** The request path's bounded cache (src/access/bounded-cache.ts): never more than its bound, oldest insertion out first. */
import assert from "node:assert/strict";
import { test } from "node:test";
import { BoundedCache } from "../../src/access/bounded-cache.js";

test("past its bound the oldest insertion goes, whatever was read since", () => {
  const c = new BoundedCache<string, number>(3);
  for (const [k, v] of [
    ["a", 1],
    ["b", 2],
    ["c", 3],
  ] as const)
    c.set(k, v);
  assert.equal(c.get("a"), 1); // a read does not reorder
  c.set("d", 4);
  assert.equal(c.size, 3);
  assert.equal(c.get("a"), undefined);
  assert.deepEqual(
    ["b", "c", "d"].map((k) => c.get(k)),
    [2, 3, 4],
  );
});

test("setting a key it holds replaces the value without evicting; delete frees a place", () => {
  const c = new BoundedCache<string, number>(2);
  c.set("a", 1);
  c.set("b", 2);
  c.set("a", 10);
  assert.equal(c.size, 2);
  assert.deepEqual([c.get("a"), c.get("b")], [10, 2]);
  c.delete("b");
  c.set("c", 3);
  assert.deepEqual([c.get("a"), c.get("b"), c.get("c")], [10, undefined, 3]);
});

test("many distinct keys never grow it past its bound", () => {
  const c = new BoundedCache<number, number>(100);
  for (let i = 0; i < 10_000; i++) c.set(i, i);
  assert.equal(c.size, 100);
  assert.equal(c.get(9_899), undefined);
  assert.equal(c.get(9_900), 9_900);
});
