/**
 * What the fabric carries besides key, payload, encoding and timestamp (docs/fabric-protocol.md):
 * attachments and QoS of samples and replies, a query's payload, encoding and attachment, and
 * the query targets `best_matching` and `all_complete` across routers. Fabrics on the in-memory
 * bus: first with a clock moved by hand, then under real routers and sessions.
 */
import assert from "node:assert/strict";
import { afterEach, beforeEach, describe, test } from "node:test";
import type { RemoteQueryOptions } from "../../src/core/fabric.js";
import type { Query } from "../../src/core/query.js";
import { Router } from "../../src/core/router.js";
import type { Sample } from "../../src/core/sample.js";
import { Parameters } from "../../src/core/selector.js";
import { Session } from "../../src/core/session.js";
import { ManualClock } from "../../src/fabric/clock.js";
import { MemoryHub } from "../../src/fabric/memory-transport.js";
import { NatsFabric } from "../../src/fabric/nats-fabric.js";
import { cluster, type FakeRouter, sample, TIMINGS } from "./harness.js";

const qos = { priority: 2, congestionControl: "block" as const, express: true };

describe("fabrics on a hand-moved clock", () => {
  let hub: MemoryHub;
  let clock: ManualClock;
  beforeEach(() => {
    hub = new MemoryHub();
    clock = new ManualClock();
  });

  test("a sample's attachment and QoS reach the other router, and so do a reply's", async () => {
    const [a, b] = await cluster(hub, clock, [
      { zid: "A1" },
      { zid: "B1", subs: ["k/**"], qbls: [{ key: "k/**", complete: false }] },
    ]);
    await a!.fabric.publish({ ...sample("k/x", "v"), attachment: Buffer.from("meta"), qos });
    assert.deepEqual(
      b!.delivered.map((s) => [s.payload.toString(), s.attachment?.toString(), s.qos]),
      [["v", "meta", qos]],
    );
    b!.answer = async (_sel, onReply) =>
      onReply({ kind: "ok", sample: { ...sample("k/y", "r"), attachment: Buffer.from("ra"), qos } });
    const replies: Sample[] = [];
    await a!.fabric.query({ key: "k/**", parameters: new Parameters("") }, 500, (r) => {
      if (r.kind === "ok") replies.push(r.sample);
    });
    assert.deepEqual(
      replies.map((s) => [s.key, s.attachment?.toString(), s.qos]),
      [["k/y", "ra", qos]],
    );
  });

  /** Queries `key` from `from` with `options` and returns the routers asked, with what they were given. */
  async function asked(
    from: FakeRouter,
    others: FakeRouter[],
    key: string,
    options: RemoteQueryOptions,
  ): Promise<string[]> {
    const seen: string[] = [];
    for (const o of others) {
      o.answer = async (sel, _onReply, opts) => {
        const c = opts.content;
        seen.push(
          `${o.zid} ${opts.target} ${sel.key} ${c?.payload?.toString() ?? "-"} ${c?.encoding ?? "-"} ${c?.attachment?.toString() ?? "-"}`,
        );
      };
    }
    await from.fabric.query({ key, parameters: new Parameters("") }, 500, () => {}, options);
    return seen.sort();
  }

  test("targets pick routers by their complete queryables; the query's content and target reach each", async () => {
    const [a, d, c, b] = await cluster(hub, clock, [
      { zid: "A1" },
      { zid: "D1", qbls: [{ key: "q/**", complete: true }] },
      { zid: "C1", qbls: [{ key: "q/**", complete: false }] },
      { zid: "B1", qbls: [{ key: "q/x", complete: true }] },
    ]);
    const others = [b!, c!, d!];
    const content = { payload: Buffer.from("body"), encoding: "application/json", attachment: Buffer.from("att") };
    assert.deepEqual(await asked(a!, others, "q/x", { target: "all", content }), [
      "B1 all q/x body application/json att",
      "C1 all q/x body application/json att",
      "D1 all q/x body application/json att",
    ]);
    assert.deepEqual(
      await asked(a!, others, "q/x", { target: "best_matching" }),
      ["B1 best_matching q/x - - -"],
      "the first router (by id) with a complete queryable including the key, alone",
    );
    assert.deepEqual(await asked(a!, others, "q/x", { target: "all_complete" }), [
      "B1 all_complete q/x - - -",
      "D1 all_complete q/x - - -",
    ]);
    assert.deepEqual(await asked(a!, others, "q/y", { target: "all_complete" }), ["D1 all_complete q/y - - -"]);
    assert.deepEqual(
      await asked(a!, others, "q/*", { target: "all_complete" }),
      ["D1 all_complete q/* - - -"],
      "B1's q/x does not include q/*",
    );
    assert.deepEqual(await asked(a!, others, "q/*", { target: "best_matching" }), ["D1 best_matching q/* - - -"]);
    assert.deepEqual(a!.fabric.completeQueryables("q/x"), ["B1", "D1"]);
    // D1 stops being complete, B1 undeclares: no complete queryable left, best matching asks every matching router.
    await d!.declare({ qbls: [{ key: "q/**", complete: false }] });
    await b!.declare({ qbls: [] });
    assert.deepEqual(a!.fabric.completeQueryables("q/x"), []);
    assert.deepEqual(await asked(a!, [c!, d!], "q/x", { target: "best_matching" }), [
      "C1 best_matching q/x - - -",
      "D1 best_matching q/x - - -",
    ]);
    assert.deepEqual(await asked(a!, [c!, d!], "q/x", { target: "all_complete" }), []);
  });
});

test("a query whose content exceeds the bus's payload limit becomes a too_large error reply, and nobody is asked", async () => {
  const hub = new MemoryHub(4096);
  const clock = new ManualClock();
  const [a, b] = await cluster(hub, clock, [{ zid: "A1" }, { zid: "B1", qbls: [{ key: "q/**", complete: false }] }]);
  let asked = 0;
  b!.answer = async () => void asked++;
  const replies: string[] = [];
  await a!.fabric.query(
    { key: "q/x", parameters: new Parameters("") },
    500,
    (r) => void replies.push(r.kind === "err" ? `${r.errorKind}: ${r.payload}` : "ok"),
    {
      content: { attachment: Buffer.alloc(5000) },
    },
  );
  assert.equal(asked, 0);
  assert.equal(replies.length, 1);
  assert.match(
    replies[0]!,
    /^too_large: the query on q\/x \(\d+ bytes\) is larger than NATS accepts between routers \(4096 bytes\)$/,
  );
});

describe("routers and sessions over the in-memory bus", () => {
  let hub: MemoryHub;
  let routers: Router[];
  // The in-memory bus holds no handle: the real clock's timers alone would let the process exit.
  let keepAlive: NodeJS.Timeout;
  beforeEach(() => {
    hub = new MemoryHub();
    routers = [];
    keepAlive = setInterval(() => {}, 1000);
  });
  afterEach(async () => {
    for (const r of routers) await r.close();
    clearInterval(keepAlive);
  });

  async function router(zid: string): Promise<Session> {
    const fabric = new NatsFabric({ servers: [], ...TIMINGS, transport: async () => hub.connect(zid) });
    const r = new Router({ zid, fabric });
    routers.push(r);
    await r.start();
    return new Session(r);
  }

  /** Waits (bounded) until `check` holds: declarations travel asynchronously. */
  async function until(check: () => boolean): Promise<void> {
    for (let i = 0; i < 200 && !check(); i++) await new Promise((r) => setTimeout(r, 5));
    assert.ok(check(), "condition not reached");
  }

  test("a put's attachment and QoS reach a subscriber on the other router", async () => {
    const s1 = await router("A1");
    const s2 = await router("B1");
    const got: Sample[] = [];
    s2.declareSubscriber("k/**", (s) => void got.push(s));
    await until(() => s1.matchingStatus("k/x", "subscribers"));
    await s1.put("k/x", "v", { attachment: Buffer.from("meta"), qos });
    assert.deepEqual(
      got.map((s) => [s.payload.toString(), s.attachment?.toString(), s.qos]),
      [["v", "meta", qos]],
    );
  });

  test("a get's payload, encoding and attachment reach a queryable on the other router", async () => {
    const s1 = await router("A1");
    const s2 = await router("B1");
    let seen: Query | undefined;
    s2.declareQueryable("q/**", (q) => {
      seen = q;
      q.reply("q/a", "ok", { attachment: Buffer.from("back") });
    });
    await until(() => s1.matchingStatus("q/a", "queryables"));
    const replies = await s1.get("q/a", {
      payload: '{"n":3}',
      encoding: "application/json",
      attachment: Buffer.from("att"),
    });
    assert.equal(seen?.payload?.toString(), '{"n":3}');
    assert.equal(seen?.encoding, "application/json");
    assert.equal(seen?.attachment?.toString(), "att");
    assert.deepEqual(
      replies.map((r) => r.kind === "ok" && [r.sample.payload.toString(), r.sample.attachment?.toString()]),
      [["ok", "back"]],
    );
  });

  test("best matching: a complete queryable on another router answers alone; a storage without `complete` does not count", async () => {
    const s1 = await router("A1");
    const s2 = await router("B1");
    const s3 = await router("C1");
    const answered: string[] = [];
    const qbl = (s: Session, name: string, complete: boolean, storage = false) =>
      s.declareQueryable(
        "q/**",
        (q) => {
          answered.push(name);
          q.reply("q/a", name);
        },
        { complete, storage },
      );
    qbl(s1, "local", false);
    // As the storage service declares a storage without its `complete` option (test/storage/manager.test.ts).
    qbl(s2, "storage", false, true);
    await until(() => routers[0]!.fabric!.interest!("q/a", "queryable").length === 1);
    const get = async (target: "best_matching" | "all" | "all_complete"): Promise<string[]> => {
      answered.length = 0;
      await s1.get("q/a", { target, consolidation: "none" });
      return answered.sort();
    };
    assert.deepEqual(
      await get("best_matching"),
      ["local", "storage"],
      "a storage is not complete: every matching queryable answers",
    );
    assert.deepEqual(await get("all_complete"), []);
    assert.equal(s1.matchingStatus("q/a", "queryables", { target: "all_complete" }), false);
    const complete = qbl(s3, "complete", true);
    await until(() => s1.matchingStatus("q/a", "queryables", { target: "all_complete" }));
    assert.deepEqual(await get("best_matching"), ["complete"], "the complete queryable on C1 answers alone");
    assert.deepEqual(await get("all_complete"), ["complete"]);
    assert.deepEqual(await get("all"), ["complete", "local", "storage"]);
    const here = qbl(s1, "complete here", true);
    assert.deepEqual(await get("best_matching"), ["complete here"], "one on this router comes first");
    here.undeclare();
    complete.undeclare();
    await until(() => !s1.matchingStatus("q/a", "queryables", { target: "all_complete" }));
    assert.deepEqual(await get("best_matching"), ["local", "storage"]);
  });
});
