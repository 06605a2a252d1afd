/**
 * zenoh-python 1.10 gets, queryables and queriers through zest, in client and in peer mode
 * (test/support/zenoh-python.ts): the querying session and the queryable's session reach each
 * other only through the router.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import {
  type AgentLine,
  pattern,
  pythonSkip,
  type ReplyJson,
  sha256,
  stackRecords,
  type TimestampStackJson,
  describeEachMode,
  zestForPythonSuite,
} from "../support/zenoh-python.js";

const skip = pythonSkip();

/**
 * The agents' sessions wait up to 2 s (zenoh's default: 1 ms) for room in their link's queue before
 * dropping a message sent with congestion control DROP. zenoh 1.10 sends a queryable's replies and
 * its RESPONSE_FINAL with DROP, and its Data queue holds two batches: on a loaded host the burst
 * tests' queryable dropped some of its own answers (zest's counters: every query sent, those
 * answers never read, each such get ended by zest's timeout), and those gets timed out at 20 s.
 */
const AGENT_CONFIG = { "transport/link/tx/queue/congestion_control/drop/wait_before_drop": "2000000" };

type Replies = { replies: ReplyJson[]; ms: number };

describe("zenoh-python queries through zest", { skip }, () => {
  const py = zestForPythonSuite();

  describeEachMode(
    py,
    2,
    "py",
    ({ a, b, k }) => {
      test("a get reaches the queryable with its parameters, payload, encoding and attachment, and its replies come back whole", async () => {
        await b.call("queryable", {
          name: "q",
          key: k("q/**"),
          replies: [
            { payload: "first", encoding: "text/plain", attachment: "ra" },
            { key: k("q/other"), payload: '{"n":2}', encoding: "application/json" },
          ],
        });
        const r = await a.call<Replies>("get", {
          selector: `${k("q/x")}?arg=1;b=two`,
          payload: "body",
          encoding: "application/json",
          attachment: "qa",
          timeout: 5,
          accept_any: true,
        });
        const query = await b.waitEvent<AgentLine>((e) => e.ev === "query" && e.name === "q");
        assert.equal(query.key, k("q/x"));
        assert.match(String(query.parameters), /arg=1/);
        assert.match(String(query.parameters), /b=two/);
        assert.equal((query.payload as { text: string }).text, "body");
        assert.equal(query.encoding, "application/json");
        assert.equal((query.attachment as { text: string }).text, "qa");
        const oks = r.replies.map((x) => x.ok).filter((x) => x !== undefined);
        assert.equal(oks.length, 2, JSON.stringify(r.replies));
        const first = oks.find((s) => s.key === k("q/x"));
        assert.equal(first?.payload.text, "first");
        assert.equal(first?.encoding, "text/plain");
        assert.equal(first?.attachment?.text, "ra");
        const other = oks.find((s) => s.key === k("q/other"));
        assert.equal(other?.payload.text, '{"n":2}');
        assert.equal(other?.encoding, "application/json");
        await b.call("undeclare", { name: "q" });
      });

      test("error and delete replies arrive as such", async () => {
        await b.call("queryable", {
          name: "qe",
          key: k("qe"),
          replies: [{ err: true, payload: "it broke", encoding: "text/plain" }],
        });
        await b.call("queryable", { name: "qd", key: k("qd"), replies: [{ delete: true }] });
        const e = await a.call<Replies>("get", { selector: k("qe"), timeout: 5 });
        assert.equal(e.replies.length, 1, JSON.stringify(e.replies));
        assert.equal(e.replies[0]?.err?.payload.text, "it broke");
        assert.equal(e.replies[0]?.err?.encoding, "text/plain");
        const d = await a.call<Replies>("get", { selector: k("qd"), timeout: 5 });
        assert.equal(d.replies.length, 1, JSON.stringify(d.replies));
        assert.equal(d.replies[0]?.ok?.kind, "DELETE");
        assert.equal(d.replies[0]?.ok?.key, k("qd"));
        await b.call("undeclare", { name: "qe" });
        await b.call("undeclare", { name: "qd" });
      });

      test("a get with no queryable ends at once with no reply", async () => {
        const r = await a.call<Replies>("get", { selector: k("nobody/**"), timeout: 5 });
        assert.deepEqual(r.replies, []);
        assert.ok(r.ms < 2_000, `the final reply took ${r.ms} ms`);
      });

      test("a querier gets replies and its matching status follows a remote queryable", async () => {
        await a.call("querier", { name: "qr", key: k("qr/x"), timeout: 5 });
        const first = await a.call<{ matching: boolean }>("matching_listen", { name: "qr" });
        assert.equal(first.matching, false);
        await b.call("queryable", { name: "qq", key: k("qr/*"), replies: [{ payload: "from querier's target" }] });
        await a.waitEvent((e) => e.ev === "matching" && e.name === "qr" && e.matching === true);
        for (let i = 0; i < 3; i++) {
          const r = await a.call<Replies>("querier_get", { name: "qr", parameters: `i=${i}` });
          assert.equal(r.replies.length, 1, JSON.stringify(r.replies));
          assert.equal(r.replies[0]?.ok?.payload.text, "from querier's target");
        }
        const queries = b.events<AgentLine>((e) => e.ev === "query" && e.name === "qq");
        assert.deepEqual(
          queries.map((q) => q.parameters),
          ["i=0", "i=1", "i=2"],
        );
        await b.call("undeclare", { name: "qq" });
        await a.waitEvent((e) => e.ev === "matching" && e.name === "qr" && e.matching === false);
        await a.call("undeclare", { name: "qr" });
      });

      test("a querier that targets complete queryables matches a complete queryable only", async () => {
        await a.call("querier", { name: "qc", key: k("qc/x"), target: "ALL_COMPLETE", timeout: 5 });
        assert.equal((await a.call<{ matching: boolean }>("matching_listen", { name: "qc" })).matching, false);
        await b.call("queryable", { name: "inc", key: k("qc/*"), complete: false, replies: [{ payload: "i" }] });
        await new Promise((r) => setTimeout(r, 500));
        assert.equal((await a.call<{ matching: boolean }>("matching_status", { name: "qc" })).matching, false);
        await b.call("queryable", { name: "com", key: k("qc/x"), complete: true, replies: [{ payload: "c" }] });
        try {
          await a.waitEvent((e) => e.ev === "matching" && e.name === "qc" && e.matching === true, 3_000);
          const r = await a.call<Replies>("querier_get", { name: "qc" });
          assert.deepEqual(
            r.replies.map((x) => x.ok?.payload.text),
            ["c"],
          );
        } finally {
          await b.call("undeclare", { name: "inc" });
          await b.call("undeclare", { name: "com" });
          await a.call("undeclare", { name: "qc" });
        }
      });

      test("1,000 gets sent at once each get their 1 KiB reply", async () => {
        await b.call("queryable", { name: "many", key: k("many/*"), replies: [{ payload_size: 1024 }] });
        const r = await a.call<{ oks: number; errs: number; finished: number; errors: unknown[] }>(
          "get_many",
          { selector: k("many/x"), count: 1_000, timeout: 20, wait: 25 },
          30_000,
        );
        await b.call("undeclare", { name: "many" });
        assert.deepEqual({ oks: r.oks, errs: r.errs, finished: r.finished }, { oks: 1_000, errs: 0, finished: 1_000 });
      });

      test("3,000 gets sent at once each get their reply: a burst is pushed back, not refused", async () => {
        await b.call("queryable", { name: "burst", key: k("burst/*"), replies: [{ payload: "r" }] });
        const r = await a.call<{ oks: number; errs: number; finished: number; errors: unknown[] }>(
          "get_many",
          { selector: k("burst/x"), count: 3_000, timeout: 20, wait: 25 },
          30_000,
        );
        await b.call("undeclare", { name: "burst" });
        assert.deepEqual(
          { oks: r.oks, errs: r.errs, finished: r.finished },
          { oks: 3_000, errs: 0, finished: 3_000 },
          JSON.stringify(r.errors),
        );
      });

      test("a cancelled get ends at once, and the session goes on", async () => {
        await b.call("queryable", { name: "slow", key: k("slow"), delay_ms: 1_500, replies: [{ payload: "late" }] });
        const r = await a.call<Replies>("get", { selector: k("slow"), timeout: 10, cancel_after_ms: 200 });
        assert.deepEqual(r.replies, []);
        assert.ok(r.ms < 1_200, `the cancelled get took ${r.ms} ms`);
        const again = await a.call<Replies>("get", { selector: k("slow"), timeout: 10 });
        assert.deepEqual(
          again.replies.map((x) => x.ok?.payload.text),
          ["late"],
        );
        await b.call("undeclare", { name: "slow" });
      });

      test("the timestamp stack of an instrumented get reaches the queryable and comes back with the reply (extension 0x7)", async () => {
        const router = (await a.call<{ routers: string[] }>("info")).routers[0]!;
        await b.call("queryable", { name: "qts", key: k("qts"), replies: [{ payload: "x" }] });
        const r = await a.call<Replies>("get", {
          selector: k("qts"),
          timeout: 5,
          instrument: ["SEND", "ROUTE", "RECEIVE"],
        });
        const q = await b.waitEvent<AgentLine>((e) => e.ev === "query" && e.name === "qts");
        await b.call("undeclare", { name: "qts" });
        // zenohd: SEND and ROUTE at the querier, ROUTE at the router, ROUTE and RECEIVE at the
        // queryable; the reply adds the way back, ending with RECEIVE at the querier.
        const there = stackRecords(q.timestamp_stack as TimestampStackJson | null);
        assert.deepEqual(there[0], ["SEND", a.zid], JSON.stringify(there));
        assert.ok(
          there.some(([p, z]) => p === "ROUTE" && z === router),
          JSON.stringify(there),
        );
        assert.deepEqual(there.at(-1), ["RECEIVE", b.zid]);
        const back = stackRecords(r.replies[0]?.ok?.timestamp_stack ?? null);
        assert.deepEqual(back.slice(0, there.length), there);
        assert.equal(back.filter(([p, z]) => p === "ROUTE" && z === router).length, 2, JSON.stringify(back));
        assert.deepEqual(back.at(-1), ["RECEIVE", a.zid]);
      });

      // Last: the fragmented messages make zest close the sending session (see the todo).
      test("128 KiB query payloads and replies are fragmented and reassembled", async () => {
        const size = 128 * 1024;
        await b.call("queryable", {
          name: "big",
          key: k("big/*"),
          replies: [{ payload_size: size, payload_seed: 3 }],
        });
        for (const i of [0, 1]) {
          const r = await a.call<Replies>("get", {
            selector: k(`big/${i}`),
            payload_size: size + i,
            payload_seed: 5,
            timeout: 4,
          });
          const q = await b.waitEvent<AgentLine>((e) => e.ev === "query" && e.key === k(`big/${i}`), 4_000);
          const qp = q.payload as { len: number; sha256: string };
          assert.equal(qp.len, size + i);
          assert.equal(qp.sha256, sha256(pattern(size + i, 5)));
          assert.equal(r.replies.length, 1, JSON.stringify(r.replies).slice(0, 500));
          assert.equal(r.replies[0]?.ok?.payload.len, size);
          assert.equal(r.replies[0]?.ok?.payload.sha256, sha256(pattern(size, 3)));
        }
        await b.call("undeclare", { name: "big" });
      });
    },
    AGENT_CONFIG,
  );
});
