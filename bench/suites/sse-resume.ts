/**
 * SSE with event ids and the resume log (issue 13): the SSE fan-out (suites/sse.ts: 1,000
 * subscribers, 50 puts/s) with the log off (`plugins.rest.sse.resume_log: 0`, no ids) as the
 * baseline and on (the default), in the same run, in the order off, on, on, off (10 s each, after a 3 s warm-up run); each
 * side's p99 is the mean of its two runs. Target: p99 rises by at most 10%.
 */
import { fmtMs } from "../lib/format.js";
import type { BenchResult } from "../lib/types.js";
import { fanOut } from "./sse.js";

const TARGET = 1.1;
/** Seconds of each of the four fan-out runs. */
const RUN_SECONDS = 10;
/** Seconds of the fan-out run before them, whose figures are dropped. */
const WARM_UP_SECONDS = 3;

export async function run(): Promise<BenchResult> {
  // Off, on, on, off (10 s each): whatever drifts over the run (this process's heap and sockets,
  // the machine) weighs on both sides alike, as the throughput comparisons alternate.
  const offArgs = ["--cfg", "plugins/rest/sse:{resume_log:0}"];
  // A first fan-out in this process runs slower (its readers are not optimized yet): warm up.
  await fanOut("zest-sse-warm-up", [], WARM_UP_SECONDS);
  const off1 = await fanOut("zest-sse-log-off", offArgs, RUN_SECONDS);
  const on1 = await fanOut("zest-sse-log-on", [], RUN_SECONDS);
  const on2 = await fanOut("zest-sse-log-on", [], RUN_SECONDS);
  const off2 = await fanOut("zest-sse-log-off", offArgs, RUN_SECONDS);
  const mean = (a: BenchResult, b: BenchResult, k: string): number => (a.figures[k]! + b.figures[k]!) / 2;
  const p99Off = mean(off1, off2, "p99Ms");
  const p99On = mean(on1, on2, "p99Ms");
  const ratio = p99On / p99Off;
  const figures: Record<string, number> = { p99OnMs: p99On, p99OffMs: p99Off };
  for (const [name, r] of [
    ["off1", off1],
    ["on1", on1],
    ["on2", on2],
    ["off2", off2],
  ] as const)
    for (const [k, v] of Object.entries(r.figures)) figures[`${name}_${k}`] = v;
  const runs = [off1, on1, on2, off2];
  return {
    name: "sse-resume",
    figures,
    ratio,
    target: `p99 with ids and the log <= ${TARGET}x without, nothing lost`,
    // The ratio is the target here; the fan-out's own absolute p99 target is the `sse` benchmark's.
    pass: ratio <= TARGET && runs.every(complete),
    summary: `p99 ${fmtMs(p99On)} with ids and the log (${fmtMs(on1.figures.p99Ms!)}, ${fmtMs(on2.figures.p99Ms!)}), ${fmtMs(p99Off)} without (${fmtMs(off1.figures.p99Ms!)}, ${fmtMs(off2.figures.p99Ms!)}); p50 ${fmtMs(mean(on1, on2, "p50Ms"))} / ${fmtMs(mean(off1, off2, "p50Ms"))}`,
    interferencePct: Math.max(...runs.map((r) => r.interferencePct ?? 0)),
    notes: [
      ...(off1.notes ?? []).map((n) => `off: ${n}`),
      ...(on1.notes ?? []).map((n) => `on: ${n}`),
      ...(on2.notes ?? []).map((n) => `on: ${n}`),
      ...(off2.notes ?? []).map((n) => `off: ${n}`),
    ],
  };
}

/** Every put answered and every event delivered once. */
function complete(r: BenchResult): boolean {
  const f = r.figures;
  return f.lost === 0 && f.duplicates === 0 && f.putsOk === f.puts;
}
