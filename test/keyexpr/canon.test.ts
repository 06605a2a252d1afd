import { test } from "node:test";
import assert from "node:assert/strict";
import { canonize, checkKeyExpr, KeyExprError, type KeyExprErrorKind } from "../../src/keyexpr/index.js";

/** [input, canonical] pairs: RFC §1.3 rules (not the Rust $*-run behaviour) and the zest extension. */
const VECTORS: ReadonlyArray<readonly [string, string]> = [
  // already canonical: unchanged
  ["a", "a"],
  ["a/b/c", "a/b/c"],
  ["*/**", "*/**"],
  ["a/**/$*b", "a/**/$*b"],
  ["**/a$*", "**/a$*"],
  ["@a$*", "@a$*"],
  // rule 2: runs of ** merge
  ["a/**/**", "a/**"],
  ["**/**/**", "**"],
  ["**/**/a", "**/a"],
  ["a/**/**/b/**/**", "a/**/b/**"],
  // rule 4: ** / * becomes * / ** (repeatedly)
  ["**/*", "*/**"],
  ["**/*/*", "*/*/**"],
  ["**/*/**/*", "*/*/**"],
  ["*/**/**/*", "*/*/**"],
  ["a/**/*/b", "a/*/**/b"],
  ["**/*/**/a", "*/**/a"],
  // rule 3: a chunk that is exactly $* becomes *
  ["$*", "*"],
  ["a/$*/b", "a/*/b"],
  ["**/$*", "*/**"],
  ["$*/**/$*", "*/*/**"],
  // rule 1: $* runs collapse, wherever they are in the chunk (RFC / zenoh-pico results)
  ["$*$*", "*"],
  ["$*$*hi", "$*hi"],
  ["$*$*/x", "*/x"],
  ["a$*$*", "a$*"],
  ["a$*$*b", "a$*b"],
  ["$*hi$*$*", "$*hi$*"],
  ["hi$*$*$*", "hi$*"],
  ["a$*$*$*b", "a$*b"],
  ["a$*$*xy$*", "a$*xy$*"],
  // zest extension (docs/key-expressions.md §1.3): an in-chunk * is read as $*
  ["demo/example/*eval", "demo/example/$*eval"],
  ["a*", "a$*"],
  ["*a", "$*a"],
  ["a*b*c", "a$*b$*c"],
  ["***", "*"],
  ["a**", "a$*"],
  ["**a", "$*a"],
  ["*$*", "*"],
  ["$**", "*"],
  ["a*$*b", "a$*b"],
  ["a/**/*b", "a/**/$*b"],
  ["**/***", "*/**"],
  ["@a*", "@a$*"],
];

for (const [input, expected] of VECTORS) {
  test(`canonize(${JSON.stringify(input)}) is ${JSON.stringify(expected)}`, () => {
    const out = canonize(input);
    assert.equal(out, expected);
    assert.equal(checkKeyExpr(out), null, "the result is valid");
    assert.equal(canonize(out), out, "canonize is idempotent");
  });
}

const ERRORS: ReadonlyArray<readonly [string, KeyExprErrorKind]> = [
  ["", "Empty"],
  ["/", "EmptyChunk"],
  ["/a", "EmptyChunk"],
  ["a/", "EmptyChunk"],
  ["a//b", "EmptyChunk"],
  ["/**/*", "EmptyChunk"],
  ["a#", "SharpOrQMark"],
  ["a/**/**/b?x", "SharpOrQMark"],
  ["$", "UnboundDollar"],
  ["a$b", "UnboundDollar"],
  ["a$*$", "DollarAfterDollar"],
];

for (const [input, kind] of ERRORS) {
  test(`canonize(${JSON.stringify(input)}) throws ${kind}`, () => {
    assert.throws(
      () => canonize(input),
      (err: unknown) => err instanceof KeyExprError && err.kind === kind && err.input === input,
    );
  });
}
