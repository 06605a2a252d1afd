import assert from "node:assert/strict";
import { before, describe, test } from "node:test";
import type { Volume } from "../../src/storage/backend.js";
import { runStorageContract } from "./contract.js";
import { canonize, KeyIndex } from "../../src/keyexpr/index.js";
import { HLC } from "../../src/core/timestamp.js";
import { ZestError } from "../../src/core/errors.js";
import { DEFAULT_MEMORY_QUOTA, MemoryBackend, memoryDriver } from "../../src/storage/volumes/memory.js";
import { silentLogger } from "../../src/core/log.js";
import { matchesKey, pick, rng, universe } from "../keyexpr/reference.js";

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

test("KeyIndex walks answer exactly the keys the reference model matches", () => {
  const keys = universe(["a", "b", "ab", "@x"], 4);
  const index = new KeyIndex<number>();
  for (const [i, k] of keys.entries()) index.set(k, i);
  const next = rng(7);
  const pieces = ["a", "b", "ab", "*", "**", "a$*", "$*b", "@x", "$*a$*"];
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
    while (!walk.step(found, 0));
    const got = found.map(([k]) => k).sort();
    const want = keys.filter((k) => matchesKey(ke, k)).sort();
    assert.deepEqual(got, want, ke);
    for (const [k, v] of found) assert.equal(keys[v], k);
  }
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

test("the quota counts payloads, encodings and key-index nodes, and deletes give it back", async () => {
  const m = new MemoryBackend("acct", 1_000_000);
  m.put(entry("a/bc", "12345", "text/plain")); // nodes a, bc: 2×64 + 3; value 5 + 10
  assert.equal(m.used, 2 * 64 + 3 + 5 + 10);
  m.put(entry("a/d", "1", "x")); // node d: 64 + 1; value 1 + 1
  assert.equal(m.used, 2 * 64 + 3 + 5 + 10 + 64 + 1 + 2);
  const ts = hlc.newTimestamp();
  m.delete("a/d", ts); // tombstone: the value goes, the key stays until purged
  assert.equal(m.used, 2 * 64 + 3 + 5 + 10 + 64 + 1);
  await m.purgeTombstones(ts.time + 1n);
  assert.equal(m.used, 2 * 64 + 3 + 5 + 10);
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
  while (!walk.step(found, 0)) steps++;
  // One node with 300,000 children: the scan stops and resumes inside it, every few hundred.
  assert.ok(steps > 100, `${steps} slices`);
  assert.equal(found.length, 30_000);
});
