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
    { ...config, id: zid, plugins: { rest: { http_port: "none" } } },
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
 * to it; with `withC`, C, a third router of the fabric that did not join.
 */
async function network(withC = false): Promise<{ z: Zest; a: Zest; b: Zest; c: Zest | undefined }> {
  const port = await freePort();
  const z = await zenohRouter(port);
  closing.push(z);
  const hub = new MemoryHub();
  const join = { listen: { endpoints: [] }, connect: { endpoints: [`tcp/127.0.0.1:${port}`] } } as ZestConfig;
  const a = await clustered(hub, "AA", join);
  const b = await clustered(hub, "BB", join);
  const c = withC ? await clustered(hub, "CC", { listen: { endpoints: [] } } as ZestConfig) : undefined;
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
    type JoinStatus = { connect?: { declared?: { queryables: number } } } | undefined;
    const declared = (r: Zest) =>
      (r.doors.find((d) => d.name === "zenoh")?.instance.status?.() as JoinStatus)?.connect?.declared?.queryables;
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
    assert.equal(declared(a), 2);
    assert.equal(declared(b), 1);
    // Declared again when it is no longer complete, withdrawn with the last.
    q.undeclare();
    q = cz.session.declareQueryable("cq/**", (query) => query.reply("cq/x", "from C"));
    await untilPasses(() => assert.equal(onZ().get("cq/**"), false));
    q.undeclare();
    await untilPasses(() => assert.equal(onZ().has("cq/**"), false));
    assert.equal(declared(a), 1);
    // A leaves: B is elected and declares what C holds.
    cz.session.declareQueryable("cq/**", (query) => query.reply("cq/x", "from C"), { complete: true });
    await a.close();
    await untilPasses(() => assert.equal(onZ().get("cq/**"), true));
    assert.equal(declared(b), 2);
    assert.equal(onZ().has("netq/**"), false);
  });
});
