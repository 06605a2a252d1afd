import { test } from "node:test";
import assert from "node:assert/strict";
import { KeyExpr, KeyExprError } from "../../src/keyexpr/index.js";

function throwsKind(fn: () => unknown, kind: string): void {
  assert.throws(fn, (err: unknown) => err instanceof KeyExprError && err.kind === kind);
}

test("new KeyExpr validates without canonizing", () => {
  assert.equal(new KeyExpr("a/b").toString(), "a/b");
  throwsKind(() => new KeyExpr("a/**/**"), "DoubleStarAfterDoubleStar");
  throwsKind(() => new KeyExpr("demo/*eval"), "StarInChunk");
  throwsKind(() => new KeyExpr(""), "Empty");
  throwsKind(() => new KeyExpr("a/"), "EmptyChunk");
});

test("KeyExpr.autocanonize canonizes, including the in-chunk * extension", () => {
  assert.equal(KeyExpr.autocanonize("a/**/**").toString(), "a/**");
  assert.equal(KeyExpr.autocanonize("**/*").toString(), "*/**");
  assert.equal(KeyExpr.autocanonize("demo/example/*eval").toString(), "demo/example/$*eval");
  throwsKind(() => KeyExpr.autocanonize("/a"), "EmptyChunk");
});

test("isWild", () => {
  assert.equal(new KeyExpr("a/b").isWild, false);
  assert.equal(new KeyExpr("a/*").isWild, true);
  assert.equal(new KeyExpr("a$*").isWild, true);
  assert.equal(new KeyExpr("**").isWild, true);
});

test("intersects, includes and equals accept a KeyExpr or a string", () => {
  const ke = new KeyExpr("demo/**");
  assert.equal(ke.intersects("demo/a"), true);
  assert.equal(ke.intersects(new KeyExpr("demo/a/b")), true);
  assert.equal(ke.intersects("other"), false);
  assert.equal(ke.includes("demo/a/*"), true);
  assert.equal(ke.includes(new KeyExpr("*/a")), false);
  assert.equal(ke.equals("demo/**"), true);
  assert.equal(ke.equals(new KeyExpr("demo/**")), true);
  assert.equal(ke.equals("demo/*"), false);
  // a string argument is validated like the constructor does
  throwsKind(() => ke.intersects("a//b"), "EmptyChunk");
});

test("the seed's demo/example/*eval matches demo/example/zest-eval", () => {
  const ke = KeyExpr.autocanonize("demo/example/*eval");
  assert.equal(ke.intersects("demo/example/zest-eval"), true);
  assert.equal(ke.includes("demo/example/zest-eval"), true);
  assert.equal(ke.intersects("demo/example/zest"), false);
});

test("join inserts a slash and canonizes", () => {
  assert.equal(new KeyExpr("a").join("b").toString(), "a/b");
  assert.equal(new KeyExpr("a/**").join("**").toString(), "a/**");
  assert.equal(new KeyExpr("a/**").join("*/b").toString(), "a/*/**/b");
  assert.equal(new KeyExpr("a").join(new KeyExpr("b/c")).toString(), "a/b/c");
  throwsKind(() => new KeyExpr("a").join("/b"), "EmptyChunk");
  throwsKind(() => new KeyExpr("a").join(""), "EmptyChunk");
});

test("concat glues text and canonizes", () => {
  assert.equal(new KeyExpr("a").concat("b").toString(), "ab");
  assert.equal(new KeyExpr("a").concat("/b/**").toString(), "a/b/**");
  assert.equal(new KeyExpr("a/b").concat("$*").toString(), "a/b$*");
  assert.equal(new KeyExpr("a").concat("").toString(), "a");
  assert.equal(new KeyExpr("a/**").concat("/**").toString(), "a/**");
});

test("concat refuses to glue ** to text or to build ** from two stars", () => {
  throwsKind(() => new KeyExpr("a/**").concat("b"), "StarInChunk");
  throwsKind(() => new KeyExpr("a").concat("**/b"), "StarInChunk");
  throwsKind(() => new KeyExpr("a").concat("**"), "StarInChunk");
  throwsKind(() => new KeyExpr("a/*").concat("*"), "StarInChunk");
  throwsKind(() => new KeyExpr("a$*").concat("*b"), "StarInChunk");
});

test("a KeyExpr is immutable and serializes as its string", () => {
  const ke = new KeyExpr("a/b");
  assert.equal(`${ke}`, "a/b");
  assert.equal(JSON.stringify({ ke }), '{"ke":"a/b"}');
  assert.ok(Object.isFrozen(ke));
  assert.throws(() => {
    (ke as unknown as { isWild: boolean }).isWild = true;
  }, TypeError);
  assert.equal(ke.isWild, false);
});
