/**
 * The `jetstream` volume against a real nats-server with JetStream: key mapping, last-writer
 * data, tombstones, wildcard listing, disposal, option errors.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { connect } from "@nats-io/transport-node";
import { Kvm } from "@nats-io/kv";
import { silentLogger } from "../../src/core/log.js";
import { Timestamp } from "../../src/core/timestamp.js";
import type { Volume } from "../../src/storage/backend.js";
import { createJetstreamDriver, decodeKvToken, defaultBucket, encodeKvToken, jetstreamDriver, keyToKvKey, kvKeyToKey } from "../../src/storage/volumes/jetstream.js";
import { universe } from "../keyexpr/reference.js";
import { startNatsCluster, type NatsCluster } from "../support/nats-cluster.js";

const KV_KEY = /^[-/=.\w]+$/;
const ts = (n: number): Timestamp => new Timestamp(BigInt(n) << 32n, "0A");

test("keys map to valid KV keys and back", () => {
  for (const key of [...universe(["a", "a.b", "a b", "@", "é", "=", "x/y", "-_"], 3), "@/router/0A/x", "demo/example/test"]) {
    const k = keyToKvKey(key);
    assert.match(k, KV_KEY, key);
    assert.ok(!k.startsWith(".") && !k.endsWith(".") && !k.includes(".."), k);
    assert.equal(kvKeyToKey(k), key);
  }
  assert.equal(keyToKvKey("demo/a b"), "demo.a=20b");
  assert.equal(encodeKvToken(""), "=");
  assert.throws(() => decodeKvToken("a=4"), /malformed/);
  assert.equal(defaultBucket("my.store"), "zest_my_store");
});

describe("jetstream volume on a nats-server", () => {
  let cluster: NatsCluster;
  let volume: Volume;
  before(async () => {
    cluster = await startNatsCluster({ size: 1 });
    volume = await jetstreamDriver.open("js", { servers: cluster.urls[0] }, { logger: silentLogger });
  });
  after(async () => {
    await volume?.close();
    await cluster?.stop();
  });

  test("put, lookup and exact query", async () => {
    const b = await volume.createStorage("s1", "demo/**", {});
    await b.put({ key: "demo/a b", payload: Buffer.from("v1"), encoding: "text/plain", timestamp: ts(1) });
    assert.deepEqual(await b.lookup("demo/a b"), { timestamp: ts(1), deleted: false });
    assert.equal(await b.lookup("demo/none"), undefined);
    const [e] = await b.query("demo/a b");
    assert.equal(e?.payload.toString(), "v1");
    assert.equal(e?.encoding, "text/plain");
    assert.equal(e?.timestamp.compare(ts(1)), 0);
  });

  test("wildcard queries list the keys under the literal prefix, refined, the prefix key included", async () => {
    const b = await volume.createStorage("s2", "w/**", {});
    for (const k of ["w", "w/a", "w/a/b", "w/b.c", "w/é/x", "w/@x/y"]) {
      await b.put({ key: k, payload: Buffer.from(k), encoding: "", timestamp: ts(2) });
    }
    const keys = async (ke: string): Promise<string[]> => (await b.query(ke)).map((e) => e.key).sort();
    assert.deepEqual(await keys("w/**"), ["w", "w/a", "w/a/b", "w/b.c", "w/é/x"]);
    assert.deepEqual(await keys("w/*"), ["w/a", "w/b.c"]);
    assert.deepEqual(await keys("**/x"), ["w/é/x"]);
    assert.deepEqual(await keys("w/@x/*"), ["w/@x/y"]);
    assert.deepEqual(await keys("w/$*.c"), ["w/b.c"]);
  });

  test("a wildcard query over more than 1000 keys (one ordered scan) refines the same way", async () => {
    const b = await volume.createStorage("big", "big/**", {});
    const keys = Array.from({ length: 1_100 }, (_, i) => `big/${i % 2 === 0 ? "even" : "odd"}/${i}`);
    for (let i = 0; i < keys.length; i += 100) {
      await Promise.all(keys.slice(i, i + 100).map((k) => b.put({ key: k, payload: Buffer.from(k), encoding: "", timestamp: ts(1) })));
    }
    await b.delete("big/even/0", ts(2));
    const all = await b.query("big/**");
    assert.equal(all.length, 1_099);
    const odd = await b.query("big/odd/*");
    assert.equal(odd.length, 550);
    assert.ok(odd.every((e) => e.key.startsWith("big/odd/") && e.payload.toString() === e.key));
  });

  test("a delete leaves a tombstone that lookup sees and queries hide; purge drops old ones only", async () => {
    const b = await volume.createStorage("s3", "t/**", {});
    await b.put({ key: "t/a", payload: Buffer.from("x"), encoding: "", timestamp: ts(3) });
    await b.delete("t/a", ts(4));
    await b.delete("t/b", ts(10));
    assert.deepEqual(await b.lookup("t/a"), { timestamp: ts(4), deleted: true });
    assert.deepEqual(await b.query("t/**"), []);
    await b.purgeTombstones(ts(5).time);
    assert.equal(await b.lookup("t/a"), undefined);
    assert.deepEqual(await b.lookup("t/b"), { timestamp: ts(10), deleted: true });
  });

  test("routers sharing a bucket never write an older value over a newer one", async () => {
    const other = await jetstreamDriver.open("js3", { servers: cluster.urls[0] }, { logger: silentLogger });
    try {
      const mine = await volume.createStorage("shared", "c/**", {});
      const theirs = await other.createStorage("shared", "c/**", {});
      const put = (b: typeof mine, key: string, n: number) => b.put({ key, payload: Buffer.from(String(n)), encoding: "", timestamp: ts(n) });
      // Last-writer-wins looked at an empty key, then the other router wrote a newer value.
      assert.equal(await mine.lookup("c/k"), undefined);
      await put(theirs, "c/k", 50);
      await put(mine, "c/k", 30);
      assert.equal((await theirs.query("c/k"))[0]?.payload.toString(), "50");
      // ... or an older one than ours: ours, the newest, goes through on a second try.
      assert.deepEqual(await mine.lookup("c/k"), { timestamp: ts(50), deleted: false });
      await put(theirs, "c/k", 55);
      await put(mine, "c/k", 60);
      assert.equal((await theirs.query("c/k"))[0]?.payload.toString(), "60");
    } finally {
      await other.close();
    }
  });

  test("data outlives the volume; on_closure drop deletes the bucket, the default keeps it", async () => {
    const keep = await volume.createStorage("keep", "k/**", {});
    await keep.put({ key: "k/1", payload: Buffer.from("kept"), encoding: "", timestamp: ts(5) });
    await keep.close(true);
    const dropped = await volume.createStorage("gone", "g/**", { on_closure: "drop" });
    await dropped.put({ key: "g/1", payload: Buffer.from("x"), encoding: "", timestamp: ts(5) });
    await dropped.close(true);

    const other = await jetstreamDriver.open("js2", { servers: [cluster.urls[0]!] }, { logger: silentLogger });
    try {
      const again = await other.createStorage("keep", "k/**", {});
      assert.equal((await again.query("k/1"))[0]?.payload.toString(), "kept");
    } finally {
      await other.close();
    }
    const nc = await connect({ servers: cluster.urls[0]! });
    try {
      const names: string[] = [];
      for await (const s of new Kvm(nc).list()) names.push(s.bucket);
      assert.ok(names.includes(defaultBucket("keep")));
      assert.ok(!names.includes(defaultBucket("gone")));
    } finally {
      await nc.close();
    }
  });

  test("an existing bucket with another replica count is refused with 409; the status shows the real count", async () => {
    const first = await volume.createStorage("rep", "rep/**", { replicas: 1 });
    await first.close(false);
    await assert.rejects(volume.createStorage("rep", "rep/**", { replicas: 3 }), (e: Error & { kind?: string }) => {
      return e.kind === "conflict" && /bucket zest_rep exists with 1 replica\(s\), not the 3 asked for/.test(e.message);
    });
    // Without an explicit count, the bucket is used as it is, and the status says what it has.
    await volume.createStorage("rep", "rep/**", {});
    assert.equal((volume.status().bucket_replicas as Record<string, number>).zest_rep, 1);
  });

  test("bad options are 400s naming the option", async () => {
    await assert.rejects(volume.createStorage("x", "x/**", { bucket: "a.b" }), (e: Error & { kind?: string }) => e.kind === "bad_input" && /bucket/.test(e.message));
    await assert.rejects(volume.createStorage("x", "x/**", { replicas: 7 }), (e: Error & { kind?: string }) => e.kind === "bad_input" && /replicas/.test(e.message));
    await assert.rejects(volume.createStorage("x", "x/**", { on_closure: "explode" }), (e: Error & { kind?: string }) => e.kind === "bad_input" && /on_closure/.test(e.message));
    await assert.rejects(createJetstreamDriver().open("v", {}, { logger: silentLogger }), (e: Error & { kind?: string }) => e.kind === "bad_input" && /servers/.test(e.message));
    await assert.rejects(jetstreamDriver.open("v", { servers: 12 }, { logger: silentLogger }), (e: Error & { kind?: string }) => e.kind === "bad_input");
  });
});
