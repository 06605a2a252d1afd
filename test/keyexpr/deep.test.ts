import { test } from "node:test";
import assert from "node:assert/strict";
import { chunkIntersects, includes, intersects, KeTrie } from "../../src/keyexpr/index.js";
import { rngUnit } from "../support/rng.js";
import { chunkMatches, pick } from "./reference.js";

/** A concrete key of `n` chunks. */
function deepKey(n: number, chunk = "c"): string {
  return Array.from({ length: n }, (_, i) => `${chunk}${i % 10}`).join("/");
}

test("a trie walk over a 3,000-chunk declaration does not overflow the stack", () => {
  const t = new KeTrie<string>();
  const key = deepKey(3_000);
  t.add(key, "deep");
  assert.deepEqual(t.intersecting("**"), ["deep"]);
  assert.deepEqual(t.intersecting(key), ["deep"]);
  assert.deepEqual(t.including(key), ["deep"]);
  assert.deepEqual(t.keys(), [key]);
  assert.equal(t.delete(key, "deep"), true);
  assert.equal(t.nodeCount, 0);
});

test("a trie walk over a 100,000-chunk declaration does not overflow the stack", () => {
  const t = new KeTrie<string>();
  const key = deepKey(100_000);
  t.add(key, "deep");
  t.add(`${deepKey(99_999)}/**`, "wild");
  assert.deepEqual(t.intersecting("**").sort(), ["deep", "wild"]);
  assert.deepEqual(t.intersecting(`${deepKey(50_000)}/**`).sort(), ["deep", "wild"]);
  assert.deepEqual(t.including(key).sort(), ["deep", "wild"]);
  assert.equal(t.keys().length, 2);
});

test("a 100,000-chunk query against a small trie does not overflow the stack", () => {
  const t = new KeTrie<string>();
  t.add("c0/**", "prefix");
  t.add("**/c9", "suffix");
  const q = deepKey(100_000);
  assert.deepEqual(t.intersecting(q).sort(), ["prefix", "suffix"]);
  assert.deepEqual(t.including(q).sort(), ["prefix", "suffix"]);
});

test("intersects and includes on 100,000-chunk expressions do not overflow the stack", () => {
  const a = deepKey(100_000);
  assert.equal(intersects(a, "**"), true);
  assert.equal(intersects(`${a}/**`, `**/${deepKey(10)}`), true);
  assert.equal(includes("**", a), true);
  assert.equal(includes(`c0/**`, a), true);
});

test("glob chunks of 7,000 characters intersect without a quadratic table that is kept", () => {
  const a = `ab$*${"x".repeat(7_000)}`;
  const b = `a${"c".repeat(7_000)}$*x`;
  assert.equal(chunkIntersects(a, b), false);
  assert.equal(chunkIntersects(`$*${"ab".repeat(3_500)}$*`, `${"ab".repeat(3_499)}x$*`), true);
  assert.equal(chunkIntersects(a, `${"ab".repeat(3_500)}$*`), true);
  assert.equal(chunkIntersects(`$*a$*b$*`, `x$*y`), true);
  assert.equal(chunkIntersects(`a$*`, `b$*`), false);
  assert.equal(chunkIntersects(`$*a`, `$*b`), false);
});

test("matching two 7,000-character glob chunks keeps no table afterwards", () => {
  const before = process.memoryUsage().arrayBuffers;
  // Same literal ends, so only the full comparison can answer: the old table was 49 MB, kept.
  const a = `a$*${"xy".repeat(3_500)}$*b`;
  const b = `a$*${"yx".repeat(3_500)}z$*b`;
  assert.equal(chunkIntersects(a, b), true);
  const grown = process.memoryUsage().arrayBuffers - before;
  assert.ok(grown < 4 * 1024 * 1024, `array buffers grew by ${grown} bytes`);
});

test("two glob chunks intersect exactly when some string matches both (checked by brute force)", () => {
  const next = rngUnit(3);
  const strings: string[] = [];
  const grow = (prefix: string, depth: number): void => {
    if (prefix !== "") strings.push(prefix);
    if (depth === 0) return;
    grow(`${prefix}a`, depth - 1);
    grow(`${prefix}b`, depth - 1);
  };
  grow("", 9);
  let checked = 0;
  for (let t = 0; t < 4000; t++) {
    const glob = (): string => {
      let s = "";
      const len = 1 + Math.floor(next() * 5);
      for (let i = 0; i < len; i++) s += pick(next, ["a", "b", "$*"]);
      return s.replace(/(\$\*)+/g, "$*");
    };
    const a = glob();
    const b = glob();
    if (a === "$*" || b === "$*") continue;
    checked++;
    const brute = strings.some((s) => chunkMatches(a, s) && chunkMatches(b, s));
    assert.equal(chunkIntersects(a, b), brute, `${a} ∩ ${b}`);
  }
  assert.ok(checked > 1000);
});
