/**
 * Two zest routers of one fabric (an in-process NATS bus), both joined to the same zenoh router
 * (docs/zenoh-network.md, "Clusters"): nothing goes round between them through the zenoh router.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { silentLogger } from "../../src/core/log.js";
import type { Sample } from "../../src/core/sample.js";
import { defaultStartOptions } from "../../src/defaults.js";
import { MemoryHub } from "../../src/fabric/memory-transport.js";
import { NatsFabric } from "../../src/fabric/nats-fabric.js";
import { startZest, type Zest } from "../../src/runtime.js";
import type { ZestConfig } from "../../src/zest-config.js";
import { untilPasses } from "../support/assert.js";
import { closeAfterFile, zenohRouter } from "./join/routers.js";
import { freePort } from "../support/ports.js";

const closing = closeAfterFile();

async function clustered(hub: MemoryHub, zid: string, config: ZestConfig): Promise<Zest> {
  const z = await startZest(
    { ...config, id: zid, plugins: { ...config.plugins, rest: { http_port: "none" } } },
    {
      ...defaultStartOptions(),
      logger: silentLogger,
      fabric: () => new NatsFabric({ servers: [], logger: silentLogger, transport: async () => hub.connect(zid) }),
    },
  );
  closing.push(z);
  return z;
}

/**
 * Z, a zenoh router (a zest router's listener), and A and B, two routers of one fabric both joined
 * to it; with `withC`, C, a third router of the fabric that did not join; each with `config` too.
 */
async function network(
  withC = false,
  config: ZestConfig = {},
): Promise<{ z: Zest; a: Zest; b: Zest; c: Zest | undefined }> {
  const port = await freePort();
  const z = await zenohRouter(port, config);
  closing.push(z);
  const hub = new MemoryHub();
  const join = { ...config, listen: { endpoints: [] }, connect: { endpoints: [`tcp/127.0.0.1:${port}`] } };
  const a = await clustered(hub, "AA", join as ZestConfig);
  const b = await clustered(hub, "BB", join as ZestConfig);
  const c = withC ? await clustered(hub, "CC", { ...config, listen: { endpoints: [] } } as ZestConfig) : undefined;
  // Both joined, each knows the others through the fabric and that the other joined.
  await untilPasses(() => {
    assert.deepEqual(a.router.connectivity().peers(), withC ? ["BB", "CC"] : ["BB"]);
    assert.deepEqual(b.router.connectivity().peers(), withC ? ["AA", "CC"] : ["AA"]);
    assert.equal(z.doors.find((d) => d.name === "zenoh")?.instance.sessions?.().length, 2);
    for (const r of [a, b, c]) if (r) assert.equal(r.session.livelinessGet("@zest/joined/*").length, 2);
  });
  return { z, a, b, c };
}

/** Collects the samples on `key` at each of `routers`' sessions. */
function collect(key: string, ...routers: Zest[]): Sample[][] {
  return routers.map((r) => {
    const got: Sample[] = [];
    r.session.declareSubscriber(key, (s) => void got.push(s));
    return got;
  });
}

const settle = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** What router `r` declared to the zenoh router it joined, by kind (its zenoh door's status). */
function declared(r: Zest): { subscribers: number; queryables: number; tokens: number } | undefined {
  type JoinStatus = { connect?: { declared?: { subscribers: number; queryables: number; tokens: number } } };
  const status = r.doors.find((d) => d.name === "zenoh")?.instance.status?.() as JoinStatus | undefined;
  return status?.connect?.declared;
}

/** No storage anywhere: the default one on ** would want every key. */
const NO_STORAGE = { plugins: { storage_manager: { storages: {} } } } as ZestConfig;

describe("two routers of one fabric joined to one zenoh router", () => {
  test("a put on one reaches the zenoh side and the other router once: no loop through the zenoh router", async () => {
    const { z, a, b } = await network();
    const onZ: Sample[] = [];
    z.session.declareSubscriber("loop/**", (s) => void onZ.push(s));
    const onB: Sample[] = [];
    b.session.declareSubscriber("loop/**", (s) => void onB.push(s));
    // The subscribers are declared along the way (Z to A, B to the fabric): put until Z has one.
    let n = 0;
    await untilPasses(async () => {
      await a.session.put(`loop/warm${++n}`, "w");
      assert.ok(onZ.length > 0);
    });
    await settle(300);
    onZ.length = 0;
    onB.length = 0;
    await a.session.put("loop/x", "once");
    await settle(1_000);
    assert.deepEqual(
      onZ.map((s) => s.key),
      ["loop/x"],
    );
    assert.deepEqual(
      onB.map((s) => s.key),
      ["loop/x"],
    );
  });

  test("a get on one asks the zenoh side's queryable once, and ends at once", async () => {
    const { z, a } = await network();
    let asked = 0;
    z.session.declareQueryable("loopq/a", (q) => {
      asked++;
      q.reply("loopq/a", "answer");
    });
    await untilPasses(async () => assert.equal((await a.session.get("loopq/a")).length, 1));
    asked = 0;
    const t0 = Date.now();
    const replies = await a.session.get("loopq/a");
    assert.equal(replies.length, 1);
    assert.ok(Date.now() - t0 < 2_000, `${Date.now() - t0} ms`);
    await settle(500);
    assert.equal(asked, 1);
  });

  test("a get on a router that did not join asks the zenoh side's queryable once, through the elected router", async () => {
    const { z, a, c } = await network(true);
    let asked = 0;
    z.session.declareQueryable("loopc/**", (q) => {
      asked++;
      q.reply("loopc/net", "from the network");
    });
    await a.session.put("loopc/fabric", "from A");
    const cz = c as Zest;
    // Z declares its queryable to A and B on its own time, then A and B to the fabric.
    await untilPasses(async () =>
      assert.deepEqual(
        (await cz.session.get("loopc/**")).map((r) => (r.kind === "ok" ? r.sample.key : r.kind)),
        ["loopc/fabric", "loopc/net"],
      ),
    );
    await settle(300);
    asked = 0;
    const replies = await cz.session.get("loopc/**", { consolidation: "none" });
    await settle(500);
    assert.equal(asked, 1);
    assert.equal(replies.filter((r) => r.kind === "ok" && r.sample.key === "loopc/net").length, 1);
  });

  test("a put on the zenoh side reaches each router once", async () => {
    const { z, a, b } = await network();
    const onA: Sample[] = [];
    const onB: Sample[] = [];
    a.session.declareSubscriber("net/**", (s) => void onA.push(s));
    b.session.declareSubscriber("net/**", (s) => void onB.push(s));
    await untilPasses(async () => {
      await z.session.put("net/warm", "w");
      assert.ok(onA.length > 0 && onB.length > 0);
    });
    await settle(300);
    onA.length = 0;
    onB.length = 0;
    await z.session.put("net/y", "from the network");
    await settle(1_000);
    assert.equal(onA.length, 1);
    assert.equal(onB.length, 1);
  });

  test("puts on the zenoh side on many keys reach each router once, a router that did not join too", async () => {
    // In order: one router (the lowest zid, A) passes every key on to C.
    const { z, a, b, c } = await network(true);
    const got = collect("many/**", a, b, c as Zest);
    await untilPasses(async () => {
      await z.session.put("many/warm", "w");
      for (const g of got) assert.ok(g.length > 0);
    });
    await settle(300);
    for (const g of got) g.length = 0;
    const keys = Array.from({ length: 40 }, (_, i) => `many/k${i}`);
    for (const k of keys) await z.session.put(k, "from the network");
    await settle(1_000);
    for (const g of got)
      assert.deepEqual(
        g.map((s) => s.key),
        keys,
      );
  });

  test("puts on a router that did not join reach the zenoh side once", async () => {
    const { z, a, b, c } = await network(true);
    const [onZ, onA, onB] = collect("fromc/**", z, a, b);
    const cz = c as Zest;
    let n = 0;
    await untilPasses(async () => {
      await cz.session.put(`fromc/warm${++n}`, "w");
      assert.ok((onZ as Sample[]).length > 0);
    });
    await settle(300);
    for (const g of [onZ, onA, onB]) (g as Sample[]).length = 0;
    const keys = Array.from({ length: 40 }, (_, i) => `fromc/k${i}`);
    for (const k of keys) await cz.session.put(k, "from C");
    await settle(1_000);
    for (const g of [onZ, onA, onB])
      assert.deepEqual(
        (g as Sample[]).map((s) => s.key),
        keys,
      );
  });

  test("when one joined router leaves the network, the other passes everything on", async () => {
    const { z, a, b, c } = await network(true);
    const got = collect("left/**", b, c as Zest);
    await a.close();
    await untilPasses(() => assert.equal((c as Zest).session.livelinessGet("@zest/joined/*").length, 1));
    await untilPasses(async () => {
      await z.session.put("left/warm", "w");
      for (const g of got) assert.ok(g.length > 0);
    });
    await settle(300);
    for (const g of got) g.length = 0;
    const keys = Array.from({ length: 20 }, (_, i) => `left/k${i}`);
    for (const k of keys) await z.session.put(k, "v");
    await settle(1_000);
    for (const g of got)
      assert.deepEqual(
        g.map((s) => s.key),
        keys,
      );
  });
  test("the elected router declares the queryables of a router that did not join to the zenoh side, by key expression and completeness; nobody declares back the zenoh side's own", async () => {
    const { z, a, b, c } = await network(true);
    const cz = c as Zest;
    const queryables = (r: Zest) => declared(r)?.queryables;
    const onZ = () => z.session.matchingQueryables("**", { allowedDestination: "remote" });
    // The zenoh side's own queryable: A and B hold it for the network and announce it to the fabric.
    z.session.declareQueryable("netq/**", (q) => q.reply("netq/a", "from Z"));
    let q = cz.session.declareQueryable("cq/**", (query) => query.reply("cq/x", "from C"), { complete: true });
    await untilPasses(() => assert.equal(onZ().get("cq/**"), true));
    await untilPasses(async () =>
      assert.deepEqual(
        (await z.session.get("cq/x")).map((r) => (r.kind === "ok" ? r.sample.key : r.kind)),
        ["cq/x"],
      ),
    );
    assert.equal(onZ().has("netq/**"), false);
    // A (the lowest zid) declares its own default storage on ** and C's cq/**; B only its own.
    assert.equal(queryables(a), 2);
    assert.equal(queryables(b), 1);
    // Declared again when it is no longer complete, withdrawn with the last.
    q.undeclare();
    q = cz.session.declareQueryable("cq/**", (query) => query.reply("cq/x", "from C"));
    await untilPasses(() => assert.equal(onZ().get("cq/**"), false));
    q.undeclare();
    await untilPasses(() => assert.equal(onZ().has("cq/**"), false));
    assert.equal(queryables(a), 1);
    // A leaves: B is elected and declares what C holds.
    cz.session.declareQueryable("cq/**", (query) => query.reply("cq/x", "from C"), { complete: true });
    await a.close();
    await untilPasses(() => assert.equal(onZ().get("cq/**"), true));
    assert.equal(queryables(b), 2);
    assert.equal(onZ().has("netq/**"), false);
  });

  test("the elected router declares the subscribers of a router that did not join to the zenoh side by key expression, withdrawn with the last; a joined router declares its own; nobody declares back the zenoh side's own", async () => {
    const { z, a, b, c } = await network(true, NO_STORAGE);
    const cz = c as Zest;
    const onZ = () => z.session.matchingKeys("**", "subscribers", { allowedDestination: "remote" }).sort();
    const wanted = (key: string) => z.session.matchingStatus(key, "subscribers", { allowedDestination: "remote" });
    // The zenoh side's own subscriber: A and B hold it for the network and announce it to the fabric.
    z.session.declareSubscriber("netsub/**", () => undefined);
    const got: Sample[] = [];
    let sub = cz.session.declareSubscriber("csub/**", (s) => void got.push(s));
    await untilPasses(() => assert.deepEqual(onZ(), ["csub/**"]));
    // A key no zest router wants is not declared to the zenoh side (one ** made every key wanted).
    assert.equal(wanted("nobody/x"), false);
    assert.equal(wanted("csub/x"), true);
    // A (the lowest zid) declares C's; B declares nothing of C's.
    assert.equal(declared(a)?.subscribers, 1);
    assert.equal(declared(b)?.subscribers, 0);
    // A put on the zenoh side on C's key reaches C once, through A.
    await z.session.put("csub/x", "from the network");
    await untilPasses(() => assert.equal(got.length, 1));
    await settle(300);
    assert.deepEqual(
      got.map((s) => s.key),
      ["csub/x"],
    );
    // B's own subscriber: B declares it, A does not declare it again; the same key on C adds nothing.
    const bSub = b.session.declareSubscriber("bsub/**", () => undefined);
    const cSame = cz.session.declareSubscriber("csub/**", () => undefined);
    await untilPasses(() => assert.deepEqual(onZ(), ["bsub/**", "csub/**"]));
    await settle(300);
    assert.equal(declared(a)?.subscribers, 1);
    assert.equal(declared(b)?.subscribers, 1);
    // Withdrawn when the last on that key expression goes.
    sub.undeclare();
    await settle(300);
    assert.deepEqual(onZ(), ["bsub/**", "csub/**"]);
    cSame.undeclare();
    bSub.undeclare();
    await untilPasses(() => assert.deepEqual(onZ(), []));
    assert.equal(declared(a)?.subscribers, 0);
    // A leaves the network: B is elected and declares what C wants.
    sub = cz.session.declareSubscriber("csub/**", () => undefined);
    await untilPasses(() => assert.deepEqual(onZ(), ["csub/**"]));
    await a.close();
    await untilPasses(() => assert.equal(declared(b)?.subscribers, 1));
    await untilPasses(() => assert.deepEqual(onZ(), ["csub/**"]));
    assert.equal(wanted("nobody/x"), false);
  });

  test("the elected router declares the tokens of a router that did not join to the zenoh side; a joined router only its own, never the zenoh side's", async () => {
    const { z, a, b, c } = await network(true, NO_STORAGE);
    const cz = c as Zest;
    const alive = () => z.session.livelinessGet("**").map((s) => s.key);
    const zToken = z.session.declareLivelinessToken("ztok/1");
    // A and B hold the zenoh side's token for it, and announce it to the fabric.
    await untilPasses(() => {
      assert.deepEqual(a.session.livelinessGet("ztok/**").length, 1);
      assert.deepEqual(b.session.livelinessGet("ztok/**").length, 1);
    });
    const cToken = cz.session.declareLivelinessToken("ctok/1");
    const bToken = b.session.declareLivelinessToken("btok/1");
    await untilPasses(() => assert.deepEqual(alive(), ["btok/1", "ctok/1", "ztok/1"]));
    await settle(300);
    // A declares C's token, B its own; neither declares Z's back nor the other's.
    assert.equal(declared(a)?.tokens, 1);
    assert.equal(declared(b)?.tokens, 1);
    // Z's token gone from Z is gone for good: no joined router keeps it alive there.
    zToken.undeclare();
    await untilPasses(() => assert.deepEqual(alive(), ["btok/1", "ctok/1"]));
    await settle(300);
    assert.deepEqual(alive(), ["btok/1", "ctok/1"]);
    cToken.undeclare();
    bToken.undeclare();
    await untilPasses(() => assert.deepEqual(alive(), []));
    assert.equal(declared(a)?.tokens, 0);
  });

  test("a token the zenoh side and a joined router's own client both hold stays alive on the zenoh side when the zenoh side's copy goes", async () => {
    const { z, a } = await network(false, NO_STORAGE);
    const alive = () => z.session.livelinessGet("both/**").map((s) => s.key);
    const zToken = z.session.declareLivelinessToken("both/1");
    await untilPasses(() => assert.equal(a.session.livelinessGet("both/**").length, 1));
    const aToken = a.session.declareLivelinessToken("both/1");
    await settle(300);
    zToken.undeclare();
    // A's own client still holds it: A declares it to the zenoh side once the zenoh side's copy goes.
    await untilPasses(() => assert.deepEqual(alive(), ["both/1"]));
    await settle(300);
    assert.deepEqual(alive(), ["both/1"]);
    // Gone from A's client, though alive at A through B's copy: A withdraws it, and it is gone.
    aToken.undeclare();
    await untilPasses(() => assert.deepEqual(alive(), []));
    assert.equal(declared(a)?.tokens, 0);
  });
});
