/**
 * Three real `zest` routers, each on a different node of a real 3-node NATS cluster, forming one
 * key space: routing of puts, SSE, queries, evals and the admin space across routers,
 * acknowledged writes, interest, alignment of a late storage, and a frozen router.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { getJson, http, openSse } from "../support/http.js";
import { startNatsCluster, type NatsCluster } from "../support/nats-cluster.js";
import { startZest, type ZestProcess } from "../support/zest-process.js";
import { DEFAULT_REPLICATION } from "../../src/storage/replication/config.js";
import {
  fabricTimings,
  getValues,
  memoryStorage,
  NO_STORAGES,
  putText,
  routerStatus,
  startRouters,
  untilRoutersMeet,
} from "./helpers.js";
import { eventually } from "../support/wait.js";

/** Waits (in steps under a second) until a sub-interval of the default replication settings has just begun. */
async function subIntervalStart(): Promise<void> {
  const subMs = DEFAULT_REPLICATION.intervalMs / DEFAULT_REPLICATION.subIntervals;
  for (;;) {
    const into = Date.now() % subMs;
    if (into < 20) return;
    await new Promise((r) => setTimeout(r, Math.min(subMs - into, 900)));
  }
}

/** Above the frozen-router test's 1.5 s query timeout: B is not forgotten while it is frozen. */
const TIMINGS = fabricTimings({ heartbeatMs: 250, peerTimeoutMs: 2_500, ackTimeoutMs: 3_500 });

const STORAGES = "@/router/local/config/plugins/storage_manager/storages";

describe("three routers over a NATS cluster", () => {
  let cluster: NatsCluster;
  /** demo/** and late/** storages; query timeout 1.5 s. */
  let a: ZestProcess;
  /** demo/** and bonly/** storages, the eval plugin. */
  let b: ZestProcess;
  /** No storage at all. */
  let c: ZestProcess;
  /** Started by the last test. */
  let d: ZestProcess | undefined;

  before(async () => {
    cluster = await startNatsCluster();
    [a, b, c] = (await startRouters([
      [
        "--id",
        "A1",
        "--nats",
        cluster.urls[0]!,
        ...TIMINGS,
        "--query-timeout",
        "1500",
        ...memoryStorage("demo_a", "demo/**"),
        ...memoryStorage("late_a", "late/**"),
      ],
      [
        "--id",
        "B1",
        "--nats",
        cluster.urls[1]!,
        ...TIMINGS,
        "-P",
        "examples/eval-plugin.js",
        ...memoryStorage("demo_b", "demo/**"),
        ...memoryStorage("bonly", "bonly/**"),
      ],
      ["--id", "C1", "--nats", cluster.urls[2]!, ...TIMINGS, ...NO_STORAGES],
    ])) as [ZestProcess, ZestProcess, ZestProcess];
    // Routers started together learn each other from their announcements.
    await untilRoutersMeet([a.url, b.url, c.url], 2);
  });
  after(async () => {
    if (b && b.proc.exitCode === null) b.proc.kill("SIGCONT"); // never leave a stopped process behind
    await Promise.all([a?.stop(), b?.stop(), c?.stop(), d?.stop()]);
    await cluster?.stop();
  });

  test("a PUT through one router is read through the others", async () => {
    assert.equal((await putText(a.url, "demo/x", "hello")).status, 200);
    for (const z of [a, b, c]) {
      const { status, values, errors } = await getValues(z.url, "demo/x");
      assert.equal(status, 200);
      assert.deepEqual(values, { "demo/x": "hello" });
      assert.deepEqual(errors, []);
    }
    // Replies from both storages are consolidated into one entry with the writer's timestamp.
    const { entries } = await getJson(c.url, "/demo/x");
    assert.equal(entries.length, 1);
    assert.match(entries[0]!.time as string, /\/A1$/);
  });

  test("a PUT resolves once the remote storages have it", async () => {
    assert.equal((await putText(c.url, "bonly/k", "stored")).status, 200);
    assert.deepEqual((await getValues(c.url, "bonly/k")).values, { "bonly/k": "stored" });
    // A storage created on B through A's REST gateway exists when A answers.
    const r = await http(a.url, "PUT", `/${STORAGES.replace("local", "B1")}/remote`, {
      body: '{key_expr:"remote/**",volume:"memory"}',
    });
    assert.equal(r.status, 200, r.text);
    const { entries } = await getJson(a.url, "/@/router/B1/status/plugins/storage_manager/storages/remote");
    assert.deepEqual(entries[0]?.value, { key_expr: "remote/**", volume: "memory" });
  });

  test("a PUT fails when a remote subscriber fails, with its status", async () => {
    const r = await http(a.url, "PUT", `/${STORAGES.replace("local", "B1")}/bad`, { body: '{key_expr:"x/**"}' });
    assert.equal(r.status, 400);
    assert.match(r.text, /router B1: `volume` field missing for storage bad/);
  });

  test("a key too long for a NATS subject still travels between routers", async () => {
    const key = `demo/long/${"k".repeat(4_000)}`;
    assert.equal((await putText(c.url, key, "long")).status, 200);
    assert.deepEqual((await getValues(b.url, key)).values, { [key]: "long" });
  });

  test("a wildcard DELETE through one router reaches the storages of the others", async () => {
    await putText(a.url, "demo/wild/1", "one");
    await putText(b.url, "demo/wild/2", "two");
    assert.equal(Object.keys((await getValues(c.url, "demo/wild/**")).values).length, 2);
    assert.equal((await http(c.url, "DELETE", "/demo/wild/**")).status, 200);
    for (const z of [a, b, c]) assert.deepEqual((await getValues(z.url, "demo/wild/**")).values, {});
  });

  test("SSE on one router receives the puts made on another", async () => {
    const sse = await openSse(`${b.url}/sse/**`);
    const keyOf = (e: { data: string }): string => (JSON.parse(e.data) as { key: string }).key;
    try {
      // The others learn B's new subscriber a moment after the stream opened: probe until they do.
      for (const z of [a, c]) {
        await eventually(
          async () => {
            await putText(z.url, "sse/ready", "1");
            return sse.next(1, 300).then(
              () => true,
              () => false,
            );
          },
          5_000,
          "B's SSE subscriber to be known",
        );
      }
      await putText(a.url, "sse/1", "first");
      await putText(c.url, "sse/2", "second");
      await http(a.url, "DELETE", "/sse/1");
      const events: Array<{ event: string; data: string }> = [];
      while (events.length < 3) events.push(...(await sse.next(1, 5_000)).filter((e) => keyOf(e) !== "sse/ready"));
      assert.deepEqual(
        events.map((e) => [e.event, keyOf(e)]),
        [
          ["PUT", "sse/1"],
          ["PUT", "sse/2"],
          ["DELETE", "sse/1"],
        ],
      );
    } finally {
      sse.close();
    }
  });

  test("interest decides: a router with no matching subscriber receives no sample", async () => {
    const before = {
      b: (await routerStatus(b.url)).fabric.detail.samplesReceived,
      c: (await routerStatus(c.url)).fabric.detail.samplesReceived,
    };
    for (let i = 0; i < 20; i++) assert.equal((await putText(a.url, `demo/interest/${i}`, String(i))).status, 200);
    const after = {
      b: (await routerStatus(b.url)).fabric.detail.samplesReceived,
      c: (await routerStatus(c.url)).fabric.detail.samplesReceived,
    };
    assert.equal(after.b - before.b, 20);
    assert.equal(after.c, 0, "C declared no subscriber: NATS must not have sent it anything");
  });

  test("interest decides: a router whose subscribers do not match a key receives nothing for it", async () => {
    // A stores demo/** and late/**, B demo/** and bonly/**: a bonly key is for B alone.
    const before = {
      a: (await routerStatus(a.url)).fabric.detail.samplesReceived,
      b: (await routerStatus(b.url)).fabric.detail.samplesReceived,
    };
    for (let i = 0; i < 10; i++) assert.equal((await putText(c.url, `bonly/interest/${i}`, String(i))).status, 200);
    const after = {
      a: (await routerStatus(a.url)).fabric.detail.samplesReceived,
      b: (await routerStatus(b.url)).fabric.detail.samplesReceived,
    };
    assert.equal(after.b - before.b, 10);
    assert.equal(after.a, before.a, "A's subscribers do not match bonly/**: NATS must not have sent it anything");
  });

  test("a query goes only to the routers with a matching queryable", async () => {
    assert.equal((await putText(b.url, "bonly/q", "b's")).status, 200);
    const counters = async (url: string): Promise<{ sent: number; answered: number }> => {
      const d = (await routerStatus(url)).fabric.detail;
      return { sent: Number(d.queriesSent), answered: Number(d.queriesAnswered) };
    };
    // A's and B's demo/** storages are replicas: their digest exchanges are queries too, and
    // one may land in the window. A window free of them shows the routing; three are tried.
    for (let attempt = 1; ; attempt++) {
      const before = { a: await counters(a.url), b: await counters(b.url), c: await counters(c.url) };
      const { status, values, errors } = await getValues(c.url, "bonly/q");
      assert.equal(status, 200, errors.join("; "));
      assert.deepEqual(values, { "bonly/q": "b's" });
      const after = { a: await counters(a.url), b: await counters(b.url), c: await counters(c.url) };
      assert.equal(after.c.sent - before.c.sent, 1, "C sent one query: to B");
      const quiet = after.a.answered === before.a.answered && after.b.answered - before.b.answered === 1;
      if (quiet || attempt === 3) {
        assert.equal(after.b.answered - before.b.answered, 1);
        assert.equal(after.a.answered, before.a.answered, "A has no queryable on bonly/**");
        break;
      }
    }
  });

  test("an eval on one router answers a GET on another", async () => {
    assert.deepEqual((await getValues(a.url, "demo/example/*eval?(name=Bob)")).values, {
      "demo/example/zest-eval": "Eval from Bob",
    });
    assert.deepEqual((await getValues(c.url, "demo/example/zest-eval?name=Alice")).values, {
      "demo/example/zest-eval": "Eval from Alice",
    });
  });

  test("the admin space of every router is visible from any router; @/router/local stays local", async () => {
    const { values } = await getValues(c.url, "@/**/storages/**");
    assert.deepEqual(Object.keys(values).sort(), [
      "@/router/A1/status/plugins/storage_manager/storages/demo_a",
      "@/router/A1/status/plugins/storage_manager/storages/late_a",
      "@/router/B1/status/plugins/storage_manager/storages/bonly",
      "@/router/B1/status/plugins/storage_manager/storages/demo_b",
      "@/router/B1/status/plugins/storage_manager/storages/remote",
    ]);
    const remote = (await getValues(a.url, "@/router/B1")).values["@/router/B1"] as {
      zid: string;
      sessions: unknown[];
      fabric: { connected: boolean };
    };
    assert.equal(remote.zid, "B1");
    assert.deepEqual(remote.sessions, [
      { peer: "A1", whatami: "router" },
      { peer: "C1", whatami: "router" },
    ]);
    assert.equal(remote.fabric.connected, true);
    const local = await getValues(a.url, "@/router/local");
    assert.deepEqual(Object.keys(local.values), ["@/router/A1"]);
    const health = (await getValues(b.url, "@/router/local/health")).values["@/router/B1/health"] as {
      status: string;
      fabric: { kind: string };
    };
    assert.equal(health.status, "ok");
    assert.equal(health.fabric.kind, "nats");
  });

  test("a storage created late aligns from the storages that already hold its key expression, writes of the last moment included", async () => {
    // The writes land at the start of a replication sub-interval, so that the new storage starts
    // while they are younger than the propagation delay: its start-up exchange must take them too.
    await subIntervalStart();
    for (const k of ["x", "y/z"]) assert.equal((await putText(a.url, `late/${k}`, `v-${k}`)).status, 200);
    const r = await http(c.url, "PUT", `/${STORAGES}/late_c`, { body: '{key_expr:"late/**",volume:"memory"}' });
    assert.equal(r.status, 200, r.text);
    // Remove A's copy: what C serves now can only come from its own, aligned storage.
    assert.equal((await http(a.url, "DELETE", `/${STORAGES}/late_a`)).status, 200);
    const { values } = await getValues(c.url, "late/**");
    assert.deepEqual(values, { "late/x": "v-x", "late/y/z": "v-y/z" });
    assert.ok(
      (await routerStatus(c.url)).fabric.detail.samplesReceived === 0,
      "alignment is a query, not a replay of samples",
    );
  });

  test("a frozen router: the GET returns the other replies plus an error entry, with 504, within the timeout", async () => {
    await putText(a.url, "demo/frozen", "here");
    b.proc.kill("SIGSTOP");
    try {
      const t0 = Date.now();
      const { status, values, errors } = await getValues(a.url, "demo/frozen");
      const elapsed = Date.now() - t0;
      assert.equal(status, 504);
      assert.deepEqual(values, { "demo/frozen": "here" });
      assert.deepEqual(errors, ["Timeout: router B1 did not answer within 1500 ms"]);
      assert.ok(elapsed >= 1_400 && elapsed < 3_000, `answered after ${elapsed} ms`);
    } finally {
      b.proc.kill("SIGCONT");
    }
    // Once it runs again, it is part of the key space again.
    await untilRoutersMeet([b.url], 2, 10_000, "B to see A and C again");
    await eventually(
      async () => (await routerStatus(a.url)).fabric.detail.routers.includes("B1"),
      10_000,
      "A to see B again",
    );
    assert.deepEqual((await getValues(a.url, "demo/frozen")).errors, []);
  });

  test("a router started late aligns its storages at start, and serves the data once the others are gone", async () => {
    await putText(b.url, "demo/before-d", "old");
    // D forgets a silent router after 1.5 s (the others keep 2.5 s).
    d = await startZest([
      "--id",
      "D1",
      "--nats",
      cluster.urls[0]!,
      ...fabricTimings({ heartbeatMs: 250, peerTimeoutMs: 1_500, ackTimeoutMs: 2_500 }),
      ...memoryStorage("demo_d", "demo/**"),
    ]);
    assert.deepEqual((await routerStatus(d.url)).fabric.detail.routers, ["A1", "B1", "C1"]);
    await Promise.all([a.kill9(), b.kill9()]);
    // A and B are gone without a goodbye. Until D forgets them (no heartbeat for 1 s), NATS
    // reports nobody on their query subjects: D answers at once from its own storage, with an
    // error entry per router it cannot reach (they might be reconnecting), never a silent miss.
    const t0 = Date.now();
    const first = await getValues(d.url, "demo/**");
    assert.ok(Date.now() - t0 < 1_000, `took ${Date.now() - t0} ms`);
    assert.equal(first.status, 503);
    assert.deepEqual(first.errors.sort(), [
      "router A1 is unreachable (no responders on NATS)",
      "router B1 is unreachable (no responders on NATS)",
    ]);
    assert.equal(first.values["demo/before-d"], "old");
    // Once forgotten, they are no longer part of the key space: a plain 200.
    await eventually(
      async () => (await routerStatus(d!.url)).fabric.detail.routers.join() === "C1",
      5_000,
      "D to forget A and B",
    );
    const { status, values, errors } = await getValues(d.url, "demo/**");
    assert.equal(status, 200);
    assert.deepEqual(errors, []);
    assert.equal(values["demo/before-d"], "old");
    assert.equal(values["demo/x"], "hello");
    assert.equal(values["demo/frozen"], "here");
  });
});
