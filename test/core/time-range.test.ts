import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { inTimeRange, parseDuration, parseInstant, parseTimeRange } from "../../src/core/time-range.js";

const NOW = 1_700_000_000_000_000_000n; // a fixed "now" in Unix nanoseconds
const S = 1_000_000_000n;

describe("_time syntax (the Selectors RFC, plus InfluxDB's now()-1m)", () => {
  test("durations in every unit", () => {
    assert.equal(parseDuration("1h"), 3600n * S);
    assert.equal(parseDuration("-30m"), -1800n * S);
    assert.equal(parseDuration("1.5s"), 1_500_000_000n);
    assert.equal(parseDuration("2d"), 172_800n * S);
    assert.equal(parseDuration("1w"), 604_800n * S);
    assert.equal(parseDuration("250ms"), 250_000_000n);
    assert.equal(parseDuration("3u"), 3000n);
    assert.throws(
      () => parseDuration("1 fortnight"),
      (e: Error & { kind?: string }) => e.kind === "bad_input",
    );
  });

  test("instants: RFC 3339, now(), now(-1h), now()-1m", () => {
    assert.equal(parseInstant("now()", NOW), NOW);
    assert.equal(parseInstant("now(-1h)", NOW), NOW - 3600n * S);
    assert.equal(parseInstant("now()-1m", NOW), NOW - 60n * S);
    assert.equal(parseInstant("now() + 10s", NOW), NOW + 10n * S);
    assert.equal(parseInstant("2023-11-14T22:13:20Z"), 1_700_000_000n * S);
    assert.equal(parseInstant("2023-11-14T22:13:20.000000123Z"), 1_700_000_000n * S + 123n);
    assert.equal(parseInstant("2023-11-15T00:13:20+02:00"), 1_700_000_000n * S);
    for (const bad of ["yesterday", "now(", "now()*2", "2023-13-01T00:00:00Z", "1700000000"]) {
      assert.throws(
        () => parseInstant(bad, NOW),
        (e: Error & { kind?: string }) => e.kind === "bad_input",
        bad,
      );
    }
  });

  test("ranges: [a..b], open ends, [a;duration], exclusive brackets", () => {
    const r = parseTimeRange("[now(-1h)..now()]", NOW);
    assert.deepEqual(r, { start: { ns: NOW - 3600n * S, inclusive: true }, end: { ns: NOW, inclusive: true } });
    assert.deepEqual(parseTimeRange("[..]", NOW), {});
    assert.deepEqual(parseTimeRange("[now(-5m)..]", NOW), { start: { ns: NOW - 300n * S, inclusive: true } });
    assert.deepEqual(parseTimeRange("[now(-1h);30m]", NOW), {
      start: { ns: NOW - 3600n * S, inclusive: true },
      end: { ns: NOW - 1800n * S, inclusive: true },
    });
    const ex = parseTimeRange("]now(-1h)..now()[", NOW);
    assert.equal(inTimeRange(ex, NOW - 3600n * S), false);
    assert.equal(inTimeRange(ex, NOW - 1n), true);
    assert.equal(inTimeRange(ex, NOW), false);
    assert.equal(inTimeRange(r, NOW), true);
    assert.equal(inTimeRange(r, NOW + 1n), false);
    assert.throws(
      () => parseTimeRange("[now()]", NOW),
      (e: Error & { kind?: string }) => e.kind === "bad_input",
    );
  });

  test("a + that form decoding turned into a space is read back in offsets and now() shifts", () => {
    assert.equal(parseInstant("2023-11-15T00:13:20 02:00"), 1_700_000_000n * S);
    assert.equal(parseInstant("2023-11-15T00:13:20.5 02:00"), 1_700_000_000n * S + 500_000_000n);
    assert.equal(parseInstant("2023-11-14 22:13:20Z"), 1_700_000_000n * S, "a space between date and time stays");
    assert.equal(parseInstant("now() 10s", NOW), NOW + 10n * S);
    assert.deepEqual(parseTimeRange("[2023-11-15T00:13:20 02:00..now() 1h]", NOW), {
      start: { ns: 1_700_000_000n * S, inclusive: true },
      end: { ns: NOW + 3600n * S, inclusive: true },
    });
  });

  test("a bare instant means exactly that time", () => {
    const r = parseTimeRange("now(-1m)", NOW);
    assert.equal(inTimeRange(r, NOW - 60n * S), true);
    assert.equal(inTimeRange(r, NOW - 60n * S + 1n), false);
  });
});
