/**
 * `encodingFromContentType` (src/core/encoding.ts): the encoding a write's Content-Type gives,
 * also when it remembers the last one (a client mostly sends the same Content-Type again).
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { Encoding, encodingFromContentType } from "../../src/core/encoding.js";

test("the essence of the Content-Type, lower-cased, for repeated and alternating types", () => {
  const cases: Array<[string | undefined, string]> = [
    ["text/plain", "text/plain"],
    ["text/plain", "text/plain"],
    ["Application/JSON; charset=utf-8", "application/json"],
    ["Application/JSON; charset=utf-8", "application/json"],
    ["text/plain", "text/plain"],
    [undefined, Encoding.APP_OCTET_STREAM],
    ["text/plain", "text/plain"],
    ["", Encoding.APP_OCTET_STREAM],
    ["", Encoding.APP_OCTET_STREAM],
    [" ; charset=utf-8", Encoding.APP_OCTET_STREAM],
    ["  TEXT/CSV  ", "text/csv"],
    ["text/plain", "text/plain"],
  ];
  for (const [contentType, expected] of cases)
    assert.equal(encodingFromContentType(contentType), expected, contentType);
});

test("an equal Content-Type built apart gives the same encoding", () => {
  const a = encodingFromContentType(["text", "x-a"].join("/"));
  const b = encodingFromContentType(["text", "x-a"].join("/"));
  assert.equal(a, "text/x-a");
  assert.equal(b, a);
  assert.equal(encodingFromContentType(["text", "x-b"].join("/")), "text/x-b");
});
