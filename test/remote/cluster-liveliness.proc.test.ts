/**
 * Liveliness across routers: two real `zest` routers over a real NATS server, a zenoh-ts client
 * on each. A token on router 1 is seen by a liveliness subscriber and get on router 2, and dies
 * with router 1 (`kill -9`) within the peer timeout. (Run `npm run build` first.)
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import type { Sample, Session as ZSession } from "@eclipse-zenoh/zenoh-ts";
import { fabricTimings } from "../fabric/helpers.js";
import { type ClientPair, collect, roundTrip, showSample, startClientPair } from "./helpers.js";
import { eventually } from "../support/wait.js";

const PEER_TIMEOUT_MS = 800;
const TIMINGS = fabricTimings({ heartbeatMs: 100, peerTimeoutMs: PEER_TIMEOUT_MS, ackTimeoutMs: 1500 });

describe("liveliness tokens across routers over NATS", () => {
  let pair: ClientPair;
  let c1: ZSession;
  let c2: ZSession;

  before(async () => {
    pair = await startClientPair(["D1", "D2"], TIMINGS);
    ({ c1, c2 } = pair);
  });
  after(() => pair?.stop());

  test("a token on router 1 reaches router 2's subscriber and get; undeclared, router 2 sees the DELETE", async () => {
    const events: string[] = [];
    const sub = await c2
      .liveliness()
      .declareSubscriber("lv/**", { handler: (s: Sample) => void events.push(showSample(s)) });
    const token = await c1.liveliness().declareToken("lv/a");
    await eventually(() => events.length === 1, 5000, "the PUT on router 2");
    assert.deepEqual(events, ["put:lv/a="]);
    assert.deepEqual(await collect(await c2.liveliness().get("lv/**")), ["put:lv/a="]);
    // A subscriber with history on router 2 starts with the token of router 1.
    const late: string[] = [];
    const historic = await c2
      .liveliness()
      .declareSubscriber("lv/*", { history: true, handler: (s: Sample) => void late.push(showSample(s)) });
    await roundTrip(c2);
    await eventually(() => late.length === 1, 3000, "history");
    assert.deepEqual(late, ["put:lv/a="]);
    await token.undeclare();
    await eventually(() => events.length === 2, 5000, "the DELETE on router 2");
    assert.deepEqual(events, ["put:lv/a=", "delete:lv/a"]);
    assert.deepEqual(await collect(await c2.liveliness().get("lv/**")), []);
    await historic.undeclare();
    await sub.undeclare();
  });

  test("a token on each router: each sees the other's; router 1's dies with it (kill -9)", async () => {
    const events: string[] = [];
    const sub = await c2
      .liveliness()
      .declareSubscriber("dead/**", { handler: (s: Sample) => void events.push(showSample(s)) });
    await c1.liveliness().declareToken("dead/r1");
    await c2.liveliness().declareToken("dead/r2");
    await eventually(() => events.length === 2, 5000, "both PUTs on router 2");
    assert.deepEqual(events.sort(), ["put:dead/r1=", "put:dead/r2="]);
    let seen: string[] = [];
    for (const end = Date.now() + 5000; Date.now() < end; await new Promise((r) => setTimeout(r, 50))) {
      seen = await collect(await c1.liveliness().get("dead/**"));
      if (seen.length === 2) break;
    }
    assert.deepEqual(seen, ["put:dead/r1=", "put:dead/r2="]);
    events.length = 0;
    await pair.r1.kill9();
    // Router 2 forgets router 1 after the peer timeout; its token goes with it.
    await eventually(() => events.length === 1, PEER_TIMEOUT_MS * 5, "the DELETE after router 1 died");
    assert.deepEqual(events, ["delete:dead/r1"]);
    assert.deepEqual(await collect(await c2.liveliness().get("dead/**")), ["put:dead/r2="]);
    await sub.undeclare();
  });
});
