/**
 * Two real `zest` routers over a real NATS server, a zenoh-ts client on each: samples and
 * queryables cross routers through the fabric; session info, transports and matching status
 * show the other router. (Run `npm run build` first: it starts dist/cli.js.)
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { ConsolidationMode, Encoding, type MatchingStatus, Priority, type Query, QueryTarget, type Sample, type Session as ZSession } from "@eclipse-zenoh/zenoh-ts";
import { getWithBody } from "../support/http.js";
import { startNatsCluster, type NatsCluster } from "../support/nats-cluster.js";
import type { ZestProcess } from "../support/zest-process.js";
import { NO_STORAGES, startRouters } from "../fabric/helpers.js";
import { collect, openClient, roundTrip, until } from "./helpers.js";

function locatorOf(z: ZestProcess): string {
  const m = /remote API ws:\/\/(\S+)/.exec(z.stderr());
  if (!m) throw new Error(`no remote API in: ${z.stderr()}`);
  return `ws/${m[1]}`;
}

describe("zenoh-ts clients on two routers over NATS", () => {
  let cluster: NatsCluster;
  let r1: ZestProcess;
  let r2: ZestProcess;
  let c1: ZSession;
  let c2: ZSession;

  before(async () => {
    cluster = await startNatsCluster({ size: 1, jetstream: false });
    [r1, r2] = (await startRouters([
      ["--id", "C1", "--nats", cluster.urls[0]!, "--remote-api-port", "127.0.0.1:0", ...NO_STORAGES],
      ["--id", "C2", "--nats", cluster.urls[0]!, "--remote-api-port", "127.0.0.1:0", ...NO_STORAGES],
    ])) as [ZestProcess, ZestProcess];
    c1 = await openClient(locatorOf(r1));
    c2 = await openClient(locatorOf(r2));
  });
  after(async () => {
    await c1?.close();
    await c2?.close();
    await Promise.all([r1?.stop(), r2?.stop()]);
    await cluster?.stop();
  });

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
    assert.deepEqual(transports.map((t) => [t.zid().toString(), t.whatami()]), [["000000000000000000000000000000c2", 1]]);
    const links = await info.links();
    assert.equal(links.length, 1);
    assert.match(links[0]!.dst(), /^nats\//);
  });

  test("a put on router 1 reaches a subscriber on router 2; matching status sees it across the fabric", async () => {
    const got: string[] = [];
    const sub = await c2.declareSubscriber("x/**", { handler: (s: Sample) => void got.push(`${s.keyexpr()}=${s.payload()}`) });
    const pub = await c1.declarePublisher("x/k");
    const changes: boolean[] = [];
    const listener = await pub.matchingListener({ handler: (m: MatchingStatus) => void changes.push(m.matching()) });
    // The subscriber's announcement reaches router 1 through NATS.
    await until(() => changes.includes(true), 5000, "matching across routers");
    await pub.put("over");
    await until(() => got.length === 1, 5000, "sample across routers");
    assert.deepEqual(got, ["x/k=over"]);
    await sub.undeclare();
    await until(() => changes.at(-1) === false, 5000, "no match after undeclare");
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
    while (!(await querier.matchingStatus()).matching() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    assert.deepEqual(await collect(await c1.get("ev/**?p=1", { consolidation: ConsolidationMode.NONE })), ["put:ev/a=from C2 p=1"]);
    await querier.undeclare();
    await q.undeclare();
    await roundTrip(c2);
  });

  test("an attachment and QoS cross routers; a GET body and a get's payload reach a queryable on the other router", async () => {
    const got: Sample[] = [];
    const sub = await c2.declareSubscriber("att/**", { handler: (s: Sample) => void got.push(s) });
    const seen: string[] = [];
    const q = await c2.declareQueryable("att/**", {
      handler: async (query: Query) => {
        seen.push(`${query.payload()?.toString()} ${query.encoding()?.toString()} ${query.attachment()?.toString()}`);
        await query.reply(query.keyExpr(), "answer", { attachment: "reply-att" });
        await query.finalize();
      },
    });
    const querier = await c1.declareQuerier("att/**");
    const deadline = Date.now() + 5000;
    while (!(await querier.matchingStatus()).matching() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    await c1.put("att/k", "v", { attachment: "meta", priority: Priority.INTERACTIVE_HIGH });
    await until(() => got.length === 1, 5000, "sample across routers");
    assert.equal(got[0]!.attachment()?.toString(), "meta");
    assert.equal(got[0]!.priority(), Priority.INTERACTIVE_HIGH);

    const replies: string[] = [];
    for await (const r of (await c1.get("att/x", { payload: "zbody", encoding: Encoding.APPLICATION_JSON, attachment: "zatt" }))!) {
      const ok = r.result() as Sample;
      replies.push(`${ok.payload().toString()} ${ok.attachment()?.toString()}`);
    }
    assert.deepEqual(replies, ["answer reply-att"], "the reply's attachment comes back across routers too");
    const rest = await getWithBody(r1.url, "/att/y", `{"n":3}`, { "content-type": "application/json" });
    assert.equal(rest.status, 200);
    assert.deepEqual(seen, ["zbody application/json zatt", '{"n":3} application/json undefined']);
    await querier.undeclare();
    await q.undeclare();
    await sub.undeclare();
    await roundTrip(c2);
  });

  test("best matching: a complete queryable on router 2 answers alone; all_complete asks only it", async () => {
    const answered: string[] = [];
    const qbl = (c: ZSession, name: string, complete: boolean) =>
      c.declareQueryable("bm/**", {
        complete,
        handler: async (query: Query) => {
          answered.push(name);
          await query.reply("bm/a", name);
          await query.finalize();
        },
      });
    const local = await qbl(c1, "local", false);
    const remote = await qbl(c2, "remote complete", true);
    const querier = await c1.declareQuerier("bm/a", { target: QueryTarget.ALL_COMPLETE });
    const deadline = Date.now() + 5000;
    while (!(await querier.matchingStatus()).matching() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    const get = async (target: QueryTarget): Promise<string[]> => {
      answered.length = 0;
      await collect(await c1.get("bm/a", { target, consolidation: ConsolidationMode.NONE }));
      return answered.sort();
    };
    assert.deepEqual(await get(QueryTarget.BEST_MATCHING), ["remote complete"]);
    assert.deepEqual(await get(QueryTarget.ALL_COMPLETE), ["remote complete"]);
    assert.deepEqual(await get(QueryTarget.ALL), ["local", "remote complete"]);
    await querier.undeclare();
    await local.undeclare();
    await remote.undeclare();
    await roundTrip(c2);
  });
});
