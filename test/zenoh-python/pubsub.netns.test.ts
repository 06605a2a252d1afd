/**
 * zenoh-python 1.10 sessions publishing and subscribing through zest, in client and in peer mode
 * (test/support/zenoh-python.ts): two sessions that reach each other only through the router.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import {
  type Agent,
  pattern,
  pythonSkip,
  REFERENCE_ROUTER,
  type SampleEvent,
  type SampleJson,
  sha256,
  stackRecords,
  describeEachMode,
  zestForPythonSuite,
} from "../support/zenoh-python.js";

const skip = pythonSkip();

/** The samples subscriber `name` of `agent` received so far on `key`. */
function samplesOf(agent: Agent, name: string, key?: string): SampleEvent[] {
  return agent.events<SampleEvent>((e) => e.ev === "sample" && e.name === name && (key === undefined || e.key === key));
}

/** Waits until subscriber `name` has `n` samples, then a little longer to catch extra ones. */
async function nSamples(agent: Agent, name: string, n: number, timeoutMs = 10_000): Promise<SampleEvent[]> {
  const deadline = Date.now() + timeoutMs;
  while (samplesOf(agent, name).length < n && Date.now() < deadline) await sleep(20);
  await sleep(200);
  return samplesOf(agent, name);
}

describe("zenoh-python pub/sub through zest", { skip }, () => {
  const py = zestForPythonSuite();

  describeEachMode(py, 2, "py", ({ a, b, k }) => {
    test("both sessions see zest as their router and not each other", {
      skip: REFERENCE_ROUTER !== undefined,
    }, async () => {
      // zenoh writes a zid as a number, without leading zeros: zest's 0739… is its 739….
      const zid = /router ([0-9A-F]+)/.exec(py.zest.stderr())?.[1]?.toLowerCase().replace(/^0+/, "");
      for (const agent of [a, b]) {
        const info = await agent.call<{ routers: string[]; peers: string[] }>("info");
        assert.deepEqual(info.routers, [zid]);
        assert.deepEqual(info.peers, []);
      }
    });

    test("a put and a delete reach a subscriber of the other session once, with the router's timestamp", async () => {
      await b.call("sub", { name: "put", key: k("put/**") });
      await a.call("put", { key: k("put/a"), payload: "hello" });
      const s = await b.waitSample("put", k("put/a"));
      assert.equal(s.kind, "PUT");
      assert.equal(s.payload.text, "hello");
      assert.equal(s.encoding, "zenoh/bytes");
      assert.ok(s.timestamp, "zest stamps what a client sends without a timestamp");
      await a.call("delete", { key: k("put/a") });
      const d = await b.waitEvent<SampleEvent>((e) => e.name === "put" && e.kind === "DELETE");
      assert.equal(d.key, k("put/a"));
      await sleep(200);
      assert.equal(samplesOf(b, "put").length, 2);
      await b.call("undeclare", { name: "put" });
    });

    test("two subscribers of one session matching one key get each sample once (routing once per face)", async () => {
      await b.call("sub", { name: "w1", key: k("wild/*/x") });
      await b.call("sub", { name: "w2", key: k("wild/**") });
      for (let i = 0; i < 5; i++) await a.call("put", { key: k(`wild/${i}/x`), payload: String(i) });
      const w1 = await nSamples(b, "w1", 5);
      const w2 = await nSamples(b, "w2", 5);
      await b.call("undeclare", { name: "w1" });
      await b.call("undeclare", { name: "w2" });
      assert.deepEqual(
        w1.map((s) => s.payload.text),
        ["0", "1", "2", "3", "4"],
      );
      assert.deepEqual(
        w2.map((s) => s.payload.text),
        ["0", "1", "2", "3", "4"],
      );
    });

    test("a publisher's matching status follows a remote subscriber", async () => {
      await a.call("pub", { name: "mp", key: k("match/x") });
      const first = await a.call<{ matching: boolean }>("matching_listen", { name: "mp" });
      assert.equal(first.matching, false);
      await b.call("sub", { name: "ms", key: k("match/*") });
      await a.waitEvent((e) => e.ev === "matching" && e.name === "mp" && e.matching === true);
      assert.equal((await a.call<{ matching: boolean }>("matching_status", { name: "mp" })).matching, true);
      await a.call("pub_put", { name: "mp", payload: "matched" });
      assert.equal((await b.waitSample("ms", k("match/x"))).payload.text, "matched");
      await b.call("undeclare", { name: "ms" });
      await a.waitEvent((e) => e.ev === "matching" && e.name === "mp" && e.matching === false);
      await a.call("undeclare", { name: "mp" });
    });

    test("encodings and attachments arrive intact, from a put and from a publisher", async () => {
      await b.call("sub", { name: "enc", key: k("enc/**") });
      const binary = Buffer.from(Array.from({ length: 256 }, (_, i) => i)).toString("base64");
      const cases = [
        { encoding: "text/plain", payload: "text" },
        { encoding: "text/plain;charset=utf-8", payload: "t\u00e9xt" },
        { encoding: "application/json", payload: '{"a":[1,2]}' },
        { encoding: "zenoh/bytes", payload: "raw" },
        { encoding: "application/x-custom-thing", payload: "custom" },
        { encoding: "zenoh/string;my-schema", payload: "with a schema" },
      ];
      for (const [i, c] of cases.entries()) await a.call("put", { key: k(`enc/${i}`), ...c, attachment_b64: binary });
      await a.call("pub", { name: "ep", key: k("enc/pub"), encoding: "application/yaml" });
      await a.call("pub_put", { name: "ep", payload: "a: 1", attachment: "meta=1" });
      for (const [i, c] of cases.entries()) {
        const s = await b.waitSample("enc", k(`enc/${i}`));
        assert.equal(s.encoding, c.encoding);
        assert.equal(s.payload.text, c.payload);
        assert.equal(s.attachment?.b64, binary);
      }
      const p = await b.waitSample("enc", k("enc/pub"));
      assert.equal(p.encoding, "application/yaml");
      assert.equal(p.attachment?.text, "meta=1");
      await a.call("undeclare", { name: "ep" });
      await b.call("undeclare", { name: "enc" });
    });

    test("priority, congestion control and express arrive unchanged", async () => {
      await b.call("sub", { name: "qos", key: k("qos/**") });
      const priorities = [
        "REAL_TIME",
        "INTERACTIVE_HIGH",
        "INTERACTIVE_LOW",
        "DATA_HIGH",
        "DATA",
        "DATA_LOW",
        "BACKGROUND",
      ];
      const sent: Array<{ key: string; priority: string; congestion: string; express: boolean }> = [];
      for (const priority of priorities)
        for (const congestion of ["DROP", "BLOCK"])
          for (const express of [false, true]) {
            const key = k(`qos/${priority}/${congestion}/${express}`);
            sent.push({ key, priority, congestion, express });
            await a.call("put", { key, payload: "q", priority, congestion, express });
          }
      const got = await nSamples(b, "qos", sent.length);
      await b.call("undeclare", { name: "qos" });
      const seen = (s: SampleJson) => ({
        key: s.key,
        priority: s.priority,
        congestion: s.congestion,
        express: s.express,
      });
      assert.deepEqual(
        got.map(seen).sort((x, y) => x.key.localeCompare(y.key)),
        sent.sort((x, y) => x.key.localeCompare(y.key)),
      );
    });

    test("1,000 puts with congestion control BLOCK all arrive, in order", async () => {
      await b.call("sub", { name: "many", key: k("many") });
      await a.call("put", { key: k("many"), count: 1_000, numbered: true, congestion: "BLOCK" }, 20_000);
      const got = await nSamples(b, "many", 1_000);
      await b.call("undeclare", { name: "many" });
      assert.equal(got.length, 1_000);
      assert.ok(
        got.every((s, i) => s.payload.text === String(i)),
        "out of order",
      );
    });

    test("a ring-channel subscriber keeps the last samples until pulled", async () => {
      await b.call("sub", { name: "ring", key: k("ring/x"), ring: 3 });
      for (let i = 0; i < 10; i++) await a.call("put", { key: k("ring/x"), payload: String(i) });
      // The ring holds the last three once all ten arrived: 7, 8, 9.
      let pulled: SampleJson[] = [];
      const deadline = Date.now() + 10_000;
      for (;;) {
        await sleep(300);
        const r = await b.call<{ samples: SampleJson[] }>("drain", { name: "ring" });
        pulled = r.samples;
        if (pulled.at(-1)?.payload.text === "9" || Date.now() > deadline) break;
        // Not all arrived yet: put the rest again is not needed, they are in flight.
      }
      assert.deepEqual(
        pulled.map((s) => s.payload.text),
        ["7", "8", "9"],
      );
      const empty = await b.call<{ samples: SampleJson[] }>("drain", { name: "ring" });
      assert.deepEqual(empty.samples, []);
      await b.call("undeclare", { name: "ring" });
    });

    test("source info set by the publisher reaches the subscriber unchanged", async () => {
      await b.call("sub", { name: "si", key: k("si") });
      await a.call("put", { key: k("si"), payload: "x", source_sn: 42 });
      const s = await b.waitSample("si", k("si"));
      await b.call("undeclare", { name: "si" });
      assert.deepEqual(s.source_info, { zid: a.zid, eid: s.source_info?.eid, sn: 42 });
    });

    test("the timestamp stack of an instrumented put is forwarded, with the router's record (extension 0x7)", async () => {
      const router = (await a.call<{ routers: string[] }>("info")).routers[0]!;
      await b.call("sub", { name: "ts", key: k("tstack") });
      await a.call("put", { key: k("tstack"), payload: "x", instrument: ["SEND", "ROUTE", "RECEIVE"] });
      const s = await b.waitSample("ts", k("tstack"));
      await b.call("undeclare", { name: "ts" });
      // zenohd: SEND and ROUTE at the publisher, ROUTE at the router, ROUTE and RECEIVE at the
      // subscriber, each with the timestamp of the node that wrote it.
      const records = stackRecords(s.timestamp_stack);
      assert.deepEqual(records[0], ["SEND", a.zid], JSON.stringify(records));
      assert.ok(
        records.some(([p, z]) => p === "ROUTE" && z === router),
        JSON.stringify(records),
      );
      assert.deepEqual(records.at(-1), ["RECEIVE", b.zid]);
    });

    test("the session goes on after a fragmented put: a small put after a 128 KiB one arrives", async () => {
      await b.call("sub", { name: "after", key: k("after/*") });
      await a.call("put", { key: k("after/big"), payload_size: 128 * 1024, congestion: "BLOCK" });
      await a.call("put", { key: k("after/small"), payload: "still here" });
      const s = await b.waitSample("after", k("after/small"), 3_000);
      await b.call("undeclare", { name: "after" });
      assert.equal(s.payload.text, "still here");
    });

    // Last of the describe: zest closing the sender's session (below) must not disturb the others.
    test("128 KiB values are fragmented and reassembled on the way in and out", async () => {
      await b.call("sub", { name: "big", key: k("big/*") });
      const sizes = [128 * 1024, 128 * 1024 + 7, 300_000];
      // Congestion control BLOCK: with DROP (a put's default) the sending session itself may drop
      // a value that does not fit its transmission queue at once, whatever the router.
      for (const [i, size] of sizes.entries())
        await a.call("put", { key: k(`big/${i}`), payload_size: size, payload_seed: i, congestion: "BLOCK" });
      for (const [i, size] of sizes.entries()) {
        const s = await b.waitSample("big", k(`big/${i}`), 4_000);
        assert.equal(s.payload.len, size);
        assert.equal(s.payload.sha256, sha256(pattern(size, i)));
      }
      await b.call("undeclare", { name: "big" });
    });
  });
});
