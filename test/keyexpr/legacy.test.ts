import { test } from "node:test";
import assert from "node:assert/strict";
import { includes, intersects, keyExprToPath, KeyExprError, pathToKeyExpr } from "../../src/keyexpr/index.js";

const expr = (p: string): string => pathToKeyExpr(p, { expr: true });
const key = (p: string): string => pathToKeyExpr(p, { expr: false });

/** Legacy matching, through the one modern key space: expression vs key. */
function matches(pathExpr: string, path: string): boolean {
  return intersects(expr(pathExpr), key(path));
}

function throwsInvalidPath(fn: () => unknown, messagePart?: string): void {
  assert.throws(
    fn,
    (err: unknown) =>
      err instanceof KeyExprError &&
      err.kind === "InvalidPath" &&
      err.message.startsWith("invalid path ") &&
      (messagePart === undefined || err.message.includes(messagePart)),
  );
}

const CONVERSIONS: ReadonlyArray<readonly [string, string]> = [
  ["/a", "a"],
  ["/a/b", "a/b"],
  ["////a///b///", "a/b"],
  ["/a/b/", "a/b"],
  ["  /a/b  ", "a/b"],
  ["/**", "**"],
  ["/**/", "**"],
  ["/*", "*"],
  ["/demo/example/*eval", "demo/example/$*eval"],
  ["/demo/ex*", "demo/ex$*"],
  ["/ab*cd", "ab$*cd"],
  ["/x/a*d*e", "x/a$*d$*e"],
  ["/**/*", "*/**"],
  ["/a/**/**/b", "a/**/b"],
  ["/@/router/x", "@/router/x"],
  ["/a b/c:d/@e", "a b/c:d/@e"],
];

for (const [path, ke] of CONVERSIONS) {
  test(`pathToKeyExpr(${JSON.stringify(path)}) is ${JSON.stringify(ke)}`, () => {
    assert.equal(expr(path), ke);
  });
}

test("a key for PUT converts like an expression but refuses *", () => {
  assert.equal(key("/demo/example/test"), "demo/example/test");
  assert.equal(key("//demo//x/"), "demo/x");
  throwsInvalidPath(() => key("/demo/*"), '"*" is not allowed in a key');
  throwsInvalidPath(() => key("/demo/a*"));
  throwsInvalidPath(() => key("/**"));
});

test("invalid paths are rejected with kind InvalidPath", () => {
  throwsInvalidPath(() => expr("/"), "empty path");
  throwsInvalidPath(() => expr("//"), "empty path");
  throwsInvalidPath(() => expr(""), "empty path");
  throwsInvalidPath(() => expr("   "), "empty path");
  throwsInvalidPath(() => key("/"), "empty path");
  throwsInvalidPath(() => expr("a/b"), 'must start with "/"');
  throwsInvalidPath(() => expr("xxx"), 'must start with "/"');
  throwsInvalidPath(() => expr("/a**"), "whole chunk");
  throwsInvalidPath(() => expr("/**a"), "whole chunk");
  throwsInvalidPath(() => expr("/x/***"), "whole chunk");
  throwsInvalidPath(() => expr("/a?b"), '"?"');
  throwsInvalidPath(() => expr("/a?"), '"?"');
  throwsInvalidPath(() => expr("/a#b"), '"#"');
  throwsInvalidPath(() => expr("/a[b]"), '"["');
  throwsInvalidPath(() => expr("/a]"), '"]"');
  throwsInvalidPath(() => expr("/a$b"), '"$" is not allowed');
  throwsInvalidPath(() => key("/price$"), '"$" is not allowed');
});

test("an in-chunk * is a glob within one chunk (/demo/ex*)", () => {
  assert.equal(matches("/demo/ex*", "/demo/example"), true);
  assert.equal(matches("/demo/ex*", "/demo/ex"), true);
  assert.equal(matches("/demo/ex*", "/demo/ex/ample"), false);
  assert.equal(matches("/ab*", "/ab"), true);
});

test("/ab*cd matches /abxxcxxcd but not /abxxcxxd", () => {
  assert.equal(matches("/ab*cd", "/abxxcxxcd"), true);
  assert.equal(matches("/ab*cd", "/abxxcxxd"), false);
});

test("both sides may hold globs (/x/a*d*e ∩ /x/a*c*e)", () => {
  assert.equal(intersects(expr("/x/a*d*e"), expr("/x/a*c*e")), true);
});

test("a * chunk needs a non-empty chunk", () => {
  // "/" itself is not a path, so /* can never match it; and /ab/* needs a chunk below /ab
  assert.equal(matches("/ab/*", "/ab"), false);
  assert.equal(matches("/*", "/ab"), true);
  assert.equal(matches("/*", "/a/b"), false);
});

test("** spans chunks; ** must be a whole chunk", () => {
  assert.equal(matches("/**", "/a/b/c"), true);
  assert.equal(matches("/a/**/d", "/a/b/c/d"), true);
  assert.equal(matches("/a/**", "/a"), true);
});

test("the /@/ admin space is only reached by /@/ expressions", () => {
  assert.equal(matches("/**", "/@/router/x"), false);
  assert.equal(matches("/*/router/x", "/@/router/x"), false);
  assert.equal(matches("/@/**", "/@/router/x"), true);
  assert.equal(matches("/@/router/*", "/@/router/x"), true);
});

test("the seed's eval path /demo/example/*eval", () => {
  assert.equal(matches("/demo/example/*eval", "/demo/example/zest-eval"), true);
  assert.equal(matches("/demo/example/*eval", "/demo/example/zest"), false);
});

test("legacy include keeps sub-chunk cases (/*b ⊇ /*ab) and is incomplete like the modern one", () => {
  assert.equal(includes(expr("/*b"), expr("/*ab")), true);
  assert.equal(includes(expr("/*/**"), expr("/**/a")), false);
});

test("keyExprToPath shows a KE the legacy way", () => {
  assert.equal(keyExprToPath("a/b"), "/a/b");
  assert.equal(keyExprToPath("demo/example/$*eval"), "/demo/example/*eval");
  assert.equal(keyExprToPath("a$*b$*c/**"), "/a*b*c/**");
  assert.equal(keyExprToPath("@/router/x"), "/@/router/x");
  for (const [path, ke] of CONVERSIONS) {
    assert.equal(expr(keyExprToPath(ke)), ke, `round trip of ${path}`);
  }
});
