/**
 * The benchmarks' paired ratio (bench/lib/load.ts): the median of per-round ratios, so one round
 * slowed by the host does not decide a comparison; totals when there are too few rounds.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { combine, type LoadFigures, pairedRatio, roundsNote } from "../../bench/lib/load.js";

function run(reqPerSec: number): LoadFigures {
  return {
    reqPerSec,
    p50Ms: 1,
    p99Ms: 2,
    requests: reqPerSec * 2,
    seconds: 2,
    errors: 0,
    non2xx: 0,
    serverCpuPct: 90,
    serverUserUsPerReq: 20,
    serverSysUsPerReq: 10,
    loadgenCpuPct: 90,
    otherCpuPct: 0,
    stealPct: 0,
  };
}

test("the median of the per-round ratios: one slowed round does not move it", () => {
  // Round 2 caught the subject in a slow phase: its total ratio falls, the median does not.
  const a = combine([1000, 400, 1000, 1000, 1000].map(run));
  const b = combine([1250, 1250, 1250, 1250, 1250].map(run));
  assert.equal(pairedRatio(a, b), 0.8);
  assert.ok(a.reqPerSec / b.reqPerSec < 0.71);
  assert.equal(roundsNote(a, b), "median of 5 back-to-back rounds, 0.32-0.80x");
});

test("an even number of rounds takes the mean of the middle two", () => {
  const a = combine([900, 1000, 800, 1100].map(run));
  const b = combine([1000, 1000, 1000, 1000].map(run));
  assert.equal(pairedRatio(a, b), 0.95);
});

test("fewer than three rounds, or rounds that do not pair up, fall back to the totals", () => {
  const a2 = combine([1000, 500].map(run));
  const b2 = combine([1000, 1000].map(run));
  assert.equal(pairedRatio(a2, b2), 0.75);
  assert.equal(roundsNote(a2, b2), "totals");
  const a3 = combine([1000, 1000, 1000].map(run));
  assert.equal(pairedRatio(a3, b2), 1);
  assert.equal(pairedRatio(run(300), run(600)), 0.5);
});
