import assert from "node:assert/strict";
import { test } from "node:test";
import { ZestError } from "../../src/core/errors.js";
import { toKeyExpr } from "../../src/core/key.js";
import { canonicalKeyExpr, KeyExprError } from "../../src/keyexpr/index.js";

test("canonicalKeyExpr canonizes a user's key expression, the same answer from its cache", () => {
  assert.equal(canonicalKeyExpr("a/**/**/b"), "a/**/b");
  assert.equal(canonicalKeyExpr("a/**/**/b"), "a/**/b");
  assert.equal(canonicalKeyExpr("demo/example/*eval"), "demo/example/$*eval");
});

test("a canonical form longer than the limit is refused, whether or not it was remembered", () => {
  const tight = { maxLength: 6, maxChunks: 512 };
  // "key/x*" fits in 6 bytes; its canonical form "key/x$*" takes 7.
  assert.throws(
    () => canonicalKeyExpr("key/x*", tight),
    (err: unknown) => err instanceof KeyExprError && err.kind === "TooLong",
  );
  assert.equal(canonicalKeyExpr("key/x*"), "key/x$*"); // now remembered
  assert.throws(
    () => canonicalKeyExpr("key/x*", tight),
    (err: unknown) => err instanceof KeyExprError && err.kind === "TooLong",
  );
});

test("the core's toKeyExpr refuses with ZestErrors: too_long past the length limit, bad_input otherwise", () => {
  assert.equal(toKeyExpr("a/**/**/b"), "a/**/b");
  assert.throws(
    () => toKeyExpr("a".repeat(5000)),
    (err: unknown) => err instanceof ZestError && err.kind === "too_long",
  );
  assert.throws(
    () => toKeyExpr(Array(600).fill("a").join("/")),
    (err: unknown) => err instanceof ZestError && err.kind === "bad_input",
  );
  assert.throws(
    () => toKeyExpr("a//b"),
    (err: unknown) => err instanceof ZestError && err.kind === "bad_input",
  );
});
