import { test } from "node:test";
import assert from "node:assert/strict";
import { canonize, includes, intersects, KeTrie, KeyExprError } from "../../src/keyexpr/index.js";
import { rngUnit } from "../support/rng.js";
import { pick } from "./reference.js";

function sorted<T>(xs: readonly T[]): T[] {
  return [...xs].sort();
}

test("add, intersecting and including on a small tree", () => {
  const t = new KeTrie<string>();
  t.add("demo/example/a", "A");
  t.add("demo/example/*", "STAR");
  t.add("demo/**", "DEMO");
  t.add("demo/example/$*eval", "EVAL");
  t.add("**", "ALL");
  t.add("@/router/x", "ADMIN");
  t.add("other", "OTHER");
  assert.equal(t.size, 7);
  assert.deepEqual(sorted(t.intersecting("demo/example/a")), ["A", "ALL", "DEMO", "STAR"]);
  assert.deepEqual(sorted(t.intersecting("demo/example/zest-eval")), ["ALL", "DEMO", "EVAL", "STAR"]);
  assert.deepEqual(sorted(t.intersecting("demo")), ["ALL", "DEMO"]);
  assert.deepEqual(sorted(t.intersecting("demo/example/*")), ["A", "ALL", "DEMO", "EVAL", "STAR"]);
  assert.deepEqual(sorted(t.intersecting("**")), ["A", "ALL", "DEMO", "EVAL", "OTHER", "STAR"]);
  assert.deepEqual(sorted(t.intersecting("@/router/x")), ["ADMIN"]);
  assert.deepEqual(sorted(t.intersecting("@/**")), ["ADMIN"]);
  assert.deepEqual(sorted(t.including("demo/example/a")), ["A", "ALL", "DEMO", "STAR"]);
  assert.deepEqual(sorted(t.including("demo/example/*")), ["ALL", "DEMO", "STAR"]);
  assert.deepEqual(sorted(t.including("demo/**")), ["ALL", "DEMO"]);
  assert.deepEqual(sorted(t.including("@/router/x")), ["ADMIN"]);
  assert.deepEqual(
    sorted(t.keys()),
    sorted(["demo/example/a", "demo/example/*", "demo/**", "demo/example/$*eval", "**", "@/router/x", "other"]),
  );
});

test("a key may hold many values; each value is reported once", () => {
  const t = new KeTrie<number>();
  t.add("a/b", 1);
  t.add("a/b", 2);
  t.add("a/b", 2); // the same pair again is a no-op
  t.add("a/*", 1); // the same value under another KE
  t.add("**", 1);
  assert.equal(t.size, 4);
  assert.deepEqual(sorted(t.intersecting("a/b")), [1, 2]);
  assert.deepEqual(sorted(t.including("a/b")), [1, 2]);
  assert.equal(t.delete("a/b", 1), true);
  assert.deepEqual(sorted(t.intersecting("a/b")), [1, 2], "1 is still declared on a/* and **");
  assert.equal(t.delete("a/b", 1), false);
  assert.equal(t.size, 3);
});

test("delete prunes nodes left empty", () => {
  const t = new KeTrie<string>();
  assert.equal(t.nodeCount, 0);
  t.add("a/b/c", "x");
  t.add("a/**/d", "y");
  t.add("a/b$*/c", "z");
  t.add("a", "w");
  assert.equal(t.nodeCount, 7);
  assert.equal(t.delete("a/b/c", "nope"), false);
  assert.equal(t.delete("a/b/q", "x"), false);
  assert.equal(t.delete("a//b", "x"), false);
  assert.equal(t.delete("a/b/c", "x"), true);
  assert.equal(t.nodeCount, 5);
  assert.equal(t.delete("a/**/d", "y"), true);
  assert.equal(t.nodeCount, 3);
  assert.equal(t.delete("a/b$*/c", "z"), true);
  assert.equal(t.nodeCount, 1, "a still holds a value");
  assert.equal(t.delete("a", "w"), true);
  assert.equal(t.nodeCount, 0);
  assert.equal(t.size, 0);
  assert.deepEqual(t.keys(), []);
  assert.deepEqual(t.intersecting("**"), []);
  t.add("a/b/c", "x");
  assert.deepEqual(t.intersecting("a/*/c"), ["x"]);
});

test("add and queries validate their key expression", () => {
  const t = new KeTrie<number>();
  assert.throws(() => t.add("a//b", 1), KeyExprError);
  assert.throws(() => t.add("**/**", 1), KeyExprError);
  assert.throws(() => t.intersecting("a/"), KeyExprError);
  assert.throws(() => t.including(""), KeyExprError);
  assert.equal(t.size, 0);
});

test("verbatim chunks in the trie are matched only by the identical chunk", () => {
  const t = new KeTrie<string>();
  t.add("@a", "a");
  t.add("@a$*/**", "a-star");
  t.add("**/xyz$*xyz", "xyz");
  t.add("a/**/$*b", "b");
  t.add("@", "at");
  t.add("**/@a", "deep-a");
  assert.deepEqual(sorted(t.intersecting("@a")), ["a", "deep-a"]);
  assert.deepEqual(sorted(t.intersecting("@a$*")), ["a-star"]);
  assert.deepEqual(t.intersecting("@a/b/xyzdefxyz"), []);
  assert.deepEqual(t.intersecting("a/@b"), []);
  assert.deepEqual(sorted(t.intersecting("@/**")), ["at"]);
  assert.deepEqual(sorted(t.intersecting("**")), ["b", "xyz"]);
  assert.deepEqual(sorted(t.intersecting("x/@a")), ["deep-a"]);
});

test("100,000 literal declarations: a concrete put finds exactly its own", () => {
  const t = new KeTrie<number>();
  const N = 100_000;
  for (let i = 0; i < N; i++) t.add(`bench/sub/${i}`, i);
  t.add("bench/sub/*", -1);
  t.add("bench/**", -2);
  t.add("bench/sub/$*7", -3);
  assert.equal(t.size, N + 3);
  assert.deepEqual(sorted(t.intersecting("bench/sub/777")), sorted([777, -1, -2, -3]));
  assert.deepEqual(sorted(t.intersecting("bench/sub/778")), sorted([778, -1, -2]));
  assert.deepEqual(sorted(t.including("bench/sub/777")), sorted([777, -1, -2, -3]));
  assert.deepEqual(sorted(t.intersecting("bench/pub/1")), [-2]);
  // a wild query still sees them all
  assert.equal(t.intersecting("bench/sub/*").length, N + 3);
  assert.deepEqual(sorted(t.intersecting("bench/sub/$*99999")), sorted([99999, -1, -2]));
  for (let i = 0; i < N; i += 2) t.delete(`bench/sub/${i}`, i);
  assert.deepEqual(sorted(t.intersecting("bench/sub/778")), sorted([-1, -2]));
  assert.deepEqual(sorted(t.intersecting("bench/sub/777")), sorted([777, -1, -2, -3]));
});

// Random declarations and queries, checked against filtering every declaration.
const CHUNKS = ["a", "b", "ab", "c", "*", "**", "a$*", "$*b", "$*", "@x", "@a$*"];

function randomKe(next: () => number, maxDepth: number): string {
  const depth = 1 + Math.floor(next() * maxDepth);
  const chunks: string[] = [];
  for (let d = 0; d < depth; d++) chunks.push(pick(next, CHUNKS));
  return canonize(chunks.join("/"));
}

function randomKey(next: () => number, maxDepth: number): string {
  const depth = 1 + Math.floor(next() * maxDepth);
  const chunks: string[] = [];
  for (let d = 0; d < depth; d++) chunks.push(pick(next, ["a", "b", "ab", "ba", "c", "@x", "@a$*"]));
  return chunks.join("/");
}

test("intersecting and including agree with filtering all declarations (random)", () => {
  const next = rngUnit(0x5eed);
  for (let round = 0; round < 40; round++) {
    const t = new KeTrie<number>();
    const decls: Array<[string, number]> = [];
    const count = 1 + Math.floor(next() * 60);
    for (let v = 0; v < count; v++) {
      // values sometimes repeat across KEs, to exercise de-duplication
      const value = next() < 0.2 && v > 0 ? Math.floor(next() * v) : v;
      const ke = randomKe(next, 5);
      t.add(ke, value);
      if (!decls.some(([k, x]) => k === ke && x === value)) decls.push([ke, value]);
    }
    // delete a random third
    for (let k = decls.length - 1; k >= 0; k--) {
      if (next() < 0.33) {
        const [ke, value] = decls[k]!;
        assert.equal(t.delete(ke, value), true);
        decls.splice(k, 1);
      }
    }
    assert.equal(t.size, decls.length);
    assert.deepEqual(sorted(t.keys()), sorted([...new Set(decls.map(([ke]) => ke))]));
    for (let qn = 0; qn < 60; qn++) {
      const q = next() < 0.5 ? randomKe(next, 5) : randomKey(next, 5);
      const wantI = [...new Set(decls.filter(([ke]) => intersects(ke, q)).map(([, v]) => v))];
      const wantC = [...new Set(decls.filter(([ke]) => includes(ke, q)).map(([, v]) => v))];
      const gotI = t.intersecting(q);
      const gotC = t.including(q);
      assert.equal(gotI.length, new Set(gotI).size, `duplicates for ${q}`);
      assert.deepEqual(sorted(gotI), sorted(wantI), `intersecting(${q}) in round ${round}`);
      assert.deepEqual(sorted(gotC), sorted(wantC), `including(${q}) in round ${round}`);
    }
  }
});

test("deep ** declarations against long queries (several positions alive at once)", () => {
  const t = new KeTrie<string>();
  const decls = ["**/a/**/b", "a/**/a/b", "**/a/b", "a/**/@x/b", "**/c/**", "*/**/b", "a$*/**/$*b"];
  for (const ke of decls) t.add(ke, ke);
  const queries = [
    "a/a/a/b",
    "a/c/a/b",
    "a/@x/b",
    "a/a/@x/b",
    "a/**/b",
    "**/b",
    "a/*/*/*/b",
    "c",
    "a/ab/b",
    "**",
    "*/*/**",
  ];
  for (const q of queries) {
    assert.deepEqual(sorted(t.intersecting(q)), sorted(decls.filter((d) => intersects(d, q))), `intersecting ${q}`);
    assert.deepEqual(sorted(t.including(q)), sorted(decls.filter((d) => includes(d, q))), `including ${q}`);
  }
});
