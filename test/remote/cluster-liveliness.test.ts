/**
 * Liveliness across routers: two real `zest` routers over a real NATS server, a zenoh-ts client
 * on each. A token on router 1 is seen by a liveliness subscriber and get on router 2, and dies
 * with router 1 (`kill -9`) within the peer timeout. (Run `npm run build` first.)
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import type { Sample, Session as ZSession } from "@eclipse-zenoh/zenoh-ts";
import { startNatsCluster, type NatsCluster } from "../support/nats-cluster.js";
import type { ZestProcess } from "../support/zest-process.js";
import { fabricTimings, NO_STORAGES, startRouters } from "../fabric/helpers.js";
import { collect, openClient, roundTrip, showSample, until } from "./helpers.js";

const PEER_TIMEOUT_MS = 800;
const TIMINGS = fabricTimings({ heartbeatMs: 100, peerTimeoutMs: PEER_TIMEOUT_MS, ackTimeoutMs: 1500 });

function locatorOf(z: ZestProcess): string {
  const m = /remote API ws:\/\/(\S+)/.exec(z.stderr());
  if (!m) throw new Error(`no remote API in: ${z.stderr()}`);
  return `ws/${m[1]}`;
}

describe("liveliness tokens across routers over NATS", () => {
  let cluster: NatsCluster;
  let r1: ZestProcess;
  let r2: ZestProcess;
  let c1: ZSession;
  let c2: ZSession;

  before(async () => {
    cluster = await startNatsCluster({ size: 1, jetstream: false });
    [r1, r2] = (await startRouters([
      ["--id", "D1", "--nats", cluster.urls[0]!, "--remote-api-port", "127.0.0.1:0", ...NO_STORAGES, ...TIMINGS],
      ["--id", "D2", "--nats", cluster.urls[0]!, "--remote-api-port", "127.0.0.1:0", ...NO_STORAGES, ...TIMINGS],
    ])) as [ZestProcess, ZestProcess];
    c1 = await openClient(locatorOf(r1));
    c2 = await openClient(locatorOf(r2));
  });
  after(async () => {
    await c1?.close().catch(() => undefined);
    await c2?.close();
    await Promise.all([r1?.stop(), r2?.stop()]);
    await cluster?.stop();
  });

  test("a token on router 1 reaches router 2's subscriber and get; undeclared, router 2 sees the DELETE", async () => {
    const events: string[] = [];
    const sub = await c2.liveliness().declareSubscriber("lv/**", { handler: (s: Sample) => void events.push(showSample(s)) });
    const token = await c1.liveliness().declareToken("lv/a");
    await until(() => events.length === 1, 5000, "the PUT on router 2");
    assert.deepEqual(events, ["put:lv/a="]);
    assert.deepEqual(await collect(await c2.liveliness().get("lv/**")), ["put:lv/a="]);
    // A subscriber with history on router 2 starts with the token of router 1.
    const late: string[] = [];
    const historic = await c2.liveliness().declareSubscriber("lv/*", { history: true, handler: (s: Sample) => void late.push(showSample(s)) });
    await roundTrip(c2);
    await until(() => late.length === 1, 3000, "history");
    assert.deepEqual(late, ["put:lv/a="]);
    await token.undeclare();
    await until(() => events.length === 2, 5000, "the DELETE on router 2");
    assert.deepEqual(events, ["put:lv/a=", "delete:lv/a"]);
    assert.deepEqual(await collect(await c2.liveliness().get("lv/**")), []);
    await historic.undeclare();
    await sub.undeclare();
  });

  test("a token on each router: each sees the other's; router 1's dies with it (kill -9)", async () => {
    const events: string[] = [];
    const sub = await c2.liveliness().declareSubscriber("dead/**", { handler: (s: Sample) => void events.push(showSample(s)) });
    await c1.liveliness().declareToken("dead/r1");
    await c2.liveliness().declareToken("dead/r2");
    await until(() => events.length === 2, 5000, "both PUTs on router 2");
    assert.deepEqual(events.sort(), ["put:dead/r1=", "put:dead/r2="]);
    let seen: string[] = [];
    for (const end = Date.now() + 5000; Date.now() < end; await new Promise((r) => setTimeout(r, 50))) {
      seen = await collect(await c1.liveliness().get("dead/**"));
      if (seen.length === 2) break;
    }
    assert.deepEqual(seen, ["put:dead/r1=", "put:dead/r2="]);
    events.length = 0;
    await r1.kill9();
    // Router 2 forgets router 1 after the peer timeout; its token goes with it.
    await until(() => events.length === 1, PEER_TIMEOUT_MS * 5, "the DELETE after router 1 died");
    assert.deepEqual(events, ["delete:dead/r1"]);
    assert.deepEqual(await collect(await c2.liveliness().get("dead/**")), ["put:dead/r2="]);
    await sub.undeclare();
  });
});
