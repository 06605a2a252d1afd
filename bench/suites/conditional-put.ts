/**
 * Conditional PUT (issue 13): PUTs of 100 bytes with `If-None-Match: *` (create only if absent,
 * so the memory storage checks and writes in one step) against the same PUTs without the header,
 * on one zest child process with one memory storage; every request writes a new key, so every
 * conditional PUT succeeds. Runs alternate (warm-up, then cond plain, plain cond).
 */
import { fmtInt, fmtNum } from "../lib/format.js";
import { loadNotes, pairedRatio, type RequestSpec, roundsNote, PAIRED_ROUNDS } from "../lib/load.js";
import { TEXT_100 } from "../lib/payloads.js";
import { type ServerProcess, spawnZest } from "../lib/proc.js";
import { memory, storagesCfg } from "../lib/storages.js";
import { compareSystems, systemFigures } from "../lib/system-load.js";
import type { BenchResult } from "../lib/types.js";

const TARGET = 0.9;

export async function run(): Promise<BenchResult> {
  let zest: ServerProcess | undefined;
  try {
    zest = await spawnZest("zest-conditional-put", storagesCfg({ cond: memory("cond/**"), plain: memory("plain/**") }));
    const put = (path: string, headers: Record<string, string> = {}): RequestSpec => ({
      path,
      method: "PUT",
      headers: { "content-type": "text/plain", ...headers },
      body: TEXT_100,
    });
    const {
      figures: [cond, plain],
    } = await compareSystems(
      [
        { server: zest, spec: put("/cond/k", { "if-none-match": "*" }), distinctKeys: true },
        { server: zest, spec: put("/plain/k"), distinctKeys: true },
      ],
      PAIRED_ROUNDS,
    );
    const c = cond!;
    const p = plain!;
    const ratio = pairedRatio(c, p);
    return {
      name: "conditional-put",
      figures: {
        ...systemFigures("conditional", c),
        ...systemFigures("plain", p),
        cpuPerReqRatio: p.systemUsPerReq / c.systemUsPerReq,
      },
      ratio,
      target: `>= ${TARGET}x`,
      pass: ratio >= TARGET,
      summary: `If-None-Match PUT ${fmtInt(c.reqPerSec)} req/s / plain PUT ${fmtInt(p.reqPerSec)} req/s (CPU per PUT ${fmtNum(c.systemUsPerReq, 0)} µs / ${fmtNum(p.systemUsPerReq, 0)} µs; ${roundsNote(c, p)})`,
      interferencePct: Math.max(c.otherCpuPct, c.stealPct, p.otherCpuPct, p.stealPct),
      notes: [...loadNotes("conditional", c), ...loadNotes("plain", p)],
    };
  } finally {
    await zest?.stop();
  }
}
