import assert from "node:assert/strict";
import { test } from "node:test";
import { KeyIndex } from "../../src/keyexpr/key-index.js";
import { rng } from "../support/rng.js";

test("a key index answers as a plain map through sets, reads, deletes and clears, past its map of recent keys and with keys too long for it", () => {
  const random = rng(0x1dec5);
  const index = new KeyIndex<number>();
  const model = new Map<string, number>();
  // 20,000 distinct keys (more than the 16,384 recent keys it remembers), some over 256 characters.
  const keyOf = (n: number): string => (n % 50 === 0 ? `long/${n}/${"x".repeat(300)}` : `a/${n % 97}/k${n}`);
  for (let op = 0; op < 200_000; op++) {
    const key = keyOf(random() % 20_000);
    const r = random() % 10;
    if (op % 50_000 === 49_999) {
      index.clear();
      model.clear();
    } else if (r < 4) {
      const v = random();
      index.set(key, v);
      model.set(key, v);
    } else if (r < 6) {
      assert.equal(index.delete(key).old, model.get(key), `delete ${key}`);
      model.delete(key);
    } else {
      assert.equal(index.get(key), model.get(key), `get ${key} at ${op}`);
    }
  }
  assert.equal(index.size, model.size);
});
