/**
 * zenoh-python 1.10 liveliness and advanced pub/sub (zenoh-ext: a publisher's cache, a
 * subscriber's history and recovery, both built on liveliness and queries) through zest, in
 * client and in peer mode (test/support/zenoh-python.ts).
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { untilPasses } from "../support/assert.js";
import {
  type Agent,
  type AgentLine,
  pythonSkip,
  type ReplyJson,
  type SampleEvent,
  startAgent,
  describeEachMode,
  zestForPythonSuite,
} from "../support/zenoh-python.js";

const skip = pythonSkip();

describe("zenoh-python liveliness and advanced pub/sub through zest", { skip }, () => {
  const py = zestForPythonSuite();

  describeEachMode(py, 2, "py", ({ mode, a, b, k }) => {
    const liveliness = (agent: Agent, name: string, key: string, kind: "PUT" | "DELETE", timeoutMs?: number) =>
      agent.waitEvent<AgentLine>(
        (e) => e.ev === "liveliness" && e.name === name && e.key === key && e.kind === kind,
        timeoutMs,
      );

    // A liveliness get right after a token appeared or went can miss the change (zenoh's own
    // router shows that too, one run in three): what it lists is checked until it settles.
    const aliveSettles = (agent: Agent, key: string, expected: string[]) =>
      untilPasses(async () => {
        const got = await agent.call<{ replies: ReplyJson[] }>("liveliness_get", { key, timeout: 5 });
        assert.deepEqual(got.replies.map((r) => r.ok?.key).sort(), expected);
      }, 5_000);

    test("a token is seen by a liveliness subscriber with history, by a liveliness get, and goes with its undeclaration", async () => {
      await a.call("token", { name: "t1", key: k("group/one") });
      await b.call("liveliness_sub", { name: "ls", key: k("group/**"), history: true });
      await liveliness(b, "ls", k("group/one"), "PUT");
      await a.call("token", { name: "t2", key: k("group/two") });
      await liveliness(b, "ls", k("group/two"), "PUT");
      await aliveSettles(b, k("group/**"), [k("group/one"), k("group/two")]);
      await a.call("undeclare", { name: "t1" });
      await liveliness(b, "ls", k("group/one"), "DELETE");
      await aliveSettles(b, k("group/**"), [k("group/two")]);
      await a.call("undeclare", { name: "t2" });
      await liveliness(b, "ls", k("group/two"), "DELETE");
      await b.call("undeclare", { name: "ls" });
    });

    test("a token goes when its session closes", async () => {
      const c = await startAgent(mode, py.ep);
      try {
        await b.call("liveliness_sub", { name: "la", key: k("alive/*") });
        await c.call("token", { name: "t", key: k("alive/c") });
        await liveliness(b, "la", k("alive/c"), "PUT");
        await aliveSettles(b, k("alive/*"), [k("alive/c")]);
      } finally {
        await c.stop();
      }
      await liveliness(b, "la", k("alive/c"), "DELETE");
      await b.call("undeclare", { name: "la" });
    });

    test("a liveliness subscriber without history is told when a token older than it goes", async () => {
      await a.call("token", { name: "old", key: k("older/a") });
      await b.call("liveliness_sub", { name: "lo", key: k("older/*") });
      // A token newer than the subscriber reaches it: its INTEREST is at zest before the old token goes.
      await a.call("token", { name: "probe", key: k("older/probe") });
      await liveliness(b, "lo", k("older/probe"), "PUT");
      await a.call("undeclare", { name: "old" });
      try {
        await liveliness(b, "lo", k("older/a"), "DELETE", 3_000);
      } finally {
        await a.call("undeclare", { name: "probe" });
        await b.call("undeclare", { name: "lo" });
      }
    });

    test("an advanced subscriber gets a cached publisher's history in order, then its live samples", async () => {
      await a.call("adv_pub", { name: "ap", key: k("adv/x"), cache: 10, heartbeat: 0.5 });
      for (let i = 1; i <= 5; i++) await a.call("pub_put", { name: "ap", payload: String(i) });
      await b.call("adv_sub", {
        name: "as",
        key: k("adv/*"),
        history: { late: true, max_samples: 10 },
        recovery: "heartbeat",
      });
      await b.waitSample("as", k("adv/x"));
      await sleep(500);
      await a.call("pub_put", { name: "ap", payload: "6" });
      const deadline = Date.now() + 5_000;
      const got = () => b.events<SampleEvent>((e) => e.ev === "sample" && e.name === "as");
      while (got().length < 6 && Date.now() < deadline) await sleep(50);
      await sleep(300);
      const misses = b.events<AgentLine>((e) => e.ev === "miss" && e.name === "as");
      await b.call("undeclare", { name: "as" });
      await a.call("undeclare", { name: "ap" });
      assert.deepEqual(
        got().map((s) => s.payload.text),
        ["1", "2", "3", "4", "5", "6"],
      );
      assert.deepEqual(misses, []);
    });

    test("an advanced subscriber detects a late publisher and fetches its history", async () => {
      await b.call("adv_sub", {
        name: "late",
        key: k("late/**"),
        history: { late: true, max_samples: 3 },
        recovery: "heartbeat",
      });
      await a.call("adv_pub", { name: "lp", key: k("late/p"), cache: 3, heartbeat: 0.5 });
      for (let i = 1; i <= 4; i++) await a.call("pub_put", { name: "lp", payload: `v${i}` });
      const deadline = Date.now() + 5_000;
      const got = () => b.events<SampleEvent>((e) => e.ev === "sample" && e.name === "late");
      while (got().length < 4 && Date.now() < deadline) await sleep(50);
      await sleep(500);
      await b.call("undeclare", { name: "late" });
      await a.call("undeclare", { name: "lp" });
      assert.deepEqual(
        got().map((s) => s.payload.text),
        ["v1", "v2", "v3", "v4"],
      );
    });
  });
});
