/**
 * The short form of the Jepsen-style suite: clients on three routers over a three-node NATS
 * cluster record histories of reads and conditional writes (memory storages on every router, and
 * a jetstream storage), one seed per fault, and Porcupine checks each history for
 * linearizability (docs/conditional-writes.md, "Across routers").
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { startNatsCluster, type NatsCluster } from "../support/nats-cluster.js";
import { rng } from "../support/rng.js";
import { startZest, type ZestProcess } from "../support/zest-process.js";
import { fabricTimings, NO_STORAGES, routerStatus, sleep, startRouters } from "../fabric/helpers.js";
import { buildChecker, check, type Recorded, recordHistory } from "./history.js";
import { eventually } from "../support/wait.js";

const cfg = (path: string, value: unknown): string[] => ["--cfg", `${path}:${JSON.stringify(value)}`];
const RUN_MS = 4_000;
const IDS = ["A1", "B1", "C1"];
const PEER_TIMEOUT_MS = 2_500;

/** What a hand-made history's operation defaults to. */
const op = (o: Partial<Recorded> & Pick<Recorded, "kind" | "call" | "return">): Recorded => ({
  client: 0,
  key: "k",
  value: "",
  expect: "",
  status: "ok",
  ...o,
});

describe("Jepsen-style histories of conditional writes across three routers, checked by Porcupine", () => {
  let checker: string;
  let cluster: NatsCluster;
  let routers: ZestProcess[] = [];
  const args = (i: number): string[] => [
    "--id",
    IDS[i]!,
    "--nats",
    cluster.urls[i]!,
    ...NO_STORAGES,
    // A killed router is forgotten within 2.5 s, so writes do not wait for it longer (and a
    // router reconnecting after its NATS server died is not forgotten meanwhile).
    ...fabricTimings({ heartbeatMs: 250, peerTimeoutMs: PEER_TIMEOUT_MS, ackTimeoutMs: 3_500 }),
    ...cfg("plugins/storage_manager/storages/mem", { key_expr: "mem/**", volume: "memory" }),
    ...cfg("plugins/storage_manager/storages/cas", { key_expr: "cas/**", volume: { id: "jetstream", replicas: 3 } }),
  ];
  const met = async (): Promise<void> => {
    for (const z of routers)
      await eventually(
        async () => (await routerStatus(z.url)).fabric.detail.routers.length === 2,
        10_000,
        "routers to meet",
      );
  };

  before(async () => {
    checker = buildChecker();
    cluster = await startNatsCluster();
    routers = await startRouters([0, 1, 2].map(args));
    await met();
  });
  after(async () => {
    await Promise.all(routers.map((r) => r.stop()));
    await cluster?.stop();
  });

  const run = (name: string, seed: number): Promise<Recorded[]> =>
    recordHistory({
      url: (i) => routers[i]!.url,
      routers: 3,
      clientsPerRouter: 2,
      keys: [`mem/${name}/k`, `cas/${name}/k`],
      durationMs: RUN_MS,
      draw: rng(seed),
    });

  const assertLinearizable = (name: string, history: Recorded[]): void => {
    const verdict = check(checker, name, history);
    const counts = { ok: 0, fail: 0, unknown: 0 };
    for (const o of history) counts[o.status]++;
    console.log(
      `# ${name}: ${verdict.operations} operations on ${verdict.keys} keys, ${JSON.stringify(counts)}: ${verdict.result}`,
    );
    assert.ok(
      history.some((o) => o.kind !== "read" && o.status === "ok"),
      "some conditional writes applied",
    );
    assert.ok(
      history.some((o) => o.status === "fail"),
      "some conditional writes were refused (the clients raced)",
    );
    assert.equal(verdict.result, "ok", `the history is linearizable (see ${verdict.file})`);
  };

  test("the checker passes a linearizable history and finds a lost update", () => {
    const legal = [
      op({ kind: "create", value: "a", call: 0, return: 10 }),
      op({ client: 1, kind: "cas", value: "b", expect: "a", call: 20, return: 30 }),
      op({ client: 2, kind: "cas", value: "c", expect: "a", status: "fail", call: 25, return: 35 }),
      op({ client: 2, kind: "read", value: "b", call: 40, return: 50 }),
    ];
    assert.equal(check(checker, "legal", legal).result, "ok");
    // Two writers both answered 200 on version "a": one update is lost.
    const lost = [
      op({ kind: "create", value: "a", call: 0, return: 10 }),
      op({ client: 1, kind: "cas", value: "b", expect: "a", call: 20, return: 30 }),
      op({ client: 2, kind: "cas", value: "c", expect: "a", call: 20, return: 30 }),
    ];
    assert.equal(check(checker, "lost", lost).result, "illegal");
  });

  test("no fault: the history is linearizable", async () => {
    assertLinearizable("none", await run("none", 1));
  });

  test("a router killed with SIGKILL and restarted: the history is linearizable", async () => {
    const recording = run("kill", 2);
    await sleep(RUN_MS / 4);
    await routers[2]!.kill9();
    await sleep(RUN_MS / 4);
    routers[2] = await startZest(args(2));
    const history = await recording;
    assertLinearizable("kill", history);
    await met();
  });

  test("a nats-server killed with SIGKILL and restarted: the history is linearizable", async () => {
    const recording = run("nats", 3);
    await sleep(RUN_MS / 4);
    await cluster.kill9(1);
    await sleep(RUN_MS / 4);
    await cluster.restart(1, { wait: false });
    const history = await recording;
    await cluster.waitReady();
    assertLinearizable("nats", history);
    await met();
  });

  test("a router paused (SIGSTOP) past its peers' timeout, then resumed: the history is linearizable", async () => {
    const recording = run("pause", 4);
    await sleep(RUN_MS / 4);
    routers[2]!.proc.kill("SIGSTOP");
    await sleep(PEER_TIMEOUT_MS + 500);
    routers[2]!.proc.kill("SIGCONT");
    const history = await recording;
    assertLinearizable("pause", history);
    await met();
  });
});
