import assert from "node:assert/strict";
import { test } from "node:test";
import { sortInSlices } from "../../src/core/slices.js";
import { rngUnit } from "../support/rng.js";

test("sortInSlices sorts like Array.prototype.sort, stably, at every size", async () => {
  const next = rngUnit(11);
  for (const n of [0, 1, 5, 2048, 2049, 5000, 20_000]) {
    const items = Array.from({ length: n }, (_, i) => ({ k: Math.floor(next() * 300), i }));
    const want = [...items].sort((a, b) => a.k - b.k);
    const got = await sortInSlices(items, (a, b) => a.k - b.k);
    assert.equal(got, items);
    assert.deepEqual(got, want, `n = ${n}`);
  }
});

test("a large sort gives the event loop back while it runs", async () => {
  const items = Array.from({ length: 200_000 }, (_, i) => `k${(i * 7919) % 200_000}`);
  let ticks = 0;
  const timer = setInterval(() => ticks++, 0);
  const done = sortInSlices(items, (a, b) => (a < b ? -1 : a > b ? 1 : 0));
  await done;
  clearInterval(timer);
  // Each slice ends with a turn of the event loop; timers get to run between them.
  assert.ok(ticks > 0, "no timer ran during the sort");
});

test("input already in order is returned as it is, and one item out of place at the end is still sorted", async () => {
  const cmp = (a: { k: number }, b: { k: number }): number => a.k - b.k;
  const ordered = Array.from({ length: 5000 }, (_, i) => ({ k: i >> 1, i }));
  const copy = [...ordered];
  assert.equal(await sortInSlices(ordered, cmp), ordered);
  assert.deepEqual(ordered, copy);
  const late = [...copy, { k: -1, i: -1 }];
  const got = await sortInSlices(late, cmp);
  assert.deepEqual(got[0], { k: -1, i: -1 });
  assert.deepEqual(got.slice(1), copy);
});
