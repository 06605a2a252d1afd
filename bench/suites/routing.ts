/**
 * Routing one put (issue 2): time per `session.put` with 100,000 subscriptions declared, as a
 * ratio to the time with 10 declared, over a stream of distinct keys that overruns the route
 * cache (so every put walks the chunk trie); the same for one hot key is reported too. Runs in a child process (bench/workers/routing.mjs, on the built package) so the
 * heap and JIT state of the other benchmarks do not leak into it.
 */
import { fmtInt, fmtNs } from "../lib/format.js";
import { interferenceNotes, runWorker } from "../lib/proc.js";
import type { BenchResult } from "../lib/types.js";

const TARGET = 3;

interface WorkerOut {
  cpuSeconds: number;
  putsPerConfig: number;
  smallSubs: number;
  largeSubs: number;
  smallNsPerPut: number;
  largeNsPerPut: number;
  coldKeys: number;
  hotSmallNsPerPut: number;
  hotLargeNsPerPut: number;
  declareLargeMs: number;
  heapUsedMb: number;
}

export async function run(): Promise<BenchResult> {
  const { out: w, ...interference } = await runWorker<WorkerOut>("routing.mjs", ["--expose-gc"]);
  const ratio = w.largeNsPerPut / w.smallNsPerPut;
  return {
    name: "routing",
    figures: { ...w, otherCpuPct: interference.otherCpuPct },
    ratio,
    target: `<= ${TARGET}x`,
    pass: ratio <= TARGET,
    interferencePct: Math.max(interference.otherCpuPct, interference.stealPct),
    notes: interferenceNotes("worker", interference),
    summary:
      `${fmtInt(w.coldKeys)} distinct keys: ${fmtInt(w.largeSubs)} subs ${fmtNs(w.largeNsPerPut)}/put / ${fmtInt(w.smallSubs)} subs ${fmtNs(w.smallNsPerPut)}/put` +
      ` (one hot key, route cache: ${fmtNs(w.hotLargeNsPerPut)} / ${fmtNs(w.hotSmallNsPerPut)}; ${fmtInt(w.putsPerConfig)} puts each)`,
  };
}
