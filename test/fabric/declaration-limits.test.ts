/**
 * Declarations another router announces are input like any other (docs/fabric-protocol.md,
 * "Limits"): each key is held to this router's key-expression limits and validated, and one
 * router keeps at most `maxDeclarationsPerPeer` of them. What breaks a rule is dropped and
 * logged; the rest of the message applies. A raw connection to the in-memory bus plays the
 * other router, so it can send what a zest router never would.
 */
import assert from "node:assert/strict";
import { beforeEach, describe, test } from "node:test";
import { pino } from "pino";
import { Router } from "../../src/core/router.js";
import { Session } from "../../src/core/session.js";
import { ManualClock } from "../../src/fabric/clock.js";
import { type Declaration, encodeDeclarations } from "../../src/fabric/envelope.js";
import { MemoryHub } from "../../src/fabric/memory-transport.js";
import { NatsFabric } from "../../src/fabric/nats-fabric.js";
import { DEFAULT_MAX_DECLARATIONS_PER_PEER, PeerTable } from "../../src/fabric/peer-table.js";
import { DECL_SUBJECT, HELLO_SUBJECT } from "../../src/fabric/subjects.js";
import { DEFAULT_KEYEXPR_LIMITS, type KeyExprLimits, keyExprLimits } from "../../src/keyexpr/index.js";
import { FakeRouter, settle, TIMINGS } from "./harness.js";
import { capturingLogger } from "../support/log.js";

const sub = (key: string): Declaration => ({ kind: "subscriber", key, complete: false });
const qbl = (key: string, complete = true): Declaration => ({ kind: "queryable", key, complete });
const token = (key: string): Declaration => ({ kind: "token", key, complete: false });

describe("declarations from another router over the bus", () => {
  let hub: MemoryHub;
  let clock: ManualClock;
  beforeEach(() => {
    hub = new MemoryHub(16 * 1024 * 1024);
    clock = new ManualClock();
  });

  /** Router A (limits: 64 bytes, 8 chunks; at most `max` declarations per router) and a raw peer E1. */
  async function setup(max?: number) {
    const a = new FakeRouter("A1", hub, clock, max === undefined ? {} : { maxDeclarationsPerPeer: max });
    a.keyExprLimits = keyExprLimits({ maxLength: 64, maxChunks: 8 });
    await a.start();
    const raw = hub.connect("E1");
    let ver = 0;
    const announce = async (decls: Declaration[], subject = `${DECL_SUBJECT}.E1`): Promise<void> => {
      raw.publish(subject, encodeDeclarations({ zid: "E1", epoch: 5, ver: ++ver, decls }));
      await settle();
    };
    return { a, announce };
  }

  test("over-limit and malformed keys are dropped; the valid ones of the same message apply", async () => {
    const { a, announce } = await setup();
    const long = `long/${"x".repeat(100)}`;
    const deep = Array.from({ length: 9 }, (_, i) => `c${i}`).join("/");
    await announce([
      sub("ok/sub/**"),
      sub(long), // 105 bytes: over A's 64
      sub(deep), // 9 chunks: over A's 8
      sub("bad//chunk"), // empty chunk
      qbl("a/**/**"), // not canonical
      qbl("ok/q/*"),
      token("bad?token"),
      token("ok/alive"),
    ]);
    const f = a.fabric;
    assert.deepEqual(f.interest("ok/sub/x", "subscriber"), ["E1"]);
    assert.deepEqual(f.interest("ok/q/x", "queryable"), ["E1"]);
    assert.deepEqual(f.completeQueryables("ok/q/x"), ["E1"]);
    assert.deepEqual(f.interest("ok/alive", "token"), ["E1"]);
    assert.deepEqual(f.interest("long/**", "subscriber"), []);
    assert.deepEqual(f.interest("c0/**", "subscriber"), []);
    assert.deepEqual(f.interest("bad/**", "subscriber"), []);
    assert.deepEqual(f.interest("a/**", "queryable"), []);
    assert.deepEqual(f.interest("**", "token"), ["E1"]);
    assert.deepEqual(a.declarationChanges.sort(), [
      "E1 queryable +ok/q/*",
      "E1 subscriber +ok/sub/**",
      "E1 token +ok/alive",
    ]);
    // The router is known and keeps working: a valid change later replaces the set.
    await announce([sub("ok/other")]);
    assert.deepEqual(f.interest("ok/**", "subscriber"), ["E1"]);
    assert.deepEqual(f.interest("ok/sub/x", "subscriber"), []);
    assert.deepEqual(a.detail().routers, ["E1"]);
  });

  test("a key over the default limits is dropped when the host gives none", async () => {
    const a = new FakeRouter("A1", hub, clock);
    await a.start();
    const raw = hub.connect("E1");
    const long = `long/${"x".repeat(DEFAULT_KEYEXPR_LIMITS.maxLength)}`;
    raw.publish(HELLO_SUBJECT, encodeDeclarations({ zid: "E1", epoch: 1, ver: 1, decls: [sub(long), sub("fine/**")] }));
    await settle();
    assert.deepEqual(a.fabric.interest("long/**", "subscriber"), []);
    assert.deepEqual(a.fabric.interest("fine/x", "subscriber"), ["E1"]);
  });

  test("one router keeps at most maxDeclarationsPerPeer declarations; those beyond are dropped", async () => {
    const { a, announce } = await setup(10);
    // Invalid ones do not count against the limit: 10 valid ones are kept, in message order.
    const decls = [sub("bad//one"), ...Array.from({ length: 15 }, (_, i) => sub(`k/${i}`))];
    await announce(decls);
    const f = a.fabric;
    for (let i = 0; i < 10; i++) assert.deepEqual(f.interest(`k/${i}`, "subscriber"), ["E1"], `k/${i}`);
    for (let i = 10; i < 15; i++) assert.deepEqual(f.interest(`k/${i}`, "subscriber"), [], `k/${i}`);
  });

  test("the default limit is 100,000 declarations per router, and a bad one is refused", () => {
    assert.equal(DEFAULT_MAX_DECLARATIONS_PER_PEER, 100_000);
    assert.throws(() => new FakeRouter("A1", hub, clock, { maxDeclarationsPerPeer: 0 }), /maxDeclarationsPerPeer/);
  });
});

describe("the peer table's declaration limits", () => {
  const limits = { keyExpr: keyExprLimits({ maxLength: 32, maxChunks: 4 }), maxPerPeer: 3 };
  const events = { alive() {}, changed() {}, forgotten() {} };

  test("drops are logged once per router as a warning naming the first reason, then at debug", () => {
    const { logger, lines } = capturingLogger("debug");
    const table = new PeerTable(new ManualClock(), 1000, events, logger, limits);
    table.ingest({ zid: "E1", epoch: 1, ver: 1, decls: [sub("a/b/c/d/e"), sub("x"), sub("y"), sub("z"), sub("w")] });
    assert.deepEqual(
      table.get("E1")!.decls.map((d) => d.key),
      ["x", "y", "z"],
    );
    const warns = lines.filter((l) => l.msg === "dropped declarations of another router");
    assert.equal(warns.length, 1);
    assert.equal(warns[0]!.level, 40);
    assert.equal(warns[0]!.zid, "E1");
    assert.equal(warns[0]!.invalid, 1);
    assert.equal(warns[0]!.beyondLimit, 1);
    assert.equal(warns[0]!.kept, 3);
    assert.match(String(warns[0]!.firstInvalid), /subscriber: .*5 chunks, more than the limit of 4/);
    table.ingest({ zid: "E1", epoch: 1, ver: 2, decls: [sub("x".repeat(40))] });
    const again = lines.filter((l) => l.msg === "dropped declarations of another router");
    assert.equal(again.length, 2);
    assert.equal(again[1]!.level, 20, "the second time is debug");
    assert.deepEqual(table.get("E1")!.decls, []);
  });

  test("random declarations never throw, and only valid keys within the limits are indexed", () => {
    let seed = 12345;
    const rand = (n: number): number => {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff;
      return seed % n;
    };
    const alphabet = ["a", "b", "/", "*", "**", "$*", "$", "?", "#", "@", "é", "//"];
    const table = new PeerTable(new ManualClock(), 1000, events, pino({ level: "silent" }), limits);
    for (let ver = 1; ver <= 2000; ver++) {
      const decls: Declaration[] = Array.from({ length: 1 + rand(6) }, () => {
        const key = Array.from({ length: 1 + rand(12) }, () => alphabet[rand(alphabet.length)]).join("");
        return [sub, qbl, token][rand(3)]!(key);
      });
      table.ingest({ zid: "E1", epoch: 1, ver, decls });
      const kept = table.get("E1")!.decls;
      assert.ok(kept.length <= limits.maxPerPeer);
      for (const d of kept) {
        assert.ok(Buffer.byteLength(d.key) <= 32 && d.key.split("/").length <= 4, d.key);
        assert.doesNotThrow(() => table.interest(d.key, d.kind === "store" ? "subscriber" : d.kind));
      }
    }
  });
});

describe("routers with different key-expression limits", () => {
  test("a router holds another's declarations to its own limits, not the sender's", async () => {
    const hub = new MemoryHub();
    // The in-memory bus holds no handle: the real clock's timers alone would let the process exit.
    const keepAlive = setInterval(() => {}, 1000);
    const fabrics: NatsFabric[] = [];
    const routers: Router[] = [];
    const start = async (zid: string, limits: Partial<KeyExprLimits>): Promise<Session> => {
      const fabric = new NatsFabric({ servers: [], ...TIMINGS, transport: async () => hub.connect(zid) });
      const r = new Router({ zid, fabric, keyExprLimits: limits });
      fabrics.push(fabric);
      routers.push(r);
      await r.start();
      return new Session(r);
    };
    try {
      await start("A1", { maxLength: 64 });
      const b = await start("B1", {}); // the defaults: 4096 bytes
      const long = `long/${"x".repeat(100)}`;
      b.declareSubscriber(long, () => {});
      b.declareSubscriber("short/**", () => {});
      const a = fabrics[0]!;
      for (let i = 0; i < 200 && a.interest("short/x", "subscriber").length === 0; i++)
        await new Promise((r) => setTimeout(r, 5));
      assert.deepEqual(a.interest("short/x", "subscriber"), ["B1"]);
      assert.deepEqual(a.interest("long/**", "subscriber"), [], "B1's 105-byte key is over A1's limit");
    } finally {
      for (const r of routers) await r.close();
      clearInterval(keepAlive);
    }
  });
});
