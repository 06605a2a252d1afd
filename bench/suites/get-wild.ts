/**
 * GET `demo/**` over 1,000 keys (issue 2: report req/s). Its ratio is to a GET of one key on the
 * same zest process, measured in alternation in this run. Both run with the default config: the
 * one-key GET is served from the read cache, while the ~200 KiB `demo/**` response is above the
 * cache's body limit (64 KiB at the time of writing), so each of those runs the full query.
 */
import { fmtInt } from "../lib/format.js";
import { httpGetText, httpPut } from "../lib/http.js";
import { compare, loadFigures, loadNotes } from "../lib/load.js";
import { JSON_60 } from "../lib/payloads.js";
import { spawnZest } from "../lib/proc.js";
import type { BenchResult } from "../lib/types.js";

const KEYS = 1_000;

export async function run(): Promise<BenchResult> {
  const zest = await spawnZest("zest-get-wild");
  try {
    await httpPut(zest.url, "/bench/one", JSON_60, "application/json");
    for (let i = 0; i < KEYS; i += 50) {
      await Promise.all(
        Array.from({ length: 50 }, (_, j) => httpPut(zest.url, `/demo/bench/${i + j}`, JSON_60, "application/json")),
      );
    }
    const all = await httpGetText(zest.url, "/demo/**");
    const entries = (all.match(/"key": /g) ?? []).length;
    if (entries !== KEYS) throw new Error(`GET /demo/** returned ${entries} entries, expected ${KEYS}`);

    const [w, one] = await compare(
      [
        { server: zest, spec: { path: "/demo/**" } },
        { server: zest, spec: { path: "/bench/one" } },
      ],
      { connections: 32, warmupSeconds: 1, roundSeconds: 4, rounds: 2 },
    );
    return {
      name: "get-wild",
      figures: {
        ...loadFigures("wild", w),
        ...loadFigures("oneKey", one),
        keys: KEYS,
        responseBytes: Buffer.byteLength(all),
        entriesPerSec: w.reqPerSec * KEYS,
      },
      ratio: w.reqPerSec / one.reqPerSec,
      target: "report",
      summary: `demo/** (${fmtInt(KEYS)} keys, ${fmtInt(Buffer.byteLength(all) / 1024)} KiB) ${fmtInt(w.reqPerSec)} req/s / one key ${fmtInt(one.reqPerSec)} req/s`,
      interferencePct: Math.max(w.otherCpuPct, w.stealPct, one.otherCpuPct, one.stealPct),
      notes: [...loadNotes("demo/**", w), ...loadNotes("one key", one)],
    };
  } finally {
    await zest.stop();
  }
}
