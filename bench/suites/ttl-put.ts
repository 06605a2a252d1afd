/**
 * PUT with a TTL (issue 27): PUTs of 100 bytes with `?_ttl=1h` against the same PUTs without,
 * on one zest child process with one memory storage, each side writing one key over and over
 * (the TTL's deadline moves in place). Runs alternate (warm-up, then ttl plain, plain ttl).
 */
import { fmtInt, fmtNum } from "../lib/format.js";
import { loadNotes, pairedRatio, type RequestSpec, roundsNote, PAIRED_ROUNDS } from "../lib/load.js";
import { TEXT_100 } from "../lib/payloads.js";
import { type ServerProcess, spawnZest } from "../lib/proc.js";
import { memory, storagesCfg } from "../lib/storages.js";
import { compareSystems, systemFigures } from "../lib/system-load.js";
import type { BenchResult } from "../lib/types.js";

const TARGET = 0.95;

export async function run(): Promise<BenchResult> {
  let zest: ServerProcess | undefined;
  try {
    zest = await spawnZest("zest-ttl-put", storagesCfg({ ttl: memory("ttl/**"), plain: memory("plain/**") }));
    const put = (path: string): RequestSpec => ({
      path,
      method: "PUT",
      headers: { "content-type": "text/plain" },
      body: TEXT_100,
    });
    const {
      figures: [ttl, plain],
    } = await compareSystems(
      [
        { server: zest, spec: put("/ttl/k?_ttl=1h") },
        { server: zest, spec: put("/plain/k") },
      ],
      PAIRED_ROUNDS,
    );
    const t = ttl!;
    const p = plain!;
    const ratio = pairedRatio(t, p);
    return {
      name: "ttl-put",
      figures: {
        ...systemFigures("ttl", t),
        ...systemFigures("plain", p),
        cpuPerReqRatio: p.systemUsPerReq / t.systemUsPerReq,
      },
      ratio,
      target: `>= ${TARGET}x`,
      pass: ratio >= TARGET,
      summary: `PUT ?_ttl=1h ${fmtInt(t.reqPerSec)} req/s / plain PUT ${fmtInt(p.reqPerSec)} req/s (CPU per PUT ${fmtNum(t.systemUsPerReq, 0)} µs / ${fmtNum(p.systemUsPerReq, 0)} µs; ${roundsNote(t, p)})`,
      interferencePct: Math.max(t.otherCpuPct, t.stealPct, p.otherCpuPct, p.stealPct),
      notes: [...loadNotes("ttl", t), ...loadNotes("plain", p)],
    };
  } finally {
    await zest?.stop();
  }
}
