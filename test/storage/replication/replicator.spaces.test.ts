/** The key spaces where replicas meet (docs/replication.md, "Overlapping storages"). */
import assert from "node:assert/strict";
import { test } from "node:test";
import { pairSpace, replicaSpace } from "../../../src/storage/replication/replicator.js";

test("a pair's space is the same from either side, apart from every key expression's own, and differs per pair", () => {
  const space = pairSpace("a/*/c", "a/b/*");
  assert.equal(space, pairSpace("a/b/*", "a/*/c"));
  assert.match(space, /^@repl\/pair\/[0-9a-f]{16}$/);
  assert.match(replicaSpace("a/*/c"), /^@repl\/[0-9a-f]{16}$/);
  // A key expression spelling the pair's JSON gets a space of its own.
  assert.notEqual(space, replicaSpace('["a/*/c","a/b/*"]'));
  const others = [pairSpace("x/**/y", "x/a/**"), pairSpace("a/*/c", "a/b/**"), pairSpace("a/*/c/**", "a/b/*")];
  assert.equal(new Set([space, ...others]).size, 4);
});
