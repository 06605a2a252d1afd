import assert from "node:assert/strict";
import { before, describe, test } from "node:test";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import type { Volume } from "../../../src/storage/backend.js";
import { runStorageContract } from "../contract.js";
import { canonize, KeyIndex } from "../../../src/keyexpr/index.js";
import { HLC, Timestamp } from "../../../src/core/timestamp.js";
import { ZestError } from "../../../src/core/errors.js";
import {
  DEFAULT_MEMORY_QUOTA,
  INDEX_NODE_BYTES,
  MemoryBackend,
  memoryDriver,
} from "../../../src/storage/volumes/memory.js";
import { RECORD_HEADER_BYTES, type Records, SLOT_BYTES } from "../../../src/storage/volumes/memory-records.js";
import { silentLogger } from "../../../src/core/log.js";
import { rejectsWith } from "../../support/assert.js";
import { matchesKey, pick, universe } from "../../keyexpr/reference.js";
import { rngUnit } from "../../support/rng.js";

describe("memory volume: the storage contract", () => {
  let volume: Volume;
  before(async () => {
    volume = await memoryDriver.open("memory", {}, { logger: silentLogger });
  });
  runStorageContract({
    name: "memory",
    open: (name, options = {}) => volume.createStorage(name, "**", options),
    badOptions: [
      { options: { quota: -1 }, message: /quota/ },
      { options: { quota: "big" }, message: /quota/ },
    ],
  });
});

const hlc = new HLC("01");

function entry(key: string, value: string, encoding = "text/plain") {
  return { key, payload: Buffer.from(value), encoding, timestamp: hlc.newTimestamp() };
}

test("KeyIndex walks answer exactly the keys the reference model matches, in string order", () => {
  // `a.b` and `a-` sort before `a/...` as strings, after `a` as chunks.
  const keys = universe(["a", "b", "ab", "@x", "a.b", "a-"], 4);
  const index = new KeyIndex<number>();
  for (const [i, k] of keys.entries()) index.set(k, i);
  const next = rngUnit(7);
  const pieces = ["a", "b", "ab", "*", "**", "a$*", "$*b", "@x", "$*a$*", "a.b"];
  for (let t = 0; t < 600; t++) {
    const len = 1 + Math.floor(next() * 5);
    let ke: string;
    try {
      ke = canonize(Array.from({ length: len }, () => pick(next, pieces)).join("/"));
    } catch {
      continue;
    }
    const found: Array<[string, number]> = [];
    const walk = index.walk(ke);
    // Tiny slices, so resuming is exercised too.
    while (!walk.step((k, v) => found.push([k, v]), 0));
    const want = keys.filter((k) => matchesKey(ke, k)).sort();
    assert.deepEqual(
      found.map(([k]) => k),
      want,
      ke,
    );
    for (const [k, v] of found) assert.equal(keys[v], k);
  }
});

test("KeyIndex walks give keys in string order, kept current as keys come and go", () => {
  const index = new KeyIndex<number>();
  const walked = (ke: string): string[] => {
    const out: string[] = [];
    assert.ok(
      index.walk(ke).step((k, _v, inOrder) => {
        assert.ok(inOrder);
        out.push(k);
      }),
      "a walk without a time budget ends in one step",
    );
    return out;
  };
  const check = (ke: string, want: string[]): void => assert.deepEqual(walked(ke), want, ke);
  for (const [i, k] of ["b/2", "a/10", "a/9", "c", "a/1", "b/10/x", "b/1", "a.b/x", "a-c"].entries()) index.set(k, i);
  check("**", ["a-c", "a.b/x", "a/1", "a/10", "a/9", "b/1", "b/10/x", "b/2", "c"]);
  // The order a node remembers is dropped when what it lists changes: a child added or removed,
  // a prefix that becomes a key, a key that gets keys under it, a node that gets children again.
  index.set("a/0", 10);
  index.delete("b/2");
  index.set("0", 11);
  index.set("a", 12);
  index.set("c/d", 13);
  check("**", ["0", "a", "a-c", "a.b/x", "a/0", "a/1", "a/10", "a/9", "b/1", "b/10/x", "c", "c/d"]);
  check("a/*", ["a/0", "a/1", "a/10", "a/9"]);
  index.delete("c/d");
  index.delete("a");
  check("*", ["0", "a-c", "c"]);
  index.set("c/e", 14);
  check("c/**", ["c", "c/e"]);
  // Pruning an emptied prefix drops it from its parent's order too.
  index.delete("b/10/x");
  index.delete("b/1");
  check("*/*", ["a.b/x", "a/0", "a/1", "a/10", "a/9", "c/e"]);
});

test("KeyIndex walks report each key's value as it is now, also when set in place or changed between slices", () => {
  const index = new KeyIndex<number>();
  for (let i = 0; i < 20; i++) index.set(`p/${i}`, i);
  const values = (): Map<string, number> => {
    const found = new Map<string, number>();
    assert.ok(index.walk("p/*").step((k, v) => found.set(k, v)));
    return found;
  };
  // The first walk makes the node remember its children in order; later walks read that list.
  assert.equal(values().get("p/3"), 3);
  index.set("p/3", 33);
  assert.equal(values().get("p/3"), 33, "a value replaced in place");
  // Between two slices of one walk, a key deleted is not reported and a replaced value is read anew.
  const found = new Map<string, number>();
  const walk = index.walk("p/*");
  assert.equal(
    walk.step((k, v) => found.set(k, v), Number.POSITIVE_INFINITY, 1),
    false,
  );
  assert.deepEqual([...found.keys()], ["p/0"]);
  index.delete("p/5");
  index.set("p/7", 77);
  while (!walk.step((k, v) => found.set(k, v)));
  assert.ok(!found.has("p/5"), "a key deleted meanwhile");
  assert.equal(found.get("p/7"), 77);
  assert.equal(found.get("p/3"), 33);
  assert.equal(found.size, 19);
});

test("a memory scan gives keys in string order, a node with many children sorted in slices", async () => {
  const b = new MemoryBackend();
  const keys: string[] = [];
  // 10,000 children under one node (scanned in insertion order: `SORTED_SCAN_MAX`), in random
  // order, between siblings before and after it, and keys under some of the children.
  const next = rngUnit(11);
  const flat = Array.from({ length: 10_000 }, (_, i) => `m/flat/${(i * 7919) % 10_000}`);
  for (let i = flat.length - 1; i > 0; i--) {
    const j = Math.floor(next() * (i + 1));
    [flat[i], flat[j]] = [flat[j]!, flat[i]!];
  }
  keys.push(...flat, "m/a", "m/flas", "m/flat.x", "m/flatz/1", "m/flat/17/deep", "m/flat/4242/x/y", "n");
  for (const k of keys) b.put(entry(k, k));
  const batches: string[][] = [];
  for await (const batch of b.scan("**")) batches.push(batch.map((e) => e.key));
  assert.deepEqual(batches.flat(), [...keys].sort());
  // Only under the wide node may keys come out of order: its run comes whole, sorted.
  assert.ok(batches.length >= 2, `${batches.length} batches`);
  const under = (await b.query("m/flat/**")).map((e) => e.key);
  assert.deepEqual(under, keys.filter((k) => k.startsWith("m/flat/")).sort());
  assert.deepEqual(
    (await b.query("m/*")).map((e) => e.key),
    ["m/a", "m/flas", "m/flat.x"],
  );
});

test("a memory scan of a storage closed between two batches ends with unavailable, not a broken read", async () => {
  const b = new MemoryBackend("closing");
  for (let i = 0; i < 5_000; i++) b.put(entry(`c/${i % 10}/${i}`, `v${i}`));
  const it = b.scan("c/**")[Symbol.asyncIterator]();
  const first = await it.next();
  assert.ok(!first.done && first.value.length > 0);
  await b.close();
  await rejectsWith(it.next(), "unavailable", /memory storage closing was closed while a query on c\/\*\* ran/);
  // A query started after the close sees an empty storage.
  assert.deepEqual(await b.query("c/**"), []);
});

test("KeyIndex set and delete prune and report the nodes they create and remove", () => {
  const index = new KeyIndex<string>();
  assert.deepEqual(index.set("a/b/c", "x"), { nodes: 3, chars: 3, old: undefined });
  assert.deepEqual(index.set("a/b/dd", "y"), { nodes: 1, chars: 2, old: undefined });
  assert.deepEqual(index.set("a/b/c", "z"), { nodes: 0, chars: 0, old: "x" });
  assert.equal(index.get("a/b/c"), "z");
  assert.equal(index.get("a/b"), undefined);
  assert.equal(index.get("a/b/c/d"), undefined);
  // A key under another key turns that one into a prefix node; both stay readable.
  assert.deepEqual(index.set("a/b/c/d", "w"), { nodes: 1, chars: 1, old: undefined });
  assert.equal(index.get("a/b/c"), "z");
  assert.equal(index.get("a/b/c/d"), "w");
  assert.equal(index.size, 3);
  assert.deepEqual(index.delete("a/b/c"), { nodes: 0, chars: 0, old: "z" });
  assert.equal(index.get("a/b/c/d"), "w");
  assert.deepEqual(index.delete("a/b/c/d"), { nodes: 2, chars: 2, old: "w" });
  assert.deepEqual(index.delete("a/b/c"), { nodes: 0, chars: 0, old: undefined });
  assert.deepEqual(index.delete("a/b/dd"), { nodes: 3, chars: 4, old: "y" });
  assert.equal(index.size, 0);
  index.set("a", "top");
  index.set("a/b", "under");
  assert.deepEqual(index.delete("a/b"), { nodes: 1, chars: 1, old: "under" });
  assert.equal(index.get("a"), "top");
});

test("a 100,000-chunk key is stored and found by a wild query without overflowing the stack", async () => {
  const m = new MemoryBackend("deep");
  const key = Array.from({ length: 100_000 }, () => "c").join("/");
  m.put(entry(key, "v"));
  const found = await m.query("**");
  assert.equal(found.length, 1);
  assert.equal(found[0]!.key, key);
  assert.equal((await m.query("c/**")).length, 1);
});

test("plain-key queries and lookups see the latest value and tombstones", async () => {
  const m = new MemoryBackend("t");
  m.put(entry("demo/a", "1"));
  m.put(entry("demo/b", "2"));
  assert.equal((await m.query("demo/a"))[0]?.payload.toString(), "1");
  const ts = hlc.newTimestamp();
  m.delete("demo/a", ts);
  assert.deepEqual(await m.lookup("demo/a"), { timestamp: ts, deleted: true, version: ts.encode() });
  assert.deepEqual(await m.query("demo/a"), []);
  assert.deepEqual(
    (await m.query("demo/**")).map((e) => e.key),
    ["demo/b"],
  );
  await m.purgeTombstones(ts.time + 1n);
  assert.equal(await m.lookup("demo/a"), undefined);
  assert.equal(m.size, 1);
});

test("a write beyond the quota is refused with insufficient_storage and loses nothing", async () => {
  const m = new MemoryBackend("small", 1000);
  m.put(entry("q/a", "x".repeat(400)));
  const usedBefore = m.used;
  assert.ok(usedBefore > 400 && usedBefore < 600, String(usedBefore));
  // A new key that does not fit.
  assert.throws(
    () => m.put(entry("q/b", "y".repeat(600))),
    (e: unknown) =>
      e instanceof ZestError &&
      e.kind === "insufficient_storage" &&
      /memory storage small is full/.test(e.message) &&
      /quota of 1000 bytes/.test(e.message),
  );
  assert.equal(m.used, usedBefore);
  assert.equal(await m.lookup("q/b"), undefined);
  // A larger value for an existing key: the old value stays.
  assert.throws(
    () => m.put(entry("q/a", "z".repeat(990))),
    (e: unknown) => e instanceof ZestError && e.kind === "insufficient_storage",
  );
  assert.equal((await m.query("q/a"))[0]?.payload.toString(), "x".repeat(400));
  assert.equal(m.used, usedBefore);
  // A smaller value always fits, and a delete is never refused.
  m.put(entry("q/a", "small"));
  assert.ok(m.used < usedBefore);
  m.delete("q/zzz", hlc.newTimestamp());
  // Room again once values shrink.
  m.put(entry("q/b", "y".repeat(600)));
});

test("the quota counts index nodes, slots, payloads with their header, and each encoding once", async () => {
  const m = new MemoryBackend("acct", 1_000_000);
  const node = (chars: number) => INDEX_NODE_BYTES + chars;
  const value = (bytes: number) => RECORD_HEADER_BYTES + bytes;
  const clock = "01".length; // the clock id of every timestamp here, held once
  m.put(entry("a/bc", "12345", "text/plain")); // nodes a, bc; one slot; value 5; encoding 10
  let want = node(1) + node(2) + SLOT_BYTES + value(5) + "text/plain".length + clock;
  assert.equal(m.used, want);
  m.put(entry("a/d", "1", "x"));
  want += node(1) + SLOT_BYTES + value(1) + "x".length;
  assert.equal(m.used, want);
  // Another key with a known encoding: the encoding is not counted again.
  m.put(entry("a/e", "22", "text/plain"));
  assert.equal(m.used, want + node(1) + SLOT_BYTES + value(2));
  const e = hlc.newTimestamp();
  m.delete("a/e", e);
  m.delete("a/d", hlc.newTimestamp()); // the value and its encoding go; the key stays until purged
  want -= value(1) + "x".length;
  assert.equal(m.used, want + node(1) + SLOT_BYTES);
  await m.purgeTombstones(hlc.newTimestamp().time + 1n);
  assert.equal(m.used, node(1) + node(2) + SLOT_BYTES + value(5) + "text/plain".length + clock);
  // Overwriting a value replaces its share.
  m.put(entry("a/bc", "1234567890", "text/plain"));
  assert.equal(m.used, node(1) + node(2) + SLOT_BYTES + value(10) + "text/plain".length + clock);
});

test("overwritten and deleted values' slab space is reclaimed: dead bytes stay bounded", async () => {
  const m = new MemoryBackend("churn", 64 * 1024 * 1024);
  const rec = (m as unknown as { records: Records }).records;
  const keys = 2000;
  for (let round = 0; round < 30; round++) {
    for (let i = 0; i < keys; i++) {
      // Sizes change from round to round, so records do not line up.
      const k = `churn/${(i * 7919 + round) % keys}`;
      if ((i + round) % 11 === 0) m.delete(k, hlc.newTimestamp());
      else m.put(entry(k, `${round}:${"x".repeat((i + round * 13) % 300)}`));
    }
    const live = m.used;
    assert.ok(m.deadBytes <= live / 4 + 4096, `round ${round}: ${m.deadBytes} dead bytes for ${live} used`);
    // Every slab byte is live, dead, or the newest slab's unwritten end (at most one slab).
    assert.ok(rec.slabBytes <= live + m.deadBytes + (1 << 20), `round ${round}: ${rec.slabBytes} slab bytes`);
  }
  // Every key still reads back its last value.
  for (let i = 0; i < keys; i++) {
    const k = `churn/${i}`;
    const e = m.peek(k);
    if (e) assert.match(e.payload.toString(), /^29:x*$/, k);
  }
  // Once every key is gone (deleted, then purged), no slab is left.
  for (let i = 0; i < keys; i++) m.delete(`churn/${i}`, hlc.newTimestamp());
  await m.purgeTombstones(hlc.newTimestamp().time + 1n);
  assert.equal(m.size, 0);
  assert.equal(m.used, 0);
  assert.ok(rec.slabBytes <= 1 << 20, `${rec.slabBytes} slab bytes left`);
});

test("a payload read from the memory volume never changes, even after overwrites and compaction", () => {
  const m = new MemoryBackend("views");
  m.put(entry("v/a", "first"));
  const held = m.peek("v/a")!.payload;
  // Enough churn to compact, many times, the slabs the first value is moved through.
  for (let i = 0; i < 20_000; i++) m.put(entry(`v/${i % 50}`, `${i}`.padEnd(200, ".")));
  assert.equal(m.peek("v/a")!.payload.toString(), "first");
  m.put(entry("v/a", "second"));
  for (let i = 0; i < 2_000; i++) m.put(entry(`v/${i % 50}`, `${i}`.padEnd(200, ".")));
  assert.equal(held.toString(), "first");
  assert.equal(m.peek("v/a")!.payload.toString(), "second");
});

test("reads after overwrites, deletes and slot reuse see the current value, never a remembered one", async () => {
  const m = new MemoryBackend("cache");
  m.put(entry("c/a", "1", "text/plain"));
  assert.equal(m.peek("c/a")!.payload.toString(), "1");
  m.put(entry("c/a", "2", "application/json"));
  const second = m.peek("c/a")!;
  assert.deepEqual([second.payload.toString(), second.encoding], ["2", "application/json"]);
  const ts = hlc.newTimestamp();
  m.delete("c/a", ts);
  assert.equal(m.peek("c/a"), null);
  await m.purgeTombstones(ts.time + 1n);
  // The freed slot goes to the next new key.
  m.put(entry("c/b", "3"));
  assert.equal(m.peek("c/a"), null);
  assert.deepEqual([m.peek("c/b")!.key, m.peek("c/b")!.payload.toString()], ["c/b", "3"]);
  assert.deepEqual(
    (await m.query("c/*")).map((e) => [e.key, e.payload.toString()]),
    [["c/b", "3"]],
  );
});

test("a memory write is decided by the whole 64-bit time, then the clock id: high word, low word, tie", () => {
  const m = new MemoryBackend("lww");
  const at = (time: bigint, id: string, value: string) => ({
    key: "t/k",
    payload: Buffer.from(value),
    encoding: "text/plain",
    timestamp: new Timestamp(time, id),
  });
  const hi = 0xe8a1_b2c3n << 32n;
  assert.equal(m.put(at(hi | 0xffff_fff0n, "02", "a")), "inserted");
  // A later second with a smaller fraction is newer; an earlier second with a larger one is older.
  assert.equal(m.put(at(hi + (1n << 32n), "02", "b")), "inserted");
  assert.equal(m.put(at(hi | 0xffff_ffffn, "02", "c")), "outdated");
  // Same second: the fraction decides (signed 32-bit comparisons would get 0x8000_0000 wrong).
  assert.equal(m.put(at(hi + (1n << 32n) + 0x8000_0000n, "02", "d")), "inserted");
  assert.equal(m.put(at(hi + (1n << 32n) + 0x7fff_ffffn, "02", "e")), "outdated");
  // Same time: the clock id decides; the same time and id is not newer.
  const t = hi + (1n << 32n) + 0x8000_0000n;
  assert.equal(m.put(at(t, "01", "f")), "outdated");
  assert.equal(m.put(at(t, "02", "g")), "outdated");
  assert.equal(m.put(at(t, "03", "h")), "inserted");
  assert.equal(m.peek("t/k")?.payload.toString(), "h");
  assert.equal(m.delete("t/k", new Timestamp(t, "02")), "outdated");
  assert.equal(m.delete("t/k", new Timestamp(t + 1n, "01")), "inserted");
});

test("more keys than the memory volume remembers by key: each is read, overwritten and reused by its own slot", async () => {
  // 40,000 keys: more than the map of recent keys holds (it is emptied when full, several times).
  const m = new MemoryBackend("many");
  const n = 40_000;
  for (let i = 0; i < n; i++) m.put(entry(`k/${i}`, `v${i}`));
  for (let i = 0; i < n; i += 7) assert.equal(m.peek(`k/${i}`)?.payload.toString(), `v${i}`);
  // Overwrites in another order, then deletes of every third key, purged: their slots are freed.
  for (let i = n - 1; i >= 0; i -= 2) m.put(entry(`k/${i}`, `w${i}`));
  const ts = hlc.newTimestamp();
  for (let i = 0; i < n; i += 3) m.delete(`k/${i}`, ts);
  await m.purgeTombstones(ts.time + 1n);
  // New keys take the freed slots; the purged keys read as absent, never as a new key's value.
  for (let i = 0; i < n; i += 3) m.put(entry(`new/${i}`, `n${i}`));
  for (let i = 0; i < n; i++) {
    const want = i % 3 === 0 ? undefined : (n - 1 - i) % 2 === 0 ? `w${i}` : `v${i}`;
    assert.equal(m.peek(`k/${i}`)?.payload.toString(), want, `k/${i}`);
    assert.equal((await m.lookup(`k/${i}`))?.deleted, want === undefined ? undefined : false, `k/${i}`);
  }
  for (let i = 0; i < n; i += 3) assert.equal(m.peek(`new/${i}`)?.payload.toString(), `n${i}`);
  // As many purged as new.
  assert.equal(m.size, n);
});

test("keys too long to be remembered by key (over 256 characters) are read, overwritten, deleted and purged through the index", async () => {
  const m = new MemoryBackend("long");
  const keys = [256, 257, 4000].map((len) => `l/${"x".repeat(len - 2)}`);
  for (const k of keys) m.put(entry(k, `v${k.length}`));
  for (const k of keys) assert.equal(m.peek(k)?.payload.toString(), `v${k.length}`);
  for (const k of keys) m.put(entry(k, `w${k.length}`));
  for (const k of keys) assert.equal((await m.lookup(k))?.deleted, false);
  for (const k of keys) assert.equal(m.peek(k)?.payload.toString(), `w${k.length}`);
  const ts = hlc.newTimestamp();
  for (const k of keys) m.delete(k, ts);
  await m.purgeTombstones(ts.time + 1n);
  for (const k of keys) assert.equal(m.peek(k), null);
  assert.equal(m.size, 0);
});

test("random puts, deletes and purges: every read and the quota's count match a plain model", async () => {
  const m = new MemoryBackend("model", 1 << 30);
  const rec = (m as unknown as { records: Records }).records;
  const next = rngUnit(12);
  const encodings = ["text/plain", "application/json", "x/y", ""];
  // key → [payload, encoding] for values; null for tombstones.
  const model = new Map<string, [Buffer, string] | null>();
  for (let op = 0; op < 6000; op++) {
    const key = `f/${Math.floor(next() * 300)}`;
    const r = next();
    if (r < 0.15) {
      m.delete(key, hlc.newTimestamp());
      model.set(key, null);
    } else if (r < 0.17) {
      // Every tombstone so far is older than now: all of them go.
      await m.purgeTombstones(hlc.newTimestamp().time + 1n);
      for (const [k, v] of model) if (v === null) model.delete(k);
    } else {
      // Mostly small values, now and then one big enough for a buffer of its own.
      const size = next() < 0.01 ? 300_000 + Math.floor(next() * 1000) : Math.floor(next() * 400);
      const payload = Buffer.alloc(size, op & 0xff);
      if (size >= 4) payload.writeUInt32LE(op, 0);
      const encoding = pick(next, encodings);
      m.put({ key, payload, encoding, timestamp: hlc.newTimestamp() });
      model.set(key, [payload, encoding]);
    }
    if (op % 500 === 0 || op === 5999) {
      for (const [k, v] of model) {
        const e = m.peek(k);
        if (v === null) assert.equal(e, null, k);
        else assert.deepEqual(e && [e.payload, e.encoding], v, k);
      }
      let want = INDEX_NODE_BYTES + 1 + "01".length;
      const encs = new Set<string>();
      for (const [k, v] of model) {
        want += INDEX_NODE_BYTES + k.length - 2 + SLOT_BYTES;
        if (v) {
          want += RECORD_HEADER_BYTES + v[0].length;
          encs.add(v[1]);
        }
      }
      for (const e of encs) want += e.length;
      assert.equal(m.used, model.size === 0 ? 0 : want, `op ${op}`);
      assert.ok(m.deadBytes <= (m.used >> 2) + 4096, `op ${op}: ${m.deadBytes} dead`);
      assert.ok(rec.slabBytes <= m.used + m.deadBytes + (1 << 20), `op ${op}: ${rec.slabBytes} slab bytes`);
    }
  }
  assert.deepEqual(
    (await m.query("f/*")).map((e) => e.key).sort(),
    [...model]
      .filter(([, v]) => v !== null)
      .map(([k]) => k)
      .sort(),
  );
});

test("binary payloads and large values round-trip through the slabs", async () => {
  const m = new MemoryBackend("bin");
  const bytes = Buffer.from(Array.from({ length: 256 }, (_, i) => i));
  const big = Buffer.alloc(3 * 1024 * 1024, 0xab);
  m.put({ ...entry("b/bytes", ""), payload: bytes, encoding: "application/octet-stream" });
  m.put({ ...entry("b/big", ""), payload: big });
  m.put({ ...entry("b/empty", ""), payload: Buffer.alloc(0) });
  assert.deepEqual(m.peek("b/bytes")!.payload, bytes);
  assert.equal(m.peek("b/bytes")!.encoding, "application/octet-stream");
  assert.deepEqual(m.peek("b/big")!.payload, big);
  assert.equal(m.peek("b/empty")!.payload.length, 0);
  assert.deepEqual((await m.query("b/*")).map((e) => [e.key, e.payload.length]).sort(), [
    ["b/big", big.length],
    ["b/bytes", 256],
    ["b/empty", 0],
  ]);
  // A large value has a buffer of its own, given back when it is overwritten.
  const rec = (m as unknown as { records: Records }).records;
  m.put(entry("b/big", "small now"));
  assert.ok(rec.slabBytes < 1024 * 1024, `${rec.slabBytes} slab bytes`);
});

test("a wide query answers each key with its own value while keys are deleted and their slots reused", async () => {
  const m = new MemoryBackend("reuse");
  const n = 100_000;
  for (let i = 0; i < n; i++) m.put(entry(`r/${i}`, `r/${i}`));
  let yielded = false;
  const wide = m.query("r/*");
  await new Promise<void>((resolve) => setImmediate(resolve));
  yielded = true;
  // Meanwhile every key is deleted and purged, and new keys take the freed slots.
  for (let i = 0; i < n; i++) m.delete(`r/${i}`, hlc.newTimestamp());
  await m.purgeTombstones(hlc.newTimestamp().time + 1n);
  for (let i = 0; i < n; i++) m.put(entry(`s/${i}`, `s/${i}`));
  const found = await wide;
  assert.ok(yielded);
  assert.ok(found.length > 0 && found.length < n, `${found.length} keys found before the deletes`);
  for (const e of found) assert.equal(e.payload.toString(), e.key);
});

test("the memory volume takes a quota from the volume or the storage, 256 MiB by default", async () => {
  const ctx = { logger: silentLogger };
  const v = await memoryDriver.open("memory", {}, ctx);
  assert.equal(((await v.createStorage("s", "**", {})) as MemoryBackend).quota, DEFAULT_MEMORY_QUOTA);
  assert.equal(DEFAULT_MEMORY_QUOTA, 256 * 1024 * 1024);
  assert.equal(((await v.createStorage("s", "**", { quota: 5000 })) as MemoryBackend).quota, 5000);
  const small = await memoryDriver.open("small", { quota: 100 }, ctx);
  assert.equal(((await small.createStorage("s", "**", {})) as MemoryBackend).quota, 100);
  await assert.rejects(
    v.createStorage("s", "**", { quota: -1 }),
    (e: unknown) => e instanceof ZestError && e.kind === "bad_input" && /quota/.test(e.message),
  );
  await assert.rejects(
    memoryDriver.open("m2", { quota: "big" }, ctx),
    (e: unknown) => e instanceof ZestError && e.kind === "bad_input",
  );
});

test("a wide query over 100,000 keys gives the event loop back: a one-key query finishes first", async () => {
  const m = new MemoryBackend("wide");
  for (let i = 0; i < 100_000; i++) m.put(entry(`w/${i % 100}/${i}`, "v"));
  m.put(entry("one/key", "1"));
  const order: string[] = [];
  const wide = m.query("**/$*9$*").then((r) => {
    order.push("wide");
    return r;
  });
  // Queued after the wide query started: it must not wait for the whole walk.
  const tick = new Promise<void>((resolve) => setImmediate(resolve)).then(async () => {
    await m.query("one/key");
    order.push("one");
  });
  const [found] = await Promise.all([wide, tick]);
  assert.deepEqual(order, ["one", "wide"]);
  assert.equal(
    found.length,
    [...Array(100_000).keys()].filter((i) => String(i).includes("9") || String(i % 100).includes("9")).length,
  );
});

test("a query over 300,000 keys under one prefix gives the event loop back within the scan", async () => {
  const index = new KeyIndex<number>();
  for (let i = 0; i < 300_000; i++) index.set(`flat/${i}`, i);
  const walk = index.walk("flat/$*7");
  const found: Array<[string, number]> = [];
  let steps = 0;
  while (!walk.step((k, v) => found.push([k, v]), 0)) steps++;
  // One node with 300,000 children: the scan stops and resumes inside it, every few hundred.
  assert.ok(steps > 100, `${steps} slices`);
  assert.equal(found.length, 30_000);
});

test("a long key chunk held by the index does not keep its whole key string alive", () => {
  setFlagsFromString("--expose-gc");
  const gc = runInNewContext("gc") as () => void;
  const n = 50_000;
  gc();
  gc();
  const before = process.memoryUsage().heapUsed;
  const index = new KeyIndex<number>();
  for (let i = 0; i < n; i++) index.set(`uuid/${crypto.randomUUID()}`, i);
  gc();
  gc();
  const perKey = (process.memoryUsage().heapUsed - before) / n;
  // A map entry and a 36-character string: about 95 bytes. A slice of the key (a view holding
  // the 41-character key) made it about 127.
  assert.ok(perKey < 112, `${perKey.toFixed(1)} heap bytes per key`);
  assert.equal(index.size, n);
});
