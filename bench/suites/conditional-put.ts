/**
 * Conditional PUT (issue 13): `If-None-Match: *` creating a fresh key each time, against a plain
 * PUT of a fresh key, on the same zest router (memory storage on `**`), in the same run. Both
 * carry 100 bytes of text/plain over 32 connections. `If-None-Match: *` and `If-Match: <etag>`
 * take the same path (a condition the storage checks with the write); the first is the one a
 * load generator can send without reading an ETag first.
 */
import { fmtInt } from "../lib/format.js";
import { httpGetText } from "../lib/http.js";
import { cpuPerReq, loadNotes, type RequestSpec } from "../lib/load.js";
import { TEXT_100 } from "../lib/payloads.js";
import { spawnZest } from "../lib/proc.js";
import { compareSystems, systemFigures } from "../lib/system-load.js";
import type { BenchResult } from "../lib/types.js";

const TARGET = 0.9;

export async function run(): Promise<BenchResult> {
  const zest = await spawnZest("zest-conditional-put");
  try {
    const put = (path: string, headers: Record<string, string> = {}): RequestSpec => ({ path, method: "PUT", headers: { "content-type": "text/plain", ...headers }, body: TEXT_100 });
    // Every request writes its own key, so every conditional PUT creates a key that is not there yet.
    const {
      figures: [c, p],
    } = await compareSystems(
      [
        { server: zest, spec: put("/bench/cond/k", { "if-none-match": "*" }), distinctKeys: true },
        { server: zest, spec: put("/bench/plain/k"), distinctKeys: true },
      ],
      { connections: 32, warmupSeconds: 2, roundSeconds: 5, rounds: 2 },
    );
    if (c!.non2xx > 0) throw new Error(`${c!.non2xx} conditional PUTs were refused: each should create a fresh key`);
    // The warm-up fires the conditional PUTs first, so their first key is k0.
    const stored = await httpGetText(zest.url, "/bench/cond/k0");
    if (!stored.includes(TEXT_100)) throw new Error(`the conditional PUT was not stored: ${stored}`);
    const ratio = c!.reqPerSec / p!.reqPerSec;
    return {
      name: "conditional-put",
      figures: { ...systemFigures("conditional", c!), ...systemFigures("plain", p!), cpuPerReqRatio: cpuPerReq(p!) / cpuPerReq(c!) },
      ratio,
      target: `>= ${TARGET}x`,
      pass: ratio >= TARGET,
      summary: `If-None-Match: * ${fmtInt(c!.reqPerSec)} req/s / plain ${fmtInt(p!.reqPerSec)} req/s`,
      interferencePct: Math.max(c!.otherCpuPct, c!.stealPct, p!.otherCpuPct, p!.stealPct),
      notes: [...loadNotes("conditional", c!), ...loadNotes("plain", p!)],
    };
  } finally {
    await zest.stop();
  }
}
