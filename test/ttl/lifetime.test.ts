/** Durations, deadlines, the zest: attachment, the expiry heap and leases (docs/ttl-and-leases.md). */
import assert from "node:assert/strict";
import { test } from "node:test";
import { ExpiryHeap } from "../../src/core/expiry-heap.js";
import { Leases } from "../../src/core/leases.js";
import {
  attachedLifetime,
  checkLeaseId,
  deadlineOf,
  expiryTimestamp,
  parseDuration,
  timestampMs,
} from "../../src/core/lifetime.js";
import { Parameters } from "../../src/core/selector.js";
import { Timestamp, unixNanosToNtp64 } from "../../src/core/timestamp.js";
import { type WriteLifetime, writeLifetime } from "../../src/rest/lifetime.js";
import { rngUnit } from "../support/rng.js";

test("durations are a whole number and a unit; anything else is a bad_input with a one-line reason", () => {
  assert.equal(parseDuration("500ms", "_ttl"), 500);
  assert.equal(parseDuration("30s", "_ttl"), 30_000);
  assert.equal(parseDuration("5m", "_ttl"), 300_000);
  assert.equal(parseDuration("2h", "_ttl"), 7_200_000);
  assert.equal(parseDuration("365d", "_ttl"), 365 * 86_400_000);
  for (const bad of ["", "10", "s", "1.5s", "1e3ms", " 1s", "1S", "0ms", "366d", "9999999999999h", "x".repeat(100)])
    assert.throws(
      () => parseDuration(bad, "_ttl"),
      (e: Error & { kind?: string }) => {
        return e.kind === "bad_input" && /^_ttl must be/.test(e.message) && !e.message.includes("\n");
      },
      bad,
    );
});

test("a write's query string gives the same lifetime read in one pass as read by the full parameter parser", () => {
  /** The reference: the query read into `Parameters`, as every write's was before. */
  const reference = (query: string): WriteLifetime | undefined => {
    const p = new Parameters(query);
    const ttl = p.get("_ttl");
    const lease = p.get("_lease");
    if (ttl === undefined && lease === undefined) return undefined;
    const out: { ttl?: number; lease?: string } = {};
    if (ttl !== undefined) out.ttl = parseDuration(ttl, "_ttl");
    if (lease !== undefined) out.lease = checkLeaseId(lease, "_lease");
    return out;
  };
  const outcome = (f: () => WriteLifetime | undefined): unknown => {
    try {
      return f();
    } catch (e) {
      return (e as Error).message;
    }
  };
  const queries = [
    "",
    "_ttl=1h",
    "a=b&_ttl=30s",
    "_ttl=1h&_ttl=2h",
    "_lease=l1;_ttl=5m",
    "_ttl=5m;_lease=l1&_lease=l2",
    "_ttlx=1h",
    "x_ttl=1h",
    "x=_ttl=1h",
    "_ttl",
    "_ttl&_ttl=1h",
    "_lease",
    "&&_ttl=2s&",
    ";;_ttl=2s;",
    "=1h&_ttl=3s",
    "_ttl==5s",
    "_ttl=1h=",
    "%5Fttl=1h",
    "_ttl=1%68",
    " _ttl=1h",
    "_ttl=1h ",
    "(_ttl=1h)",
    "_ttl=1h+",
    "_lease=a+b",
    "_time=[now(-1h)..]&_ttl=1s",
    "_ttl=\u00e91s",
    "_TTL=1h",
  ];
  for (const q of queries)
    assert.deepEqual(
      outcome(() => writeLifetime("PUT", q)),
      outcome(() => reference(q)),
      q,
    );
  // Random queries over the characters that matter.
  const next = rngUnit(27);
  const alphabet = ["_ttl", "_lease", "=", "&", ";", "1h", "30s", "l1", "x", "%", "+", " ", "(", ")", "["];
  for (let i = 0; i < 2000; i++) {
    let q = "";
    const n = 1 + Math.floor(next() * 8);
    for (let j = 0; j < n; j++) q += alphabet[Math.floor(next() * alphabet.length)];
    assert.deepEqual(
      outcome(() => writeLifetime("PUT", q)),
      outcome(() => reference(q)),
      q,
    );
  }
});

test("a deadline is absolute, from the write's timestamp; the expiry's delete is one tick after the write", () => {
  const ts = new Timestamp(unixNanosToNtp64(1_700_000_000_123_000_000n), "AB");
  assert.equal(timestampMs(ts), 1_700_000_000_123);
  assert.equal(deadlineOf(ts, 30_000), 1_700_000_030_123);
  const del = expiryTimestamp(ts);
  assert.equal(del.id, "AB");
  assert.ok(del.compare(ts) > 0);
  assert.ok(new Timestamp(ts.time + 2n, "00").compare(del) > 0, "any later write wins over the expiry");
});

test("lease ids are 1 to 128 of A-Z a-z 0-9 _ . -", () => {
  assert.equal(checkLeaseId("a-B_9.x"), "a-B_9.x");
  for (const bad of ["", "a b", "a/b", "__proto__/x", "é", "x".repeat(129)]) assert.throws(() => checkLeaseId(bad));
});

test("a zest: attachment asks a lifetime; any other attachment is user data", () => {
  assert.deepEqual(attachedLifetime(Buffer.from("zest:session")), { sessionBound: true });
  assert.deepEqual(attachedLifetime(Buffer.from("zest:ttl=30s;lease=l1")), { ttl: 30_000, lease: "l1" });
  assert.equal(attachedLifetime(Buffer.from("zesty")), undefined);
  assert.equal(attachedLifetime(undefined), undefined);
  for (const bad of [
    "zest:",
    "zest:ttl=forever",
    "zest:lease=a b",
    "zest:session;lease=x",
    "zest:what",
    `zest:${"x".repeat(300)}`,
  ])
    assert.throws(() => attachedLifetime(Buffer.from(bad)), /zest: attachment|ttl must be|lease must be/, bad);
});

test("the expiry heap hands out ids in deadline order through sets, moves and removals", () => {
  const r = rngUnit(27);
  const heap = new ExpiryHeap();
  const ref = new Map<number, number>();
  for (let i = 0; i < 20_000; i++) {
    const id = Math.floor(r() * 500);
    const op = r();
    if (op < 0.6) {
      const d = 1 + Math.floor(r() * 1e6);
      heap.set(id, d);
      ref.set(id, d);
    } else if (op < 0.8) {
      heap.remove(id);
      ref.delete(id);
    } else if (heap.size > 0) {
      const min = Math.min(...ref.values());
      assert.equal(heap.peekDeadline(), min);
      const top = heap.peek();
      assert.equal(ref.get(top), min);
      heap.remove(top);
      ref.delete(top);
    }
    assert.equal(heap.size, ref.size);
  }
  let last = 0;
  while (heap.size > 0) {
    const d = heap.peekDeadline()!;
    assert.ok(d >= last);
    last = d;
    heap.remove(heap.peek());
  }
  assert.ok(heap.bytes <= 600 * 16 + 64 * 16, `${heap.bytes} bytes for 500 ids`);
});

test("a lease ends once: its keys go to the expire callback together, a key written again elsewhere is detached", async () => {
  const ended: string[][] = [];
  const leases = new Leases((keys) => ended.push([...keys].sort()));
  assert.equal(leases.grant("l", 60_000), true);
  assert.equal(leases.grant("l", 60_000), false, "kept alive");
  leases.wrote("a", "l");
  leases.wrote("b", "l");
  leases.wrote("c", "l");
  leases.wrote("c", undefined);
  assert.deepEqual(leases.get("l")?.keys, ["a", "b"]);
  assert.throws(() => leases.wrote("d", "nope"), /no lease nope/);
  assert.equal(leases.revoke("l"), true);
  assert.equal(leases.revoke("l"), false);
  assert.deepEqual(ended, [["a", "b"]]);
  leases.grant("short", 50);
  leases.wrote("x", "short");
  await new Promise((r) => setTimeout(r, 200));
  assert.deepEqual(ended, [["a", "b"], ["x"]]);
  assert.equal(leases.size, 0);
  leases.close();
});
