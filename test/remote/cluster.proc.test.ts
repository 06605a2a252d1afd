/**
 * Two real `zest` routers over a real NATS server, a zenoh-ts client on each: samples and
 * queryables cross routers through the fabric; session info, transports and matching status
 * show the other router. (Run `npm run build` first: it starts dist/cli.js.)
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import {
  ConsolidationMode,
  type MatchingStatus,
  type Query,
  type Sample,
  type Session as ZSession,
} from "@eclipse-zenoh/zenoh-ts";
import { type ClientPair, collect, roundTrip, startClientPair } from "./helpers.js";
import { eventually } from "../support/wait.js";

describe("zenoh-ts clients on two routers over NATS", () => {
  let pair: ClientPair;
  let c1: ZSession;
  let c2: ZSession;

  before(async () => {
    pair = await startClientPair(["C1", "C2"]);
    ({ c1, c2 } = pair);
  });
  after(() => pair?.stop());

  test("session info and transports name the other router", async () => {
    let routers: string[] = [];
    const deadline = Date.now() + 5000;
    while (Date.now() < deadline) {
      routers = (await c1.info()).routersZid().map((z) => z.toString());
      if (routers.length === 1) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    assert.deepEqual(routers, ["000000000000000000000000000000c2"]);
    const info = await c1.info();
    assert.equal(info.zid().toString(), "000000000000000000000000000000c1");
    const transports = await info.transports();
    assert.deepEqual(
      transports.map((t) => [t.zid().toString(), t.whatami()]),
      [["000000000000000000000000000000c2", 1]],
    );
    const links = await info.links();
    assert.equal(links.length, 1);
    assert.match(links[0]!.dst(), /^nats\//);
  });

  test("a put on router 1 reaches a subscriber on router 2; matching status sees it across the fabric", async () => {
    const got: string[] = [];
    const sub = await c2.declareSubscriber("x/**", {
      handler: (s: Sample) => void got.push(`${s.keyexpr()}=${s.payload()}`),
    });
    const pub = await c1.declarePublisher("x/k");
    const changes: boolean[] = [];
    const listener = await pub.matchingListener({ handler: (m: MatchingStatus) => void changes.push(m.matching()) });
    // The subscriber's announcement reaches router 1 through NATS.
    await eventually(() => changes.includes(true), 5000, "matching across routers");
    await pub.put("over");
    await eventually(() => got.length === 1, 5000, "sample across routers");
    assert.deepEqual(got, ["x/k=over"]);
    await sub.undeclare();
    await eventually(() => changes.at(-1) === false, 5000, "no match after undeclare");
    await listener.undeclare();
    await pub.undeclare();
  });

  test("a get on router 1 is answered by a queryable on router 2", async () => {
    const q = await c2.declareQueryable("ev/**", {
      handler: async (query: Query) => {
        await query.reply("ev/a", `from C2 ${query.parameters().toString()}`);
        await query.finalize();
      },
    });
    const querier = await c1.declareQuerier("ev/**");
    const deadline = Date.now() + 5000;
    while (!(await querier.matchingStatus()).matching() && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 50));
    assert.deepEqual(await collect(await c1.get("ev/**?p=1", { consolidation: ConsolidationMode.NONE })), [
      "put:ev/a=from C2 p=1",
    ]);
    await querier.undeclare();
    await q.undeclare();
    await roundTrip(c2);
  });
});
