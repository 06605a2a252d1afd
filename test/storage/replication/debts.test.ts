/**
 * What a replica owes the others (src/storage/replication/debts.ts): one test per rule of
 * docs/replication.md, "Known to be behind". Each also runs the exchange schedule the debts
 * decide on a manual clock: while a replica owes one alive to repair from, it exchanges every
 * second rather than every interval.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { silentLogger } from "../../../src/core/log.js";
import { ManualClock } from "../../../src/fabric/clock.js";
import { Debts, RETRY_BEHIND_MS } from "../../../src/storage/replication/debts.js";

const A = "0A/s";
const B = "0B/s";
const INTERVAL_MS = 30_000;

/** The periodic exchanges `debts` schedules over `ms` on a manual clock. */
function exchangesIn(debts: Debts, ms: number, connected = true): number {
  const clock = new ManualClock();
  let n = 0;
  const next = (): void => {
    clock.setTimeout(
      () => {
        n++;
        next();
      },
      debts.nextExchangeIn(INTERVAL_MS, connected, 0.5),
    );
  };
  next();
  clock.advance(ms);
  return n;
}

test("no replica at all, or one alive owed nothing: not behind, one exchange per interval", () => {
  const debts = new Debts(silentLogger);
  assert.equal(debts.reason, undefined);
  assert.ok(debts.none);
  debts.appeared(A);
  assert.equal(debts.reason, undefined);
  assert.equal(debts.none, false);
  assert.equal(exchangesIn(debts, 10_000), 0);
  assert.equal(exchangesIn(debts, 2 * INTERVAL_MS), 2);
});

test("a digest showed a difference: owed until the pull with that digest completes, exchanging every second meanwhile", () => {
  const debts = new Debts(silentLogger);
  debts.appeared(A);
  const seq = debts.draw();
  debts.repairing(A, seq, false);
  assert.equal(debts.reason, `repairing from ${A}`);
  assert.equal(exchangesIn(debts, 10_000), 10_000 / RETRY_BEHIND_MS);
  debts.settle(A, seq);
  assert.equal(debts.reason, undefined);
  assert.equal(exchangesIn(debts, 10_000), 0);
});

test("a failed pull keeps the debt", () => {
  const debts = new Debts(silentLogger);
  debts.appeared(A);
  const seq = debts.draw();
  debts.repairing(A, seq, false);
  debts.failed(A, "timed out", seq, false, true);
  assert.equal(debts.reason, `repair from ${A} failed: timed out`);
  assert.ok(debts.owes(A));
  assert.equal(exchangesIn(debts, 5_000), 5);
});

test("a debt only a periodic digest showed ends when that replica vanishes while connected", () => {
  const debts = new Debts(silentLogger);
  debts.appeared(A);
  debts.repairing(A, debts.draw(), false);
  debts.vanished(A, true);
  assert.equal(debts.reason, undefined);
  // Its pull failing after it vanished changes nothing: what it held alone was never acknowledged.
  debts.failed(A, "no answer", debts.draw(), false, true);
  assert.equal(debts.reason, undefined);
  assert.equal(exchangesIn(debts, 2 * INTERVAL_MS), 2);
});

test("a debt from the start-up alignment stays when that replica vanishes, even connected", () => {
  const debts = new Debts(silentLogger);
  debts.appeared(A);
  debts.repairing(A, debts.draw(), true);
  debts.vanished(A, true);
  assert.ok(debts.owes(A));
  // A later periodic digest does not make it forgivable.
  debts.repairing(A, debts.draw(), false);
  debts.vanished(A, true);
  assert.ok(debts.owes(A));
  // Gone: no faster exchanges (it comes back with its liveliness token, which starts one).
  assert.equal(exchangesIn(debts, 2 * INTERVAL_MS), 2);
});

test("a partition: every replica alive at the cut is owed until an alignment with a digest drawn after it", () => {
  const debts = new Debts(silentLogger);
  debts.appeared(A);
  debts.appeared(B);
  const before = debts.draw();
  debts.cut();
  assert.equal(debts.reason, `cut off from the fabric while ${A} was alive; and 1 more`);
  // Cut off: no faster exchange, there is nobody to repair from.
  assert.equal(exchangesIn(debts, 10_000, false), 0);
  // A digest from before the cut says nothing of the writes made during it.
  debts.settle(A, before);
  assert.ok(debts.owes(A));
  debts.settle(A, debts.draw());
  debts.settle(B, debts.draw());
  assert.equal(debts.reason, undefined);
});

test("a partition debt stays when that replica vanishes after the heal", () => {
  const debts = new Debts(silentLogger);
  debts.appeared(A);
  debts.cut();
  debts.vanished(A, true);
  assert.ok(debts.owes(A));
});

test("a replica that vanishes while this router is cut off is owed", () => {
  const debts = new Debts(silentLogger);
  debts.appeared(A);
  debts.vanished(A, false);
  assert.equal(debts.reason, `cut off from the fabric while ${A} was alive`);
  // Back with its token: owed until an exchange after the heal completes.
  debts.appeared(A);
  assert.equal(exchangesIn(debts, 3_000), 3);
  debts.settle(A, debts.draw());
  assert.equal(debts.reason, undefined);
});

test("a replica that vanished while both were connected leaves nothing owed", () => {
  const debts = new Debts(silentLogger);
  debts.appeared(A);
  debts.vanished(A, true);
  assert.equal(debts.reason, undefined);
  assert.ok(debts.none);
});

test("a start-up alignment not done by the deadline is owed until it completes; one owed already keeps its reason", () => {
  const debts = new Debts(silentLogger);
  debts.appeared(A);
  debts.appeared(B);
  const since = debts.current;
  const startDigestA = debts.draw();
  const startDigestB = debts.draw();
  debts.repairing(B, startDigestB, true);
  debts.lateAtStart(A, since);
  debts.lateAtStart(B, since);
  assert.equal(debts.reason, `repairing from ${B}; and 1 more`);
  assert.equal(exchangesIn(debts, 4_000), 4);
  // The start-up alignment's own digest (drawn after `since`) settles it.
  debts.settle(A, startDigestA);
  assert.ok(!debts.owes(A));
  debts.settle(B, startDigestB);
  assert.equal(debts.reason, undefined);
});

test("a restarted replica owes nothing until its start-up exchange shows a difference", () => {
  const debts = new Debts(silentLogger);
  for (const id of [A, B]) debts.appeared(id);
  assert.equal(debts.reason, undefined);
  debts.repairing(A, debts.draw(), true);
  assert.equal(debts.reason, `repairing from ${A}`);
});
