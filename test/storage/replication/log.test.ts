import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { Timestamp, unixNanosToNtp64 } from "../../../src/core/timestamp.js";
import {
  DEFAULT_REPLICATION,
  parseReplication,
  type ReplicationSettings,
} from "../../../src/storage/replication/config.js";
import { ReplicationLog } from "../../../src/storage/replication/log.js";

/** 1 s intervals of 4 sub-intervals; 2 hot and 3 warm intervals. */
const S: ReplicationSettings = {
  intervalMs: 1_000,
  subIntervals: 4,
  hot: 2,
  warm: 3,
  propagationDelayMs: 100,
  tombstoneRetentionMs: 60_000,
};
/** A manual "now", far from zero, at the start of an interval. */
const T0 = 1_800_000_000_000;

function ts(ms: number, id = "AA"): Timestamp {
  return new Timestamp(unixNanosToNtp64(BigInt(ms) * 1_000_000n), id);
}

describe("replication log", () => {
  test("two logs holding the same events in any order have the same digest", () => {
    const a = new ReplicationLog(S);
    const b = new ReplicationLog(S);
    a.record("k/1", ts(T0 + 10), false);
    a.record("k/2", ts(T0 + 300), false);
    a.record("k/1", ts(T0 + 600), true);
    b.record("k/1", ts(T0 + 600), true);
    b.record("k/2", ts(T0 + 300), false);
    b.record("k/1", ts(T0 + 10), false); // older than what b holds: refused
    assert.deepEqual(a.digest(T0 + 5_000), b.digest(T0 + 5_000));
    assert.equal(a.fingerprint, b.fingerprint);
    b.record("k/3", ts(T0), false);
    assert.notEqual(a.fingerprint, b.fingerprint);
    assert.equal(a.size, 2);
    assert.equal(a.tombstoneCount, 1);
  });

  test("an older event for a key changes nothing and says so", () => {
    const a = new ReplicationLog(S);
    assert.equal(a.record("k", ts(T0 + 500), false), true);
    assert.equal(a.record("k", ts(T0 + 400), true), false);
    assert.equal(a.record("k", ts(T0 + 500), true), false);
    assert.equal(a.lookup("k")?.deleted, false);
  });

  test("a difference in the hot era is reported as its sub-interval", () => {
    const a = new ReplicationLog(S);
    const b = new ReplicationLog(S);
    a.record("k/1", ts(T0 + 250), false);
    b.record("k/1", ts(T0 + 250), false);
    a.record("k/2", ts(T0 + 760), false); // interval T0/1000, sub 3
    const diff = b.compare(a.digest(T0 + 1_500), T0 + 1_500);
    assert.equal(diff.cold, false);
    assert.deepEqual(diff.warmIntervals, []);
    assert.deepEqual(diff.hotSubs, [{ interval: T0 / 1_000, sub: 3 }]);
    assert.deepEqual(
      a.eventsIn(T0 / 1_000, 3).map((e) => e.key),
      ["k/2"],
    );
  });

  test("a sub-interval that began within the propagation delay is not compared yet", () => {
    const a = new ReplicationLog(S);
    const b = new ReplicationLog(S);
    a.record("k", ts(T0 + 760), false); // sub-interval [750, 1000)
    assert.deepEqual(b.compare(a.digest(T0 + 840), T0 + 840).hotSubs, []);
    assert.equal(b.compare(a.digest(T0 + 860), T0 + 860).hotSubs.length, 1);
  });

  test("a start-up comparison (recent) takes the sub-intervals within the propagation delay, and those ahead of the clock", () => {
    const a = new ReplicationLog(S);
    const b = new ReplicationLog(S);
    a.record("k", ts(T0 + 760), false); // sub-interval [750, 1000): began 10 ms before T0 + 770
    a.record("ahead", ts(T0 + 1_010), false); // the next interval: a clock a little ahead of ours
    const digest = a.digest(T0 + 770);
    assert.deepEqual(b.compare(digest, T0 + 770).hotSubs, []);
    assert.deepEqual(b.compare(digest, T0 + 770, { recent: true }).hotSubs, [
      { interval: T0 / 1_000, sub: 3 },
      { interval: T0 / 1_000 + 1, sub: 0 },
    ]);
  });

  test("as time passes an event moves from the hot era to the warm era, then to the cold one", () => {
    const a = new ReplicationLog(S);
    const b = new ReplicationLog(S);
    a.record("k", ts(T0 + 100), false);
    const interval = T0 / 1_000;
    // Hot: the current interval and the one before.
    assert.equal(b.compare(a.digest(T0 + 1_500), T0 + 1_500).hotSubs.length, 1);
    // Warm: 2 to 4 intervals back.
    const warm = b.compare(a.digest(T0 + 2_500), T0 + 2_500);
    assert.deepEqual(warm.warmIntervals, [interval]);
    assert.equal(warm.hotSubs.length, 0);
    assert.equal(warm.cold, false);
    assert.equal(a.digest(T0 + 2_500).warmIntervals.length, 1);
    // Cold: 5 or more back; summarised as one fingerprint.
    const cold = b.compare(a.digest(T0 + 5_500), T0 + 5_500);
    assert.equal(cold.cold, true);
    assert.deepEqual(cold.warmIntervals, []);
    assert.deepEqual(
      a.intervalsBefore(a.digest(T0 + 5_500).current - S.hot - S.warm + 1).map((i) => i.interval),
      [interval],
    );
    assert.deepEqual(
      a.subsOf(interval).map((s) => s.sub),
      [0],
    );
  });

  test("the cold fingerprint follows writes into the cold era, and replacing an event there", () => {
    const a = new ReplicationLog(S);
    const b = new ReplicationLog(S);
    const now = T0 + 100_000;
    a.digest(now); // fold everything old into the cold era first
    b.digest(now);
    a.record("k", ts(T0 + 1), false);
    assert.equal(b.compare(a.digest(now), now).cold, true);
    b.record("k", ts(T0 + 1), false);
    assert.equal(b.compare(a.digest(now), now).cold, false);
    a.record("k", ts(T0 + 2), true);
    b.record("k", ts(T0 + 2), true);
    assert.deepEqual(a.digest(now).cold, b.digest(now).cold);
    assert.notDeepEqual(a.digest(now).cold, { hi: 0, lo: 0 });
  });

  test("a digest taken at another replica's slightly earlier interval compares equal", () => {
    const a = new ReplicationLog(S);
    const b = new ReplicationLog(S);
    for (let i = 0; i < 20; i++) {
      a.record(`k/${i}`, ts(T0 + i * 400), false);
      b.record(`k/${i}`, ts(T0 + i * 400), false);
    }
    b.digest(T0 + 30_000); // b's clock is ahead: its cold era already holds more intervals
    const diff = b.compare(a.digest(T0 + 29_000), T0 + 30_000);
    assert.deepEqual(diff, { cold: false, warmIntervals: [], hotSubs: [] });
  });

  test("purging forgets old tombstones only, and remembers the horizon", () => {
    const a = new ReplicationLog(S);
    a.record("gone", ts(T0), true);
    a.record("kept", ts(T0 + 10_000), true);
    a.record("value", ts(T0), false);
    assert.equal(a.purgeTombstones(T0 + 5_000), 1);
    assert.equal(a.lookup("gone"), undefined);
    assert.equal(a.lookup("kept")?.deleted, true);
    assert.equal(a.lookup("value")?.deleted, false);
    // The horizon is the newest tombstone forgotten, not the bound: nothing older than T0 was deleted here.
    assert.equal(a.purgedBeforeMs, T0 + 1);
    assert.equal(a.digest(T0 + 20_000).purgedBeforeMs, T0 + 1);
    // A purge that forgets nothing leaves the horizon where it was (a fresh log takes any old value).
    const fresh = new ReplicationLog(S);
    fresh.record("v", ts(T0), false);
    assert.equal(fresh.purgeTombstones(T0 + 50_000), 0);
    assert.equal(fresh.purgedBeforeMs, 0);
  });

  test("buckets brought up to date at each read equal buckets kept write by write, through overwrites, deletes and purges", () => {
    // `eager` is read after every write, so its buckets follow each one; `lazy` only at the end,
    // so many writes to one key wait in its pending list; `final` only ever holds the outcome.
    const eager = new ReplicationLog(S);
    const lazy = new ReplicationLog(S);
    let seed = 42;
    const random = (n: number): number => {
      seed = (Math.imul(seed, 1_103_515_245) + 12_345) >>> 0;
      return Math.floor((seed / 2 ** 32) * n); // the high bits: an LCG's low bits cycle short
    };
    let clock = T0;
    const now = T0 + 40_000;
    for (let round = 0; round < 5; round++) {
      for (let i = 0; i < 400; i++) {
        clock += 1 + random(50);
        const key = `k/${random(60)}`;
        const deleted = random(4) === 0;
        // Some writes come late (older than what the key holds) and are refused by both.
        const at = random(5) === 0 ? clock - 5_000 : clock;
        assert.equal(lazy.record(key, ts(at), deleted), eager.record(key, ts(at), deleted));
        eager.digest(now + round);
      }
      // A purge and a digest between rounds: the lazy log brings its buckets up to date first.
      assert.equal(lazy.purgeTombstones(clock - 2_000), eager.purgeTombstones(clock - 2_000));
      if (round % 2 === 1) lazy.digest(now + round);
    }
    assert.equal(lazy.size, eager.size);
    assert.equal(lazy.tombstoneCount, eager.tombstoneCount);
    assert.equal(lazy.fingerprint, eager.fingerprint);
    assert.deepEqual(lazy.digest(now + 10), eager.digest(now + 10));
    const final = new ReplicationLog(S);
    for (let k = 0; k < 60; k++) {
      const e = eager.lookup(`k/${k}`);
      if (e !== undefined) final.record(e.key, e.timestamp, e.deleted);
    }
    assert.equal(final.fingerprint, eager.fingerprint);
    assert.deepEqual(final.compare(lazy.digest(now + 10), now + 10), { cold: false, warmIntervals: [], hotSubs: [] });
    for (const h of eager.digest(now + 10).hotSubs)
      assert.deepEqual(
        lazy
          .eventsIn(h.interval, h.sub)
          .map((e) => `${e.key}@${e.timestamp.toString()}:${e.deleted}`)
          .sort(),
        eager
          .eventsIn(h.interval, h.sub)
          .map((e) => `${e.key}@${e.timestamp.toString()}:${e.deleted}`)
          .sort(),
      );
  });

  test("the digest of a quiet log lists only non-empty buckets", () => {
    const a = new ReplicationLog(DEFAULT_REPLICATION);
    for (let i = 0; i < 1_000; i++) a.record(`k/${i}`, ts(T0 - 3_600_000 + i), false);
    const d = a.digest(T0);
    assert.equal(d.hotSubs.length, 0);
    assert.equal(d.warmIntervals.length, 0);
    assert.notDeepEqual(d.cold, { hi: 0, lo: 0 });
  });
});

describe("replication config", () => {
  test("absent or true takes zenoh's defaults, false turns replication off", () => {
    assert.deepEqual(parseReplication(undefined, "s"), DEFAULT_REPLICATION);
    assert.deepEqual(parseReplication(true, "s"), DEFAULT_REPLICATION);
    assert.equal(parseReplication(false, "s"), undefined);
    assert.equal(parseReplication({ enabled: false }, "s"), undefined);
  });

  test("zenoh's names and units: interval in seconds, propagation_delay in milliseconds", () => {
    const s = parseReplication({ interval: 2, sub_intervals: 4, hot: 3, warm: 5, propagation_delay: 100 }, "s");
    assert.deepEqual(s, {
      ...DEFAULT_REPLICATION,
      intervalMs: 2_000,
      subIntervals: 4,
      hot: 3,
      warm: 5,
      propagationDelayMs: 100,
    });
  });

  test("malformed, out-of-range and unknown fields are refused naming the field", () => {
    assert.throws(() => parseReplication({ interval: "10" }, "s"), /replication.interval/);
    assert.throws(() => parseReplication({ hot: 0 }, "s"), /replication.hot/);
    assert.throws(() => parseReplication({ sub_intervals: 1.5 }, "s"), /replication.sub_intervals/);
    assert.throws(() => parseReplication({ warm: 1e9 }, "s"), /replication.warm/);
    assert.throws(() => parseReplication({ intervall: 1 }, "s"), /unknown field `intervall`/);
    assert.throws(() => parseReplication({ interval: 1, propagation_delay: 1_000 }, "s"), /propagation_delay/);
    assert.throws(() => parseReplication({ tombstone_retention: 10 }, "s"), /tombstone_retention/);
    assert.throws(() => parseReplication([], "s"), /must be true, false or an object/);
  });
});
