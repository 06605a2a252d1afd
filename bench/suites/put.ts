/**
 * PUT of 100 bytes (issue 2): zest (memory storage on `**`) against a bare node:http server that
 * reads the body and answers 200. Same key every time, content-type text/plain, 32 connections.
 */
import { fmtInt } from "../lib/format.js";
import { httpGetText } from "../lib/http.js";
import {
  compare,
  cpuPerReq,
  loadFigures,
  loadNotes,
  pairedRatio,
  type RequestSpec,
  roundsNote,
  PAIRED_ROUNDS,
} from "../lib/load.js";
import { TEXT_100 } from "../lib/payloads.js";
import { spawnBaseline, spawnZest } from "../lib/proc.js";
import type { BenchResult } from "../lib/types.js";
import { textPut } from "../lib/put-pair.js";

// Issue 12 raised it from 0.85.
const TARGET = 0.9;

export async function run(): Promise<BenchResult> {
  const zest = await spawnZest("zest-put");
  const base = await spawnBaseline("put-ok.mjs");
  try {
    const spec: RequestSpec = textPut("/bench/put");
    const [z, b] = await compare(
      [
        { server: zest, spec },
        { server: base, spec },
      ],
      PAIRED_ROUNDS,
    );
    const stored = await httpGetText(zest.url, "/bench/put");
    if (!stored.includes(TEXT_100)) throw new Error(`the PUT value was not stored: ${stored}`);
    const ratio = pairedRatio(z, b);
    return {
      name: "put",
      // Server CPU per response, baseline over zest: the same ratio, read from CPU accounting
      // rather than wall time, so it holds up better when neighbours share the machine.
      figures: {
        ...loadFigures("zest", z),
        ...loadFigures("baseline", b),
        cpuPerReqRatio: cpuPerReq(b) / cpuPerReq(z),
      },
      ratio,
      target: `>= ${TARGET}x`,
      pass: ratio >= TARGET,
      summary: `zest ${fmtInt(z.reqPerSec)} req/s / node:http ${fmtInt(b.reqPerSec)} req/s (${roundsNote(z, b)})`,
      interferencePct: Math.max(z.otherCpuPct, z.stealPct, b.otherCpuPct, b.stealPct),
      notes: [...loadNotes("zest", z), ...loadNotes("node:http", b)],
    };
  } finally {
    await Promise.all([zest.stop(), base.stop()]);
  }
}
