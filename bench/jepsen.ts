/**
 * The long form of the Jepsen-style suite (test/jepsen/linearizable.proc.test.ts is the short one):
 * for each fault, many seeds, each a history of `--seconds` recorded by clients on three routers
 * over a three-node NATS cluster and checked for linearizability by Porcupine. Prints, per fault,
 * the histories checked and the violations found, and writes the table to `--out` when given.
 *
 * npm run build && node --import tsx bench/jepsen.ts --histories 25 --seconds 10 --out bench/results/jepsen.md
 */
import { writeFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { buildChecker, check, recordHistory } from "../test/jepsen/history.js";
import { fabricTimings, NO_STORAGES, sleep, startRouters } from "../test/fabric/helpers.js";
import { startNatsCluster, type NatsCluster } from "../test/support/nats-cluster.js";
import { repoPath } from "../test/support/repo.js";
import { rng } from "../test/support/rng.js";
import { startZest, type ZestProcess } from "../test/support/zest-process.js";

const { values } = parseArgs({
  options: {
    histories: { type: "string", default: "25" },
    seconds: { type: "string", default: "10" },
    out: { type: "string" },
    faults: { type: "string", default: "none,kill,nats,pause" },
  },
});
const HISTORIES = Number(values.histories);
const RUN_MS = Number(values.seconds) * 1000;
const PEER_TIMEOUT_MS = 2_500;
const IDS = ["A1", "B1", "C1"];
const cfg = (path: string, value: unknown): string[] => ["--cfg", `${path}:${JSON.stringify(value)}`];

type Fault = (routers: ZestProcess[], cluster: NatsCluster, args: (i: number) => string[]) => Promise<void>;

/** Each fault starts a quarter into the history; the router or server it hits is the seed's. */
const FAULTS: Record<string, (seed: number) => Fault> = {
  none: () => async () => undefined,
  kill: (seed) => async (routers, _cluster, args) => {
    const i = seed % 3;
    await sleep(RUN_MS / 4);
    await routers[i]!.kill9();
    await sleep(RUN_MS / 4);
    routers[i] = await startZest(args(i));
  },
  nats: (seed) => async (_routers, cluster) => {
    const i = seed % 3;
    await sleep(RUN_MS / 4);
    await cluster.kill9(i);
    await sleep(RUN_MS / 4);
    await cluster.restart(i, { wait: false });
  },
  pause: (seed) => async (routers) => {
    const i = seed % 3;
    await sleep(RUN_MS / 4);
    routers[i]!.proc.kill("SIGSTOP");
    await sleep(PEER_TIMEOUT_MS + 500);
    routers[i]!.proc.kill("SIGCONT");
  },
};

async function main(): Promise<void> {
  // Not in .test-build, which a test run empties.
  const checker = buildChecker(repoPath(".tmp"));
  const rows: string[] = [];
  const faults = values.faults.split(",");
  for (const name of faults) {
    const fault = FAULTS[name];
    if (!fault) throw new Error(`no fault ${name} (${Object.keys(FAULTS).join(", ")})`);
    let checked = 0;
    let violations = 0;
    let undecided = 0;
    let ops = 0;
    for (let seed = 1; seed <= HISTORIES; seed++) {
      // A fresh cluster and fresh routers per history: no fault leaks into the next one.
      const cluster = await startNatsCluster();
      const args = (i: number): string[] => [
        "--id",
        IDS[i]!,
        "--nats",
        cluster.urls[i]!,
        ...NO_STORAGES,
        ...fabricTimings({ heartbeatMs: 250, peerTimeoutMs: PEER_TIMEOUT_MS, ackTimeoutMs: 3_500 }),
        ...cfg("plugins/storage_manager/storages/mem", { key_expr: "mem/**", volume: "memory" }),
        ...cfg("plugins/storage_manager/storages/cas", {
          key_expr: "cas/**",
          volume: { id: "jetstream", replicas: 3 },
        }),
      ];
      const routers = await startRouters([0, 1, 2].map(args));
      try {
        await sleep(1_000); // the routers meet
        const recording = recordHistory({
          url: (i) => routers[i]!.url,
          routers: 3,
          clientsPerRouter: 2,
          keys: ["mem/k", "cas/k"],
          durationMs: RUN_MS,
          draw: rng(seed * 7919 + name.length),
        });
        await fault(seed)(routers, cluster, args);
        const history = await recording;
        const verdict = check(checker, `${name}-${seed}`, history);
        checked++;
        ops += verdict.operations;
        if (verdict.result === "illegal") violations++;
        if (verdict.result === "unknown") undecided++;
        console.log(`${name} seed ${seed}: ${verdict.operations} operations: ${verdict.result}`);
      } finally {
        await Promise.all(routers.map((r) => r.stop()));
        await cluster.stop();
      }
    }
    rows.push(`| ${name} | ${checked} | ${ops} | ${violations} | ${undecided} |`);
  }
  const table = [
    `Histories of ${RUN_MS / 1000} s, 6 clients on 3 routers, memory and jetstream storages, checked by Porcupine.`,
    "",
    "| fault | histories | operations | violations | undecided (checker timed out) |",
    "| --- | --- | --- | --- | --- |",
    ...rows,
  ].join("\n");
  console.log(table);
  if (values.out) writeFileSync(values.out, `# Jepsen-style histories, ${new Date().toISOString()}\n\n${table}\n`);
}

await main();
