/**
 * The literal prefix of a key expression (src/keyexpr/prefix.ts), which the SQLite volume scans
 * as a key range: every key that intersects the expression is the prefix or lies under it, so a
 * wrong prefix would hide stored keys from a wild query.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { canonize, intersects } from "../../src/keyexpr/index.js";
import { literalPrefix } from "../../src/keyexpr/prefix.js";
import { rng } from "../support/rng.js";

test("the chunks before the first wild one; none when the first chunk is wild", () => {
  assert.equal(literalPrefix("a/b/c"), "a/b/c");
  assert.equal(literalPrefix("a/b/*"), "a/b");
  assert.equal(literalPrefix("a/**/c"), "a");
  assert.equal(literalPrefix("a/b$*/c"), "a", "a sub-chunk wildcard makes its chunk wild");
  assert.equal(literalPrefix("**"), undefined);
  assert.equal(literalPrefix("*/a"), undefined);
  assert.equal(literalPrefix("$*x/a"), undefined);
});

test("every key that intersects an expression is its prefix or lies under it (seeded)", () => {
  const next = rng(0x7e57);
  const pick = <T>(xs: readonly T[]): T => xs[next() % xs.length]!;
  const exprChunks = ["a", "b", "ab", "*", "**", "a$*", "$*b"];
  const keyChunks = ["a", "b", "ab", "ba", "aab"];
  const draw = (chunks: readonly string[]) => Array.from({ length: 1 + (next() % 4) }, () => pick(chunks)).join("/");
  let checked = 0;
  for (let i = 0; i < 3_000; i++) {
    const expr = canonize(draw(exprChunks));
    const key = draw(keyChunks);
    if (!intersects(expr, key)) continue;
    checked++;
    const prefix = literalPrefix(expr);
    if (prefix !== undefined) assert.ok(key === prefix || key.startsWith(`${prefix}/`), `${expr} ~ ${key}: ${prefix}`);
  }
  assert.ok(checked > 100, `only ${checked} intersecting pairs drawn`);
});
