/**
 * The long form of the Jepsen-style suite (test/jepsen/linearizable.proc.test.ts is the short one):
 * for each fault, many seeds, each a history of `--seconds` recorded by clients on three routers
 * over a three-node NATS cluster, followed by a read of every key through every router once the
 * fault is over, checked per key by Porcupine, and the memory replicas' digests compared. Prints,
 * per fault, the histories checked and the violations found by invariant, and writes the table to
 * `--out` when given.
 *
 * npm run build && nice -n 10 node --import tsx bench/jepsen.ts --histories 20 --seconds 10 --out bench/results/jepsen.md
 */
import { writeFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { buildChecker, check, finalReads, recordHistory } from "../test/jepsen/history.js";
import { FAULTS, replicasConverge, startJepsenCluster } from "../test/jepsen/cluster.js";
import { sleep } from "../test/fabric/helpers.js";
import { repoPath } from "../test/support/repo.js";
import { rng } from "../test/support/rng.js";

const { values } = parseArgs({
  options: {
    // Per fault.
    histories: { type: "string", default: "20" },
    seconds: { type: "string", default: "10" },
    out: { type: "string" },
    faults: { type: "string", default: Object.keys(FAULTS).join(",") },
    // Only these seeds (e.g. the ones a busy host kept from starting), instead of 1..histories.
    seeds: { type: "string" },
  },
});
const HISTORIES = Number(values.histories);
const RUN_MS = Number(values.seconds) * 1000;

/** Which invariant a key's history speaks for (test/jepsen/history.ts, `historyKeys`). */
function invariant(key: string): "conditional" | "plain" | "ttl" {
  const last = key.slice(key.lastIndexOf("/") + 1);
  return last === "c" ? "conditional" : last === "p" ? "plain" : "ttl";
}

/** A fresh cluster; a start that failed (a router slower than 15 s on a busy host) is tried again. */
async function startCluster(): Promise<Awaited<ReturnType<typeof startJepsenCluster>>> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await startJepsenCluster();
    } catch (err) {
      if (attempt >= 3) throw err;
      console.log(`the cluster did not start (${String(err).split("\n")[0]}): again`);
    }
  }
}

async function main(): Promise<void> {
  // Not in .test-build, which a test run empties.
  const checker = buildChecker(repoPath(".tmp"));
  const rows: string[] = [];
  const faults = values.faults.split(",");
  const started = Date.now();
  for (const name of faults) {
    const fault = FAULTS[name];
    if (!fault) throw new Error(`no fault ${name} (${Object.keys(FAULTS).join(", ")})`);
    const n = { checked: 0, ops: 0, conditional: 0, plain: 0, ttl: 0, diverged: 0, undecided: 0, failed: 0 };
    const seeds = values.seeds?.split(",").map(Number) ?? Array.from({ length: HISTORIES }, (_, i) => i + 1);
    for (const seed of seeds) {
      // A fresh cluster and fresh routers per history: no fault leaks into the next one.
      let c: Awaited<ReturnType<typeof startJepsenCluster>> | undefined;
      try {
        c = await startCluster();
        const cluster = c;
        await sleep(500);
        const prefixes = ["mem", "cas"];
        const t0 = process.hrtime.bigint();
        const recording = recordHistory({
          url: (i) => cluster.routers[i]!.url,
          routers: 3,
          clientsPerRouter: 2,
          prefixes,
          durationMs: RUN_MS,
          draw: rng(seed * 7919 + name.length),
          t0,
        });
        await fault(cluster, seed % 3, RUN_MS);
        const history = await recording;
        await cluster.met(20_000);
        const last = await finalReads((i) => cluster.routers[i]!.url, 3, prefixes, t0);
        const converged = await replicasConverge(cluster);
        const verdict = check(checker, `${name}-${seed}`, [...history, ...last.reads]);
        n.checked++;
        n.ops += verdict.operations;
        for (const k of verdict.illegal) n[invariant(k)]++;
        if (!last.converged || !converged) n.diverged++;
        if (verdict.result === "unknown") n.undecided++;
        console.log(
          `${name} seed ${seed}: ${verdict.operations} operations: ${verdict.result} ${verdict.illegal.join(" ")}${last.converged && converged ? "" : " DIVERGED"} (${Math.round((Date.now() - started) / 1000)} s)`,
        );
      } catch (err) {
        // A history that could not be run (a cluster that did not start) is counted, not hidden.
        n.failed++;
        console.log(`${name} seed ${seed}: not run: ${String(err)}`);
      } finally {
        await c?.stop();
      }
    }
    rows.push(
      `| ${name} | ${n.checked} | ${n.ops} | ${n.conditional} | ${n.plain} | ${n.ttl} | ${n.diverged} | ${n.undecided} | ${n.failed} |`,
    );
  }
  const table = [
    `Histories of ${RUN_MS / 1000} s, 6 clients on 3 routers (one behind a TCP proxy), memory and jetstream storages, checked per key by Porcupine; violations counted per key history (conditional: linearizable conditional writes; plain: no acknowledged put lost, no deleted key back; ttl: expires once and stays gone), diverged: the routers' last reads or the memory replicas' digests still differed 20 s after the fault.`,
    "",
    "| fault | histories | operations | conditional | plain | ttl | diverged | undecided (checker timed out) | not run |",
    "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ...rows,
  ].join("\n");
  console.log(table);
  if (values.out) writeFileSync(values.out, `# Jepsen-style histories, ${new Date().toISOString()}\n\n${table}\n`);
}

await main();
