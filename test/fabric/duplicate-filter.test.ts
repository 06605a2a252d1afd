/**
 * The fabric's duplicate filter (src/fabric/duplicate-filter.ts, docs/fabric-protocol.md): a
 * sample that reached a router twice, through two overlapping subscriptions, is dropped the
 * second time; a publisher's new epoch (it restarted) starts over.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { DuplicateFilter } from "../../src/fabric/duplicate-filter.js";

test("per publisher, a number not above the highest seen is a copy", () => {
  const f = new DuplicateFilter();
  assert.equal(f.accept({ zid: "A", epoch: 1, seq: 1 }), true);
  assert.equal(f.accept({ zid: "A", epoch: 1, seq: 1 }), false);
  assert.equal(f.accept({ zid: "A", epoch: 1, seq: 3 }), true);
  assert.equal(
    f.accept({ zid: "A", epoch: 1, seq: 2 }),
    false,
    "one publisher's samples arrive in order: a lower number is a copy",
  );
  assert.equal(f.accept({ zid: "B", epoch: 1, seq: 1 }), true, "another publisher numbers on its own");
  assert.equal(f.accept({ zid: "A", epoch: 1, seq: 4 }), true);
});

test("a new epoch starts over, even at lower numbers; a forgotten publisher too", () => {
  const f = new DuplicateFilter();
  assert.equal(f.accept({ zid: "A", epoch: 1, seq: 100 }), true);
  assert.equal(f.accept({ zid: "A", epoch: 2, seq: 1 }), true);
  assert.equal(f.accept({ zid: "A", epoch: 2, seq: 1 }), false);
  f.forget("A");
  assert.equal(f.accept({ zid: "A", epoch: 2, seq: 1 }), true);
});
