/**
 * Timestamp text: `ntp64ToRfc3339` (what every entry of a GET prints) is computed with double
 * arithmetic, a cached date part and tables for the time of day; it must spell exactly what the BigInt conversion spells.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { ntp64ToRfc3339, ntp64ToUnixNanos, unixNanosToRfc3339 } from "../../src/core/timestamp.js";

const slow = (t: bigint): string => unixNanosToRfc3339(ntp64ToUnixNanos(t));

test("ntp64ToRfc3339 spells what the BigInt conversion spells, at the edges of the fraction and across seconds", () => {
  const seconds = [0n, 1n, 59n, 1_700_000_000n, 1_795_633_727n, 4_102_444_799n, 0xffff_ffffn];
  const fractions = [0n, 1n, 2n, 0x7fff_ffffn, 0x8000_0000n, 0xffff_fffen, 0xffff_ffffn, 4_294_967n, 4_294_968n];
  for (const s of seconds)
    for (const f of fractions) {
      const t = (s << 32n) | f;
      assert.equal(ntp64ToRfc3339(t), slow(t), `secs ${s}, fraction ${f}`);
    }
  // A fraction of 2^23 * m is exactly m * 1,953,125 ns: the ones just below it floor to one
  // nanosecond less, which a double product of fraction and 1e9 rounds away.
  for (let m = 1n; m < 512n; m++)
    for (const f of [m * 8_388_608n - 1n, m * 8_388_608n]) {
      const t = (1_700_000_000n << 32n) | f;
      assert.equal(ntp64ToRfc3339(t), slow(t), `fraction ${f}`);
    }
});

test("ntp64ToRfc3339 agrees on 200,000 pseudo-random times, the second and the day changing or not between calls", () => {
  let x = 0x9e3779b9;
  const next = (): number => {
    // xorshift32: a fixed sequence, so a failure can be replayed.
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    return x >>> 0;
  };
  for (let i = 0; i < 200_000; i++) {
    // Calls stay in the same second, or the same day, or go anywhere in the 32-bit range, so the
    // cached date part is both used and refreshed.
    const secs =
      i % 3 === 0
        ? BigInt(1_700_000_000 + (next() % 100_000))
        : i % 3 === 1
          ? BigInt(1_700_000_000 + (i % 3))
          : BigInt(next());
    const t = (secs << 32n) | BigInt(next());
    assert.equal(ntp64ToRfc3339(t), slow(t));
  }
});

test("stamps of one turn share a clock reading yet stay unique and increasing; the next turn reads the clock again", async () => {
  const { HLC } = await import("../../src/core/timestamp.js");
  const clock = new HLC("0A");
  const turn = Array.from({ length: 3000 }, () => clock.newTimestampInTurn());
  for (let i = 1; i < turn.length; i++) assert.ok(turn[i]!.time > turn[i - 1]!.time, `stamp ${i} not after ${i - 1}`);
  // One reading serves at most 1,024 stamps, each one tick past the last.
  assert.equal(turn[1]!.time - turn[0]!.time, 1n);
  assert.equal(turn[1023]!.time - turn[0]!.time, 1023n);
  // Stamps of either kind interleave and stay ordered.
  const plain = clock.newTimestamp();
  assert.ok(plain.time > turn[turn.length - 1]!.time);
  assert.ok(clock.newTimestampInTurn().time > plain.time);
  // A later turn reads the clock: 5 ms later, its stamp is ahead by the time gone, not by one tick.
  const last = clock.newTimestampInTurn();
  await new Promise((r) => setTimeout(r, 5));
  const next = clock.newTimestampInTurn();
  assert.ok(next.unixNanos - last.unixNanos >= 4_000_000n, `${next.unixNanos - last.unixNanos} ns apart`);
});
