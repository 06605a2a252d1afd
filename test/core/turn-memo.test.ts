import assert from "node:assert/strict";
import { test } from "node:test";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { TurnMemo } from "../../src/core/turn-memo.js";

setFlagsFromString("--expose-gc");
const gc = runInNewContext("gc") as () => void;

test("a turn memo answers for every key set in this task, nested ones included, and forgets them at its end", async () => {
  const memo = new TurnMemo<object, string>();
  const a = {};
  const b = {};
  const c = {};
  memo.set(a, "a");
  assert.equal(memo.get(a), "a");
  // A delivery nested in another: b and c come while a's is still going on.
  memo.set(b, "b");
  memo.set(c, "c");
  assert.equal(memo.get(a), "a");
  assert.equal(memo.get(b), "b");
  assert.equal(memo.get(c), "c");
  assert.equal(memo.get({}), undefined);
  await Promise.resolve();
  assert.equal(memo.get(a), undefined);
  assert.equal(memo.get(c), undefined);
  memo.set(a, "again");
  assert.equal(memo.get(a), "again");
});

test("a turn memo does not keep a value alive past its task while the key lives on", async () => {
  const memo = new TurnMemo<object, object>();
  const key = {};
  let ref: WeakRef<object> | undefined;
  (() => {
    const value = {};
    ref = new WeakRef(value);
    memo.set(key, value);
  })();
  await new Promise((r) => setImmediate(r));
  gc();
  assert.equal(ref!.deref(), undefined, "the value was collected");
  assert.equal(memo.get(key), undefined);
});
