/**
 * SSE with event ids and the resume log (issue 13): the SSE fan-out (suites/sse.ts: 1,000
 * subscribers, 50 puts/s) with the log off (`plugins.rest.sse.resume_log: 0`, no ids) as the
 * baseline, then on (the default), in the same run. Target: p99 rises by at most 10%.
 */
import { fmtMs } from "../lib/format.js";
import type { BenchResult } from "../lib/types.js";
import { fanOut } from "./sse.js";

const TARGET = 1.1;

export async function run(): Promise<BenchResult> {
  const off = await fanOut("zest-sse-log-off", ["--cfg", "plugins/rest/sse:{resume_log:0}"]);
  const on = await fanOut("zest-sse-log-on", []);
  const p99Off = off.figures.p99Ms!;
  const p99On = on.figures.p99Ms!;
  const ratio = p99On / p99Off;
  const figures: Record<string, number> = {};
  for (const [k, v] of Object.entries(off.figures)) figures[`off_${k}`] = v;
  for (const [k, v] of Object.entries(on.figures)) figures[`on_${k}`] = v;
  return {
    name: "sse-resume",
    figures,
    ratio,
    target: `p99 with ids and the log <= ${TARGET}x without, nothing lost`,
    // The ratio is the target here; the fan-out's own absolute p99 target is the `sse` benchmark's.
    pass: ratio <= TARGET && complete(on) && complete(off),
    summary: `p99 ${fmtMs(p99On)} with ids and the log, ${fmtMs(p99Off)} without (p50 ${fmtMs(on.figures.p50Ms!)} / ${fmtMs(off.figures.p50Ms!)})`,
    interferencePct: Math.max(on.interferencePct ?? 0, off.interferencePct ?? 0),
    notes: [...(off.notes ?? []).map((n) => `off: ${n}`), ...(on.notes ?? []).map((n) => `on: ${n}`)],
  };
}

/** Every put answered and every event delivered once. */
function complete(r: BenchResult): boolean {
  const f = r.figures;
  return f.lost === 0 && f.duplicates === 0 && f.putsOk === f.puts;
}
