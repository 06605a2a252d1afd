import { test } from "node:test";
import assert from "node:assert/strict";
import {
  checkKeyExpr,
  isValid,
  isWild,
  KeyExprError,
  validate,
  type KeyExprErrorKind,
} from "../../src/keyexpr/index.js";

const VALID = [
  "a",
  "a/b",
  "a/b/c",
  "*",
  "**",
  "a/*",
  "*/**",
  "*/*/**",
  "a/**/b",
  "a/*/**/b",
  "**/a",
  "a/**/$*b",
  "a$*",
  "$*a",
  "a$*b",
  "a$*b$*c",
  "$*a$*",
  "demo/example/$*eval",
  // `@` gets no special treatment during validation (§1.1)
  "@",
  "@/router/x",
  "a/@/b",
  "@a$*",
  "@$*",
  "@a/**",
  // every other byte is allowed
  "a b",
  "-:=%;,",
  "k=v;x",
  "é/ü/日本語",
  "a.b/c_d/~",
];

const INVALID: ReadonlyArray<readonly [string, KeyExprErrorKind]> = [
  ["", "Empty"],
  ["/", "EmptyChunk"],
  ["/a", "EmptyChunk"],
  ["a/", "EmptyChunk"],
  ["a//b", "EmptyChunk"],
  ["a/b/", "EmptyChunk"],
  ["//", "EmptyChunk"],
  ["a#b", "SharpOrQMark"],
  ["#", "SharpOrQMark"],
  ["a?b", "SharpOrQMark"],
  ["a/b?x=1", "SharpOrQMark"],
  ["a*", "StarInChunk"],
  ["*a", "StarInChunk"],
  ["***", "StarInChunk"],
  ["**a", "StarInChunk"],
  ["a**", "StarInChunk"],
  ["*$*", "StarInChunk"],
  ["$**", "StarInChunk"],
  ["a/b*c", "StarInChunk"],
  ["**/*a", "StarInChunk"],
  ["$", "UnboundDollar"],
  ["a$", "UnboundDollar"],
  ["$a", "UnboundDollar"],
  ["a$b", "UnboundDollar"],
  ["a/$$*", "UnboundDollar"],
  ["a$*$*b", "DollarAfterDollar"],
  ["a$*$", "DollarAfterDollar"],
  ["$*$*", "DollarAfterDollar"],
  ["$*", "LoneDollarStar"],
  ["a/$*", "LoneDollarStar"],
  ["$*/a", "LoneDollarStar"],
  ["**/*", "SingleStarAfterDoubleStar"],
  ["a/**/*/b", "SingleStarAfterDoubleStar"],
  ["**/**", "DoubleStarAfterDoubleStar"],
  ["a/**/**", "DoubleStarAfterDoubleStar"],
];

for (const ke of VALID) {
  test(`validate accepts ${JSON.stringify(ke)}`, () => {
    assert.doesNotThrow(() => validate(ke));
    assert.equal(checkKeyExpr(ke), null);
    assert.equal(isValid(ke), true);
  });
}

for (const [ke, kind] of INVALID) {
  test(`validate rejects ${JSON.stringify(ke)} with ${kind}`, () => {
    assert.equal(checkKeyExpr(ke), kind);
    assert.equal(isValid(ke), false);
    assert.throws(
      () => validate(ke),
      (err: unknown) => err instanceof KeyExprError && err.kind === kind && err.input === ke,
    );
  });
}

test("validate reports the first error met, left to right", () => {
  assert.equal(checkKeyExpr("a*/b#"), "StarInChunk");
  assert.equal(checkKeyExpr("a#/b*"), "SharpOrQMark");
  assert.equal(checkKeyExpr("$/a//b"), "UnboundDollar");
  assert.equal(checkKeyExpr("a//b*"), "EmptyChunk");
});

test("a KeyExprError message is one line naming the rule and the input", () => {
  try {
    validate("a//b");
    assert.fail("should have thrown");
  } catch (err) {
    assert.ok(err instanceof KeyExprError);
    assert.ok(err instanceof Error);
    assert.equal(err.name, "KeyExprError");
    assert.equal(
      err.message,
      'invalid key expression "a//b": empty chunks are forbidden, as are leading and trailing slashes',
    );
    assert.ok(!err.message.includes("\n"));
  }
  // control characters in the input do not break the one-line message
  assert.throws(
    () => validate("a\n#"),
    (err: unknown) => err instanceof Error && !err.message.includes("\n"),
  );
});

test("isWild is true exactly when a KE holds *, ** or $*", () => {
  for (const ke of ["*", "**", "a/*", "a/**", "a$*", "$*b/c", "@a$*"]) assert.equal(isWild(ke), true, ke);
  for (const ke of ["a", "a/b", "@", "@/router/x", "a b"]) assert.equal(isWild(ke), false, ke);
});
