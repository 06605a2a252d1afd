/**
 * Connection limits of a front door (src/access/connections.ts, docs/security.md): a cap per
 * client address and a total cap, places released once, and the defaults derived from the
 * descriptor limit. (The contract test of every door, doors/edge-contract.ts, checks the
 * per-address cap over real sockets.)
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { ConnectionGuard, connectionLimits, DEFAULT_PER_ADDRESS, perAddressCap } from "../../src/access/connections.js";

test("an address over its cap is refused and counted; a release frees exactly one place, once", () => {
  const g = new ConnectionGuard({ perAddress: 2, total: 10 });
  const a1 = g.admit("10.0.0.1");
  assert.ok(a1 !== undefined && g.admit("10.0.0.1") !== undefined);
  assert.equal(g.hasRoom("10.0.0.1"), false);
  assert.equal(g.admit("10.0.0.1"), undefined);
  assert.equal(g.refused, 1);
  assert.ok(g.admit("10.0.0.2"), "another address has its own cap");
  assert.equal(g.open, 3);
  a1();
  a1(); // a second release of the same place frees nothing more
  assert.equal(g.open, 2);
  assert.ok(g.admit("10.0.0.1"));
  assert.equal(g.admit("10.0.0.1"), undefined);
  assert.equal(g.refused, 2);
});

test("an IPv4 client seen as IPv4-mapped IPv6 counts against the same cap", () => {
  const g = new ConnectionGuard({ perAddress: 1, total: 10 });
  assert.ok(g.admit("127.0.0.1"));
  assert.equal(g.hasRoom("::ffff:127.0.0.1"), false);
  assert.equal(g.admit("::ffff:127.0.0.1"), undefined);
  assert.ok(g.admit("::1"), "a real IPv6 address is another client");
});

test("the total cap holds across addresses", () => {
  const g = new ConnectionGuard({ perAddress: 5, total: 3 });
  const releases = ["a", "b", "c"].map((addr) => g.admit(addr));
  assert.ok(releases.every((r) => r !== undefined));
  assert.equal(g.hasRoom("d"), false);
  assert.equal(g.admit("d"), undefined);
  releases[0]!();
  assert.ok(g.admit("d"));
});

test("defaults: the per-address cap is a quarter of the total, at least 1, at most DEFAULT_PER_ADDRESS", () => {
  assert.equal(perAddressCap(0), 1);
  assert.equal(perAddressCap(7), 1);
  assert.equal(perAddressCap(400), 100);
  assert.equal(perAddressCap(1_000_000), DEFAULT_PER_ADDRESS);
  assert.deepEqual(connectionLimits({ perAddress: 3, total: 9 }), { perAddress: 3, total: 9 });
  assert.deepEqual(connectionLimits({ total: 400 }), { perAddress: 100, total: 400 });
  const derived = connectionLimits({});
  assert.ok(derived.total >= 16, JSON.stringify(derived));
  assert.equal(derived.perAddress, perAddressCap(derived.total));
});
