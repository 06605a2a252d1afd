import assert from "node:assert/strict";
import { test } from "node:test";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { Buffer } from "node:buffer";
import { ExpiryHeap } from "../../src/core/expiry-heap.js";
import { HLC, type Timestamp } from "../../src/core/timestamp.js";
import { MemoryBackend } from "../../src/storage/volumes/memory.js";
import { rngUnit } from "../support/rng.js";

const hlc = new HLC("01");
const filler = "v".repeat(100);

function held(): number {
  const m = process.memoryUsage();
  return m.heapUsed + m.arrayBuffers;
}

/** Bytes per key that `n` keys like `bench/ttl/123456` hold in a memory storage, with deadlines or not. */
function bytesPerKey(gc: () => void, n: number, withTtl: boolean): number {
  gc();
  gc();
  const before = held();
  const backend = new MemoryBackend("m", 1 << 30);
  const deadline = Date.now() + 3_600_000;
  for (let i = 0; i < n; i++) {
    const id = String(i);
    backend.put({
      key: `bench/ttl/${id}`,
      payload: Buffer.from(id + filler.slice(id.length)),
      encoding: "text/plain",
      timestamp: hlc.newTimestamp(),
      deadline: withTtl ? deadline + i : undefined,
    });
  }
  gc();
  gc();
  const perKey = (held() - before) / n;
  assert.equal(backend.size, n); // keeps the backend alive through the measure
  return perKey;
}

test("a TTL costs at most 24 bytes per key on the memory volume (deadline, heap place, key tail)", () => {
  setFlagsFromString("--expose-gc");
  const gc = runInNewContext("gc") as () => void;
  const n = 200_000;
  const plain = bytesPerKey(gc, n, false);
  const ttl = bytesPerKey(gc, n, true);
  assert.ok(
    ttl - plain <= 24,
    `${(ttl - plain).toFixed(1)} B per TTL (${ttl.toFixed(1)} with, ${plain.toFixed(1)} without)`,
  );
});

function due(backend: MemoryBackend, now: number): Array<[string, Timestamp]> {
  const out: Array<[string, Timestamp]> = [];
  backend.expiry.takeDue(now, 1_000_000, (key, ts) => out.push([key, ts]));
  return out;
}

test("a memory storage names each expired key from its record: whole keys, shared prefixes, any characters", () => {
  const backend = new MemoryBackend("m", 1 << 30);
  const keys = [
    "solo",
    "a/b",
    "a/c",
    "a/d",
    "deep/one/leaf",
    "caf\u00e9/\u{1F600}/x",
    "caf\u00e9/\u{1F600}/y",
    `long/${"z".repeat(300)}`,
  ];
  for (let i = 0; i < 300; i++) keys.push(`many/prefix/${i}`);
  const base = Date.now() + 60_000;
  for (const [i, key] of keys.entries())
    backend.put({
      key,
      payload: Buffer.from(`value ${i}`),
      encoding: "text/plain",
      timestamp: hlc.newTimestamp(),
      deadline: base + i,
    });
  // Values are still whole (the key tail is not part of the payload).
  assert.equal(backend.peek("a/c")?.payload.toString(), "value 2");
  assert.equal(backend.peek("a/c")?.deadline, base + 2);
  assert.deepEqual(due(backend, base - 1), []);
  const got = due(backend, base + keys.length);
  assert.deepEqual(
    got.map(([k]) => k),
    keys,
  );
});

test("a key's tail follows its record through overwrites, permanence and compaction", () => {
  const backend = new MemoryBackend("m", 1 << 30);
  const base = Date.now() + 60_000;
  const put = (key: string, value: string, deadline?: number) =>
    backend.put({ key, payload: Buffer.from(value), encoding: "text/plain", timestamp: hlc.newTimestamp(), deadline });
  // Many overwrites make dead bytes, and compaction moves the live records.
  for (let round = 0; round < 50; round++)
    for (let i = 0; i < 200; i++) put(`c/${i}`, "x".repeat(200 + round), base + i);
  put("c/0", "permanent now");
  assert.ok(backend.deadBytes < 200 * 260, `${backend.deadBytes} dead bytes`);
  const got = due(backend, base + 1000);
  assert.equal(got.length, 199);
  assert.deepEqual(
    got.map(([k]) => k),
    Array.from({ length: 199 }, (_, i) => `c/${i + 1}`),
  );
  assert.equal(backend.peek("c/5")?.payload.length, 249);
});

test("keys written again and again under alternating prefixes keep naming their keys when they expire", () => {
  const backend = new MemoryBackend("m", 1 << 30);
  const base = Date.now() + 60_000;
  const put = (key: string, deadline?: number) =>
    backend.put({ key, payload: Buffer.from(key), encoding: "text/plain", timestamp: hlc.newTimestamp(), deadline });
  // The same key again (its prefix taken before the old record gives it back), prefixes that
  // alternate, one that starts like another, a deeper one, and keys made permanent between.
  const keys = ["p/1", "q/1", "pp/1", "p/x/1", "p/\u00e9", "q/2"];
  for (let round = 0; round < 20; round++)
    for (const [i, key] of keys.entries()) {
      put(key, base + i);
      put(key, base + i);
      if (round % 3 === 0) put("p/2");
      else put("p/2", base + keys.length);
    }
  put("q/1");
  const got = due(backend, base + 100);
  assert.deepEqual(
    got.map(([k]) => k),
    ["p/1", "pp/1", "p/x/1", "p/\u00e9", "q/2", "p/2"],
  );
});

test("an expired value stays hidden after its expiry is taken, until its delete lands", () => {
  const backend = new MemoryBackend("m", 1 << 30);
  const deadline = Date.now() + 5;
  backend.put({
    key: "k/1",
    payload: Buffer.from("v"),
    encoding: "text/plain",
    timestamp: hlc.newTimestamp(),
    deadline,
  });
  assert.equal(due(backend, deadline).length, 1);
  const held = backend.peek("k/1");
  assert.equal(held?.payload.toString(), "v");
  assert.ok(held?.deadline !== undefined && held.deadline <= deadline, `${held?.deadline}`);
});

/** Deadlines held in range whatever the base (it starts 4.6 h behind the clock, and reaches 49.7 days). */
const RANGE = 45 * 24 * 3600 * 1000;

test("the expiry heap orders deadlines a year apart; those beyond its range wait, exact, after the others", () => {
  const r = rngUnit(99);
  const heap = new ExpiryHeap();
  const ref = new Map<number, number>();
  const now = Date.now();
  const year = 365 * 24 * 3600 * 1000;
  for (let i = 0; i < 20_000; i++) {
    const id = Math.floor(r() * 400);
    const op = r();
    if (op < 0.6) {
      // Now to a year ahead, and now and then one in the last hour (a write replicated late).
      const d = op < 0.05 ? now - Math.floor(r() * 3.6e6) : now + Math.floor(r() * r() * year);
      heap.set(id, d);
      ref.set(id, d);
    } else if (op < 0.75) {
      heap.remove(id);
      ref.delete(id);
    } else if (heap.size > 0) {
      const min = Math.min(...ref.values());
      if (min <= now + RANGE) {
        assert.equal(heap.peekDeadline(), min);
        const top = heap.peek();
        assert.equal(ref.get(top), min);
        heap.remove(top);
        ref.delete(top);
      } else {
        // Only deadlines beyond the range: none is due before the range's end, still ahead.
        const bound = heap.peekDeadline()!;
        assert.ok(bound > now + RANGE && bound <= min, `${bound} for ${min}`);
      }
    }
    for (const [id, d] of ref) if (r() < 0.01) assert.equal(heap.deadline(id), d);
  }
  let last = Number.NEGATIVE_INFINITY;
  while (heap.size > 0 && heap.peekDeadline()! <= now + RANGE) {
    const d = heap.peekDeadline()!;
    assert.ok(d >= last);
    last = d;
    heap.remove(heap.peek());
  }
  for (const [id, d] of ref) if (d > now + RANGE) assert.equal(heap.deadline(id), d);
});

test("the expiry heap keeps a deadline long past as due at once, and one far ahead exactly", () => {
  const heap = new ExpiryHeap();
  const now = Date.now();
  heap.set(1, now + 60_000);
  heap.set(2, now - 30 * 24 * 3600 * 1000);
  heap.set(3, now + 300 * 24 * 3600 * 1000);
  assert.equal(heap.peek(), 2);
  assert.ok(heap.deadline(2) < now - 3_600_000);
  assert.equal(heap.deadline(3), now + 300 * 24 * 3600 * 1000);
  heap.remove(2);
  heap.remove(1);
  // Only the far one left: nothing is due before the range's end, which is still ahead.
  assert.ok(heap.peekDeadline()! > now + 40 * 24 * 3600 * 1000);
  assert.equal(heap.deadline(3), now + 300 * 24 * 3600 * 1000);
});

test("the expiry heap rounds a fractional deadline up, so it never fires early", () => {
  const heap = new ExpiryHeap();
  heap.set(3, 1_000_000.2);
  assert.equal(heap.deadline(3), 1_000_001);
});

test("a TTL longer than a Node timer's reach (24.8 days) arms no overflowing timer", async () => {
  const { startZest } = await import("../../src/runtime.js");
  const { defaultStartOptions } = await import("../../src/defaults.js");
  const { silentLogger } = await import("../../src/core/log.js");
  const warnings: string[] = [];
  const onWarning = (w: Error): void => {
    warnings.push(`${w.name}: ${w.message}`);
  };
  process.on("warning", onWarning);
  const z = await startZest(
    { plugins: { rest: { http_port: "none" } } },
    { ...defaultStartOptions(), logger: silentLogger },
  );
  try {
    await z.session.put("far/a", "v", { ttl: 30 * 24 * 3600 * 1000 });
    await z.session.put("far/b", "v", { ttl: 365 * 24 * 3600 * 1000 });
    await new Promise((r) => setTimeout(r, 100));
    assert.deepEqual(
      warnings.filter((w) => w.startsWith("TimeoutOverflowWarning")),
      [],
    );
    const [reply] = await z.session.get("far/a");
    assert.equal(reply?.kind, "ok");
  } finally {
    process.off("warning", onWarning);
    await z.close();
  }
});
