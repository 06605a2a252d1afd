/**
 * What crosses routers besides key, payload, encoding and timestamp (docs/fabric-protocol.md):
 * two real `zest` routers over a real NATS server, a zenoh-ts client on each. Attachments and
 * QoS of samples and replies, a GET body and a zenoh-ts get's payload as query content, and the
 * query targets across routers. (Run `npm run build` first: it starts dist/cli.js.)
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import {
  ConsolidationMode,
  Encoding,
  Priority,
  type Query,
  QueryTarget,
  type Sample,
  type Session as ZSession,
} from "@eclipse-zenoh/zenoh-ts";
import { getWithBody } from "../support/http.js";
import { type ClientPair, collect, roundTrip, startClientPair } from "./helpers.js";
import { eventually } from "../support/wait.js";

describe("what a write or a query carries, across two routers over NATS", () => {
  let pair: ClientPair;
  let c1: ZSession;
  let c2: ZSession;

  before(async () => {
    pair = await startClientPair(["E1", "E2"]);
    ({ c1, c2 } = pair);
  });
  after(() => pair?.stop());

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
    while (!(await querier.matchingStatus()).matching() && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 50));
    await c1.put("att/k", "v", { attachment: "meta", priority: Priority.INTERACTIVE_HIGH });
    await eventually(() => got.length === 1, 5000, "sample across routers");
    assert.equal(got[0]!.attachment()?.toString(), "meta");
    assert.equal(got[0]!.priority(), Priority.INTERACTIVE_HIGH);

    const replies: string[] = [];
    for await (const r of (await c1.get("att/x", {
      payload: "zbody",
      encoding: Encoding.APPLICATION_JSON,
      attachment: "zatt",
    }))!) {
      const ok = r.result() as Sample;
      replies.push(`${ok.payload().toString()} ${ok.attachment()?.toString()}`);
    }
    assert.deepEqual(replies, ["answer reply-att"], "the reply's attachment comes back across routers too");
    const rest = await getWithBody(pair.r1.url, "/att/y", `{"n":3}`, { "content-type": "application/json" });
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
    while (!(await querier.matchingStatus()).matching() && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 50));
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
