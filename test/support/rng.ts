/**
 * The one seeded generator of the tests (mulberry32), so that a failure replays: `rng` gives
 * 32-bit unsigned integers, `rngUnit` the same sequence as fractions in [0, 1).
 */
export function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return (t ^ (t >>> 14)) >>> 0;
  };
}

/** `rng`'s sequence as fractions in [0, 1), for picks and probabilities. */
export function rngUnit(seed: number): () => number {
  const next = rng(seed);
  return () => next() / 0x1_0000_0000;
}
