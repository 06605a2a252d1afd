/**
 * Property tests against the naive reference model in reference.ts, over every KE of one to
 * three chunks drawn from a tiny alphabet and every concrete key of up to four chunks.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { canonize, checkKeyExpr, includes, intersects } from "../../src/keyexpr/index.js";
import { matchesKey, universe } from "./reference.js";

/** Chunks KEs are built from (before canonization, so `$*` and `$*` runs appear too). */
const KE_CHUNKS = ["a", "b", "ab", "*", "**", "a$*", "$*b", "@x", "$*"];
/** Chunks keys are built from: enough to witness every intersection of KE_CHUNKS. */
const KEY_CHUNKS = ["a", "b", "ab", "ba", "c", "@x"];

const KEYS = universe(KEY_CHUNKS, 4);
const RAW = universe(KE_CHUNKS, 3);

interface Entry {
  readonly ke: string;
  readonly bits: Uint32Array;
  /** Chunks that are not `**`: bounds the length of a shortest common key. */
  readonly fixed: number;
  readonly hasDouble: boolean;
}

function bitsOf(ke: string): Uint32Array {
  const bits = new Uint32Array(Math.ceil(KEYS.length / 32));
  KEYS.forEach((key, k) => {
    if (matchesKey(ke, key)) bits[k >>> 5]! |= 1 << (k & 31);
  });
  return bits;
}

function overlap(x: Uint32Array, y: Uint32Array): boolean {
  for (let w = 0; w < x.length; w++) if ((x[w]! & y[w]!) !== 0) return true;
  return false;
}

function subset(small: Uint32Array, big: Uint32Array): boolean {
  for (let w = 0; w < small.length; w++) if ((small[w]! & ~big[w]!) !== 0) return false;
  return true;
}

const byKe = new Map<string, Entry>();
for (const raw of RAW) {
  const ke = canonize(raw);
  if (byKe.has(ke)) continue;
  const chunks = ke.split("/");
  byKe.set(ke, {
    ke,
    bits: bitsOf(ke),
    fixed: chunks.filter((c) => c !== "**").length,
    hasDouble: chunks.includes("**"),
  });
}
const POOL = [...byKe.values()];

test("canonize keeps the set of keys a KE denotes", () => {
  for (const raw of RAW) {
    const ke = canonize(raw);
    assert.equal(checkKeyExpr(ke), null, ke);
    const want = byKe.get(ke)!.bits;
    assert.deepEqual(bitsOf(raw), want, `${raw} → ${ke}`);
  }
});

test("distinct canonical KEs denote distinct sets (within the test universe)", () => {
  // Canonical forms are unique; a collision here would mean canonize misses a rewrite.
  // Pairs that differ only beyond depth 4 may collide, so only compare short KEs.
  const seen = new Map<string, string>();
  for (const e of POOL) {
    if (e.hasDouble) continue;
    const sig = Array.from(e.bits).join(",");
    const other = seen.get(sig);
    assert.equal(other, undefined, `${e.ke} and ${other ?? ""} denote the same keys`);
    seen.set(sig, e.ke);
  }
});

test("intersects agrees with the reference on concrete keys", () => {
  for (const e of POOL) {
    KEYS.forEach((key, k) => {
      const want = (e.bits[k >>> 5]! & (1 << (k & 31))) !== 0;
      assert.equal(intersects(e.ke, key), want, `${e.ke} ∩ ${key}`);
      assert.equal(intersects(key, e.ke), want, `${key} ∩ ${e.ke}`);
    });
  }
});

test("includes agrees with the reference when the right side is a concrete key", () => {
  for (const e of POOL) {
    KEYS.forEach((key, k) => {
      const want = (e.bits[k >>> 5]! & (1 << (k & 31))) !== 0;
      assert.equal(includes(e.ke, key), want, `${e.ke} ⊇ ${key}`);
    });
  }
});

test("intersects is sound, complete and symmetric over all pairs", () => {
  let checked = 0;
  for (const a of POOL) {
    for (const b of POOL) {
      const got = intersects(a.ke, b.ke);
      assert.equal(intersects(b.ke, a.ke), got, `symmetry ${a.ke} ${b.ke}`);
      const common = overlap(a.bits, b.bits);
      // sound: a common key means they intersect
      if (common) assert.equal(got, true, `${a.ke} ∩ ${b.ke} share a key`);
      // complete: a shortest common key has at most a.fixed + b.fixed chunks; when that fits
      // the universe, "intersects" must be witnessed by one
      if (got && a.fixed + b.fixed <= 4) assert.equal(common, true, `${a.ke} ∩ ${b.ke} has no common key`);
      checked++;
    }
  }
  assert.ok(checked > 100_000);
});

test("includes is sound over all pairs, implies intersects, and is exact without a right **", () => {
  for (const a of POOL) {
    for (const b of POOL) {
      const got = includes(a.ke, b.ke);
      if (got) {
        assert.equal(subset(b.bits, a.bits), true, `${a.ke} ⊇ ${b.ke} claimed, but a key of the right is missing`);
        assert.equal(intersects(a.ke, b.ke), true, `${a.ke} ⊇ ${b.ke} but disjoint`);
      } else if (!b.hasDouble) {
        // Without a right `**` every key of b is in the universe, and the includer is complete
        // (its documented incompleteness needs a right `**`).
        assert.equal(subset(b.bits, a.bits), false, `${a.ke} ⊇ ${b.ke} holds but includes said false`);
      }
    }
  }
});
