import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { Router } from "../../src/core/router.js";
import { Session } from "../../src/core/session.js";
import type { Sample } from "../../src/core/sample.js";
import { Parameters } from "../../src/core/selector.js";
import { Timestamp } from "../../src/core/timestamp.js";
import { StorageService } from "../../src/storage/service.js";
import { MemoryBackend } from "../../src/storage/volumes/memory.js";
import { silentLogger } from "../../src/core/log.js";
import { toKeyExpr } from "../../src/core/key.js";
import { SETTLED } from "../../src/core/settled.js";
import { ZestError } from "../../src/core/errors.js";

function okKeys(replies: Awaited<ReturnType<Session["get"]>>): string[] {
  return replies.flatMap((r) => (r.kind === "ok" ? [r.sample.key] : []));
}

describe("Session", () => {
  test("subscribers receive matching puts and deletes, and nothing after undeclare", async () => {
    const s = new Session(new Router({ zid: "01" }));
    const got: Sample[] = [];
    const sub = s.declareSubscriber("a/*", (x) => void got.push(x));
    await s.put("a/b", "1", { encoding: "text/plain" });
    await s.put("a/b/c", "2");
    await s.delete("a/c");
    sub.undeclare();
    await s.put("a/d", "3");
    assert.deepEqual(
      got.map((x) => [x.key, x.kind]),
      [
        ["a/b", "put"],
        ["a/c", "delete"],
      ],
    );
    assert.equal(got[0]!.encoding, "text/plain");
  });

  test("a subscriber declared or undeclared after puts on a key sees exactly the puts made while declared", async () => {
    const s = new Session(new Router());
    await s.put("r/k", "before"); // the route of r/k is now cached (no subscriber)
    const got: string[] = [];
    const sub = s.declareSubscriber("r/*", (x) => void got.push(x.payload.toString()));
    await s.put("r/k", "during");
    sub.undeclare();
    await s.put("r/k", "after");
    assert.deepEqual(got, ["during"]);
  });

  test("two puts through one router never share a timestamp", async () => {
    const s = new Session(new Router({ zid: "02" }));
    const stamps: Timestamp[] = [];
    s.declareSubscriber("t", (x) => void stamps.push(x.timestamp!));
    for (let i = 0; i < 1000; i++) await s.put("t", "x");
    for (let i = 1; i < stamps.length; i++) assert.ok(stamps[i]!.compare(stamps[i - 1]!) > 0);
    assert.equal(stamps[0]!.id, "02");
  });

  test("a rejecting subscriber fails the put (acknowledged writes)", async () => {
    const s = new Session(new Router());
    s.declareSubscriber("x/**", async () => {
      throw new Error("disk full");
    });
    await assert.rejects(s.put("x/y", "v"), /disk full/);
  });

  test("queryables answer with parameters in both forms; replies are sorted by key", async () => {
    const s = new Session(new Router());
    s.declareQueryable("q/**", (q) => {
      q.reply("q/b", `name=${q.parameters.get("name")}`);
      q.reply("q/a", `x=${q.parameters.get("x")}`);
      q.reply("elsewhere/k", "dropped: outside the query");
    });
    for (const sel of ["q/**?(name=Bob;x=1)", "q/**?name=Bob&x=1", "q/**?name=Bob;x=1"]) {
      const replies = await s.get(sel);
      assert.deepEqual(okKeys(replies), ["q/a", "q/b"], sel);
      const values = replies.map((r) => (r.kind === "ok" ? r.sample.payload.toString() : ""));
      assert.deepEqual(values, ["x=1", "name=Bob"], sel);
    }
  });

  test("a query times out with the replies so far plus a 504 error entry", async () => {
    const s = new Session(new Router({ queryTimeoutMs: 100 }));
    s.declareQueryable("slow/**", (q) => {
      q.reply("slow/early", "early");
      return new Promise(() => undefined);
    });
    const started = Date.now();
    const replies = await s.get("slow/**");
    assert.ok(Date.now() - started < 2000);
    assert.equal(replies.length, 2);
    assert.equal(replies[0]!.kind, "ok");
    const err = replies[1]!;
    assert.ok(err.kind === "err" && err.errorKind === "timeout" && /Timeout/.test(err.payload.toString()));
  });

  test("Latest consolidation keeps the newest reply per key", async () => {
    const s = new Session(new Router({ zid: "03" }));
    const older = new Timestamp(1n << 32n, "03");
    const newer = new Timestamp(2n << 32n, "03");
    s.declareQueryable("k", (q) => q.reply("k", "old", { timestamp: older }));
    s.declareQueryable("k", (q) => q.reply("k", "new", { timestamp: newer }));
    const latest = await s.get("k");
    assert.equal(latest.length, 1);
    assert.equal(latest[0]!.kind === "ok" && latest[0]!.sample.payload.toString(), "new");
    const all = await s.get({ key: "k", parameters: new Parameters("_time=[..]") });
    assert.equal(all.length, 2);
  });

  test("invalid key expressions are 400 ZestErrors", async () => {
    const s = new Session(new Router());
    await assert.rejects(
      () => s.put("a//b", "x"),
      (e: Error & { kind?: string }) => e.kind === "bad_input",
    );
    await assert.rejects(
      () => s.get("a/b/"),
      (e: Error & { kind?: string }) => e.kind === "bad_input",
    );
  });
});

describe("StorageService over the memory backend", () => {
  async function setup() {
    const router = new Router({ zid: "0F" });
    const s = new Session(router);
    const svc = new StorageService("mem", "s/**", new MemoryBackend(), s, silentLogger);
    await svc.start({ align: false });
    return { s, router, svc };
  }
  const values = async (s: Session, sel: string): Promise<string[]> =>
    (await s.get(sel)).flatMap((r) => (r.kind === "ok" ? [`${r.sample.key}=${r.sample.payload.toString()}`] : []));

  test("putKey and deleteKey write a door's canonical key as put and delete do, settled at once by a memory storage", async () => {
    const { s } = await setup();
    const got: Array<[string, string, string, number | undefined]> = [];
    s.declareSubscriber("s/**", (x) => void got.push([x.key, x.kind, x.payload.toString(), x.qos?.priority]), {
      allowedOrigin: "any",
    });
    const key = toKeyExpr("s/a", s.keyExprLimits);
    assert.equal(
      s.putKey(key, "1", {
        encoding: "text/plain",
        qos: { priority: 4, congestionControl: "block", express: false },
      }),
      SETTLED,
    );
    assert.deepEqual(await values(s, "s/**"), ["s/a=1"]);
    const [reply] = await s.get("s/a");
    assert.equal(reply?.kind === "ok" ? reply.sample.encoding : reply?.kind, "text/plain");
    assert.equal(s.deleteKey(key), SETTLED);
    assert.deepEqual(await values(s, "s/**"), []);
    assert.deepEqual(got, [
      ["s/a", "put", "1", 4],
      ["s/a", "delete", "", undefined],
    ]);
    // A lifetime still applies: the key is gone at its deadline (docs/ttl-and-leases.md).
    await s.putKey(key, "2", { ttl: 1000 });
    assert.deepEqual(await values(s, "s/**"), ["s/a=2"]);
    await assert.rejects(
      s.putKey(key, "3", { ttl: 0 }),
      (e: unknown) => e instanceof ZestError && e.kind === "bad_input",
    );
  });

  test("last writer wins by timestamp, whatever the arrival order", async () => {
    const { s, svc } = await setup();
    await s.put("s/k", "new", { timestamp: new Timestamp(20n << 32n, "0F") });
    await s.put("s/k", "old", { timestamp: new Timestamp(10n << 32n, "0F") });
    assert.deepEqual(await values(s, "s/k"), ["s/k=new"]);
    await svc.stop(true);
  });

  test("a delete leaves a tombstone that refuses older puts", async () => {
    const { s, svc } = await setup();
    await s.put("s/k", "v1", { timestamp: new Timestamp(10n << 32n, "0F") });
    await s.delete("s/k", { timestamp: new Timestamp(30n << 32n, "0F") });
    await s.put("s/k", "stale", { timestamp: new Timestamp(20n << 32n, "0F") });
    assert.deepEqual(await values(s, "s/k"), []);
    await s.put("s/k", "fresh", { timestamp: new Timestamp(40n << 32n, "0F") });
    assert.deepEqual(await values(s, "s/k"), ["s/k=fresh"]);
    await svc.stop(true);
  });

  test("a wildcard delete refuses a stale put of a key it did not see", async () => {
    const { s, svc } = await setup();
    await s.delete("s/**", { timestamp: new Timestamp(30n << 32n, "0F") });
    await s.put("s/late", "stale", { timestamp: new Timestamp(20n << 32n, "0F") });
    assert.deepEqual(await values(s, "s/**"), []);
    await svc.stop(true);
  });

  test("a new storage aligns from the storages already covering its key expression", async () => {
    const { s, router, svc } = await setup();
    await s.put("s/a", "1");
    await s.put("s/b", "2");
    const other = new StorageService("late", "s/a", new MemoryBackend(), new Session(router), silentLogger);
    await other.start();
    svc.stop(false);
    assert.deepEqual(await values(s, "s/**"), ["s/a=1"]);
    await other.stop(true);
  });
});

describe("Timestamp", () => {
  test("the clock reads the wall clock to the microsecond and formats 9 digits", async () => {
    const { HLC, nowNtp64, ntp64ToUnixNanos, unixNanosToRfc3339 } = await import("../../src/core/timestamp.js");
    const before = BigInt(Date.now()) * 1_000_000n;
    const ts = new HLC("0A").newTimestamp();
    const after = BigInt(Date.now() + 1) * 1_000_000n;
    assert.ok(
      ts.unixNanos >= before - 2_000_000n && ts.unixNanos <= after,
      `${ts.unixNanos} not in [${before}, ${after}]`,
    );
    assert.match(ts.toString(), /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{9}Z\/0A$/);
    assert.equal(Timestamp.parse(ts.toString()).compare(ts), 0);
    assert.equal(unixNanosToRfc3339(ntp64ToUnixNanos(nowNtp64())).length, 30);
  });
});

test("ntp64FromMicros agrees with the exact BigInt conversion for every 7th microsecond of a second", async () => {
  const { ntp64FromMicros, unixNanosToNtp64 } = await import("../../src/core/timestamp.js");
  for (let us = 0; us < 1_000_000; us += 7) {
    assert.equal(
      ntp64FromMicros(1_700_000_000, us),
      unixNanosToNtp64(1_700_000_000n * 1_000_000_000n + BigInt(us) * 1000n),
    );
  }
});

test("ntp64FromMicros is exact when the second changes back and forth (its seconds part is cached)", async () => {
  const { ntp64FromMicros, unixNanosToNtp64 } = await import("../../src/core/timestamp.js");
  for (const secs of [1_700_000_000, 1_700_000_001, 1_700_000_000, 0, 4_102_444_800, 1_700_000_001]) {
    for (const us of [0, 1, 999_999]) {
      assert.equal(
        ntp64FromMicros(secs, us),
        unixNanosToNtp64(BigInt(secs) * 1_000_000_000n + BigInt(us) * 1000n),
        `${secs} s ${us} µs`,
      );
    }
  }
});

describe("Router.storagesOnly and hasSubscriber", () => {
  test("a query reaches storages only when every matching queryable is declared as a storage", () => {
    const router = new Router({ zid: "01" });
    const s = new Session(router);
    assert.equal(router.storagesOnly("a/b"), true);
    s.declareQueryable("a/**", () => undefined, { complete: true, storage: true });
    assert.equal(router.storagesOnly("a/b"), true);
    const evalQ = s.declareQueryable("a/b", () => undefined);
    assert.equal(router.storagesOnly("a/b"), false);
    assert.equal(router.storagesOnly("a/c"), true);
    evalQ.undeclare();
    assert.equal(router.storagesOnly("a/b"), true);
  });

  test("hasSubscriber says whether a write on a key is taken by a local subscriber", () => {
    const router = new Router({ zid: "01" });
    const s = new Session(router);
    assert.equal(router.hasSubscriber("@/router/01/config/x"), false);
    s.declareSubscriber("@/router/01/**", () => undefined);
    assert.equal(router.hasSubscriber("@/router/01/config/x"), true);
    assert.equal(router.hasSubscriber("@/routers/local/config/x"), false);
  });
});
