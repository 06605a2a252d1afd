import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { Router } from "../../src/core/router.js";
import { Session } from "../../src/core/session.js";
import type { Reply } from "../../src/core/reply.js";
import type { Sample } from "../../src/core/sample.js";
import { Timestamp } from "../../src/core/timestamp.js";

const tick = (): Promise<void> => new Promise((r) => setImmediate(r));

function okSummary(replies: Reply[]): string[] {
  return replies.map((r) =>
    r.kind === "ok" ? `${r.sample.kind}:${r.sample.key}:${r.sample.payload.toString()}` : `err:${r.payload.toString()}`,
  );
}

describe("Zenoh 1.x concepts in the core Session", () => {
  test("subscriber locality: session_local hears its own session only, remote the others only", async () => {
    const router = new Router();
    const a = new Session(router, "a");
    const b = new Session(router, "b");
    const got: string[] = [];
    a.declareSubscriber("l/**", (s) => void got.push(`local:${s.payload}`), { allowedOrigin: "session_local" });
    a.declareSubscriber("l/**", (s) => void got.push(`remote:${s.payload}`), { allowedOrigin: "remote" });
    a.declareSubscriber("l/**", (s) => void got.push(`any:${s.payload}`));
    await a.put("l/x", "fromA");
    await b.put("l/x", "fromB");
    await b.put("l/x", "fromBtoRemoteOnly", { allowedDestination: "remote" });
    await a.put("l/x", "fromAtoSelf", { allowedDestination: "session_local" });
    assert.deepEqual(got, [
      "local:fromA",
      "any:fromA",
      "remote:fromB",
      "any:fromB",
      "remote:fromBtoRemoteOnly",
      "any:fromBtoRemoteOnly",
      "local:fromAtoSelf",
      "any:fromAtoSelf",
    ]);
  });

  test("attachments and QoS travel with the sample", async () => {
    const s = new Session(new Router());
    const got: Sample[] = [];
    s.declareSubscriber("att", (x) => void got.push(x));
    await s.put("att", "v", {
      attachment: Buffer.from("meta"),
      qos: { priority: 2, congestionControl: "block", express: true },
    });
    assert.equal(got[0]!.attachment?.toString(), "meta");
    assert.deepEqual(got[0]!.qos, { priority: 2, congestionControl: "block", express: true });
  });

  test("query targets: best_matching takes one complete queryable, all takes every one, all_complete only complete ones", async () => {
    const s = new Session(new Router());
    s.declareQueryable("t/**", (q) => q.reply("t/a", "complete"), { complete: true });
    s.declareQueryable("t/a", (q) => q.reply("t/a", "partial"));
    const opts = { consolidation: "none" as const };
    assert.deepEqual(okSummary(await s.get("t/a", { ...opts, target: "best_matching" })), ["put:t/a:complete"]);
    assert.deepEqual(okSummary(await s.get("t/a", { ...opts, target: "all" })).sort(), [
      "put:t/a:complete",
      "put:t/a:partial",
    ]);
    assert.deepEqual(okSummary(await s.get("t/a", { ...opts, target: "all_complete" })), ["put:t/a:complete"]);
    // `t/**` does not include `**`: only the incomplete-for-this-key answers remain for best_matching.
    assert.deepEqual(okSummary(await s.get("**", { ...opts, target: "all_complete" })), []);
  });

  test("consolidation modes on a DELETE then a PUT of one key and an error reply", async () => {
    const s = new Session(new Router());
    s.declareQueryable("c/k", (q) => {
      q.replyDelete("c/k");
      q.reply("c/k", "v");
      q.replyErr("bad");
    });
    const run = async (consolidation: "none" | "latest" | "monotonic" | "auto"): Promise<string[]> => {
      const out: Reply[] = [];
      await s.getStream("c/k", (r) => void out.push(r), { consolidation });
      return okSummary(out);
    };
    assert.deepEqual(await run("none"), ["delete:c/k:", "put:c/k:v", "err:bad"]);
    assert.deepEqual(await run("latest"), ["err:bad", "put:c/k:v"]);
    assert.deepEqual(await run("auto"), ["err:bad", "put:c/k:v"]);
    // Neither reply has a timestamp: zenoh orders them as equal, and MONOTONIC forwards a reply
    // no older than the last one forwarded for its key.
    assert.deepEqual(await run("monotonic"), ["delete:c/k:", "put:c/k:v", "err:bad"]);
  });

  test("consolidation orders a reply without a timestamp before any stamped one, equal stamps by arrival", async () => {
    const s = new Session(new Router());
    const t1 = new Timestamp(1000n, "A1");
    const t2 = new Timestamp(2000n, "A1");
    s.declareQueryable("o/k", (q) => {
      q.reply("o/k", "t2", { timestamp: t2 });
      q.reply("o/k", "t1", { timestamp: t1 });
      q.reply("o/k", "t2again", { timestamp: t2 });
      q.reply("o/k", "none");
    });
    const run = async (consolidation: "latest" | "monotonic"): Promise<string[]> => {
      const out: Reply[] = [];
      await s.getStream("o/k", (r) => void out.push(r), { consolidation });
      return okSummary(out);
    };
    assert.deepEqual(await run("monotonic"), ["put:o/k:t2", "put:o/k:t2again"]);
    assert.deepEqual(await run("latest"), ["put:o/k:t2again"]);
  });

  test("a query's payload, encoding and attachment reach the queryable; delete replies carry an attachment", async () => {
    const s = new Session(new Router());
    s.declareQueryable("p", (q) => {
      assert.equal(q.payload?.toString(), "body");
      assert.equal(q.encoding, "text/plain");
      assert.equal(q.attachment?.toString(), "att");
      q.replyDelete("p", { attachment: Buffer.from("back") });
    });
    const [r] = await s.get("p", { payload: "body", encoding: "text/plain", attachment: Buffer.from("att") });
    assert.equal(r?.kind, "ok");
    assert.equal(r.kind === "ok" ? r.sample.attachment?.toString() : "", "back");
  });

  test("liveliness: history, PUT on declare, DELETE when the last token goes or its session closes, and get", async () => {
    const router = new Router();
    const owner = new Session(router, "owner");
    const watcher = new Session(router, "watcher");
    const t1 = owner.declareLivelinessToken("live/a");
    const seen: string[] = [];
    watcher.declareLivelinessSubscriber("live/**", (s) => void seen.push(`${s.kind}:${s.key}`), { history: true });
    owner.declareLivelinessToken("live/b");
    assert.deepEqual(
      watcher.livelinessGet("live/*").map((s) => s.key),
      ["live/a", "live/b"],
    );
    t1.undeclare();
    t1.undeclare();
    owner.close();
    assert.deepEqual(seen, ["put:live/a", "put:live/b", "delete:live/a", "delete:live/b"]);
    assert.deepEqual(watcher.livelinessGet("live/**"), []);
  });

  test("matching status and listeners follow subscribers and queryables", async () => {
    const router = new Router();
    const pub = new Session(router, "pub");
    const other = new Session(router, "other");
    const changes: boolean[] = [];
    const l = pub.declareMatchingListener("m/x", "subscribers", (m) => void changes.push(m));
    assert.equal(l.matching, false);
    const sub = other.declareSubscriber("m/*", () => undefined);
    await tick();
    assert.equal(pub.matchingStatus("m/x", "subscribers"), true);
    assert.equal(pub.matchingStatus("m/x", "subscribers", { allowedDestination: "session_local" }), false);
    sub.undeclare();
    await tick();
    assert.deepEqual(changes, [true, false]);
    l.undeclare();
    other.declareQueryable("m/**", () => undefined);
    assert.equal(pub.matchingStatus("m/x", "queryables"), true);
    assert.equal(pub.matchingStatus("m/x", "queryables", { target: "all_complete" }), false);
  });
});

describe("a router's zid", () => {
  test("is kept in zenoh's canonical form, so it equals what peers read off the wire", () => {
    // A random zid whose top byte is 0 once differed from the one a joined router reported.
    assert.equal(new Router({ zid: "00358ca4d285f0fe74b2c4a589ff8591" }).zid, "358CA4D285F0FE74B2C4A589FF8591");
    assert.equal(new Router({ zid: "0000" }).zid, "00");
    assert.equal(new Router({ zid: "0a" }).zid, "0A");
  });
});
