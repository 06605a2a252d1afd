import { test } from "node:test";
import assert from "node:assert/strict";
import { chunkIncludes, chunkIntersects, includes, intersects } from "../../src/keyexpr/index.js";

/** [a, b, intersects?] — every pair is checked in both orders. */
const INTERSECTS: ReadonlyArray<readonly [string, string, boolean]> = [
  ["a", "a", true],
  ["a/b", "a/b", true],
  ["a", "b", false],
  ["a/b", "a", false],
  ["a/b", "a/c", false],
  ["a/b/c", "a/*/d", false],
  // * is exactly one chunk
  ["*", "a", true],
  ["*", "*", true],
  ["*", "a/b", false],
  ["a/*", "a", false],
  ["a/*", "a/b", true],
  ["a/*/**", "a", false],
  // ** is zero or more chunks
  ["**", "a/b/c", true],
  ["*", "**", true],
  ["a/**", "a", true],
  ["a/**", "a/b/c", true],
  ["**/b", "a/b", true],
  ["**/a/**", "a", true],
  ["a/**/b", "a/b", true],
  ["a/**/b", "a/x/y/b", true],
  ["a/**/b", "a/*/b", true],
  ["a/**/b/**", "a/b", true],
  ["a/**/c", "a/b", false],
  ["*/**", "a", true],
  ["*/**", "**", true],
  ["*/**/a", "x/a", true],
  ["*/**/a", "a", false],
  ["**/a", "**/b", false],
  ["**/a/**", "**/b/**", true],
  // $* globs inside a chunk
  ["*", "abc$*", true],
  ["a$*", "a", true],
  ["a$*", "ab", true],
  ["a$*", "b", false],
  ["a$*b", "ab", true],
  ["a$*b", "axxb", true],
  ["a$*b", "a$*c", false],
  ["a$*", "$*b", true],
  ["$*a", "b$*", true],
  ["$*a", "$*b", false],
  ["$*abc$*", "abc$*", true],
  ["a$*b$*c", "abc", true],
  ["a$*b$*c", "ac", false],
  ["a$*b", "ab$*c", false],
  ["a$*c$*e", "a$*d$*e", true],
  ["x/a$*b/y", "x/*/y", true],
  ["demo/example/$*eval", "demo/example/zest-eval", true],
  ["demo/example/$*eval", "demo/example/zest-evaluation", false],
  // verbatim @ chunks: matched only by the identical chunk
  ["@", "@", true],
  ["@", "@/**", true],
  ["@/**", "@/a/b", true],
  ["@a", "@a", true],
  ["@a", "@b", false],
  ["@a", "*", false],
  ["@a", "**", false],
  ["**", "@/router/x", false],
  ["**", "a/@b", false],
  ["*/**", "@a", false],
  ["*/router/x", "@/router/x", false],
  ["**/@a", "@a", true],
  ["**/@a", "x/y/@a", true],
  ["**/@a", "@b", false],
  ["@a/**", "@a", true],
  ["@a", "@a$*/**", false],
  ["@a$*", "@ab", false],
  ["@a$*", "@a$*", true],
  ["@x/*", "@x/y", true],
  ["*/@a", "b/@a", true],
  ["a/**/@b", "a/x/y/@b", true],
  ["a/**/@b", "a/x/@y/@b", false],
  ["**/xyz$*xyz", "@a/b/xyzdefxyz", false],
  ["a/**/$*b", "a/@b", false],
  ["a/*", "a/@b", false],
  ["$*a", "@a", false],
  ["@", "@a", false],
];

for (const [a, b, expected] of INTERSECTS) {
  test(`intersects(${JSON.stringify(a)}, ${JSON.stringify(b)}) is ${expected}, both orders`, () => {
    assert.equal(intersects(a, b), expected);
    assert.equal(intersects(b, a), expected);
  });
}

/** [a, b, includes?] — set(a) ⊇ set(b) with the Rust LTRIncluder answers. */
const INCLUDES: ReadonlyArray<readonly [string, string, boolean]> = [
  ["a", "a", true],
  ["a", "b", false],
  ["a", "*", false],
  ["*", "a", true],
  ["*", "*", true],
  ["*", "**", false],
  ["*", "a/b", false],
  ["*", "a$*", true],
  ["**", "a/b", true],
  ["**", "*", true],
  ["**", "**", true],
  ["**", "*/**", true],
  ["**", "a$*/b/**", true],
  ["a/**", "a", true],
  ["a/**", "a/b/c", true],
  ["a/**", "a/**", true],
  ["a/**", "a/*", true],
  ["a", "a/**", false],
  ["a/*", "a", false],
  ["a/*", "a/**", false],
  ["*/**", "*/**", true],
  ["*/**", "*/*", true],
  ["*/**", "a", true],
  ["**/b", "a/b", true],
  ["**/b", "**/b", true],
  ["a/**/b", "a/b", true],
  ["a/**/b", "a/x/**/b", true],
  ["a/**/b", "a/**/b", true],
  ["**/@a/**", "**/@a/**", true],
  // $* patterns
  ["a$*", "ab", true],
  ["a$*", "a", true],
  ["a$*", "ab$*", true],
  ["a$*", "b", false],
  ["a$*", "*", false],
  ["$*a", "*", false],
  ["a$*", "$*a", false],
  ["$*a$*", "a$*", true],
  ["a$*b$*c", "axbyc", true],
  ["a$*b$*c", "abc", true],
  ["a$*b$*c", "acb", false],
  ["a$*b", "a$*", false],
  ["a$*b", "a$*b", true],
  // verbatim
  ["@", "@", true],
  ["@/**", "@", true],
  ["@/**", "@/a", true],
  ["@/**", "a", false],
  ["**", "@a", false],
  ["**", "a/@b", false],
  ["**/@a", "@a", true],
  ["**/@a", "x/@a", true],
  ["@a$*", "@a$*", true],
  ["@a$*", "@ab", false],
  ["$*a", "@a", false],
  ["**/xyz$*xyz", "@a/b/xyzdefxyz", false],
  // zero-chunk **: ** contains the empty key, */** does not
  ["*/**", "**", false],
  // §1.5 incompleteness: the sets are included, but the reference answers false
  ["*/**", "**/a", false],
  ["*/*/**", "a/**/b", false],
  ["a/*/**", "a/**/$*b", false],
];

for (const [a, b, expected] of INCLUDES) {
  test(`includes(${JSON.stringify(a)}, ${JSON.stringify(b)}) is ${expected}`, () => {
    assert.equal(includes(a, b), expected);
    if (expected) assert.equal(intersects(a, b), true, "includes implies intersects");
  });
}

test("includes implies intersects, over every pair of the vector KEs", () => {
  const kes = [...new Set([...INTERSECTS, ...INCLUDES].flatMap((v) => [v[0], v[1]]))];
  for (const a of kes) {
    for (const b of kes) {
      assert.equal(intersects(a, b), intersects(b, a), `symmetry ${a} ${b}`);
      if (includes(a, b)) assert.equal(intersects(a, b), true, `${a} ⊇ ${b} but disjoint`);
    }
    assert.equal(includes(a, a), true, `${a} includes itself`);
  }
});

function repeat(piece: string, times: number): string {
  return Array.from({ length: times }, () => piece).join("/");
}

test("adversarial (**/a)^12/b against a^24/c answers at once", { timeout: 2000 }, () => {
  const left = `${repeat("**/a", 12)}/b`;
  const right = `${repeat("a", 24)}/c`;
  assert.equal(intersects(left, right), false);
  assert.equal(intersects(right, left), false);
  assert.equal(includes(left, right), false);
  assert.equal(includes(right, left), false);
  assert.equal(intersects(left, `${repeat("a", 24)}/b`), true);
  assert.equal(includes(left, `${repeat("a", 24)}/b`), true);
  // far beyond what an unmemoized recursion could answer
  const big = `${repeat("**/a", 200)}/b`;
  assert.equal(intersects(big, `${repeat("a", 400)}/c`), false);
  assert.equal(includes(big, `${repeat("a", 400)}/c`), false);
  assert.equal(intersects(big, `${repeat("a", 400)}/b`), true);
});

test("adversarial $* globs are polynomial too", { timeout: 2000 }, () => {
  const left = `${"a$*".repeat(40)}b`;
  const right = "a".repeat(200);
  assert.equal(chunkIntersects(left, right), false);
  assert.equal(chunkIntersects(left, `${right}b`), true);
  assert.equal(chunkIncludes(left, `${right}b`), true);
});

test("chunk-level helpers treat * and ** as one non-verbatim chunk", () => {
  assert.equal(chunkIntersects("*", "abc"), true);
  assert.equal(chunkIntersects("**", "a$*"), true);
  assert.equal(chunkIntersects("*", "@a"), false);
  assert.equal(chunkIntersects("@a$*", "@abc"), false);
  assert.equal(chunkIntersects("$*x$*", "y$*"), true);
  assert.equal(chunkIncludes("*", "*"), true);
  assert.equal(chunkIncludes("*", "**"), false);
  assert.equal(chunkIncludes("$*b$*", "ab$*c"), true);
  assert.equal(chunkIncludes("a$*bc$*d", "abd"), false);
  assert.equal(chunkIncludes("ab$*ba", "aba"), false, "prefix and suffix may not overlap");
  assert.equal(chunkIncludes("$*b$*ba", "ba"), false, "a middle piece may not overlap the suffix");
  assert.equal(includes("$*b$*ba", "ba"), false);
  assert.equal(includes("$*b$*ba", "bba"), true);
});
