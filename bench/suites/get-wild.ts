/**
 * GET `demo/**` over 1,000 keys (issue 12): its ratio is to a bare node:http server sending the
 * same ~200 KiB answer, rendered beforehand (`baselines/get-bytes.mjs`), measured in alternation
 * in this run; target ≥ 0.5×. With the default config the answer comes from the read cache
 * between writes; also reported: the same GET with the read cache off (the query, the storage
 * walk and the rendering on every request), and a GET of one key.
 */
import { fmtInt } from "../lib/format.js";
import { httpGetText, httpPut } from "../lib/http.js";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { compare, loadFigures, loadNotes } from "../lib/load.js";
import { JSON_60 } from "../lib/payloads.js";
import { type ServerProcess, spawnBaseline, spawnZest } from "../lib/proc.js";
import type { BenchResult } from "../lib/types.js";

const KEYS = 1_000;

const TARGET = 0.5;

/** Fills `zest` with the benchmark's keys and returns the `demo/**` answer it gives. */
async function fill(zest: ServerProcess): Promise<string> {
  await httpPut(zest.url, "/bench/one", JSON_60, "application/json");
  for (let i = 0; i < KEYS; i += 50) {
    await Promise.all(
      Array.from({ length: 50 }, (_, j) => httpPut(zest.url, `/demo/bench/${i + j}`, JSON_60, "application/json")),
    );
  }
  const all = await httpGetText(zest.url, "/demo/**");
  const entries = (all.match(/"key": /g) ?? []).length;
  if (entries !== KEYS) throw new Error(`GET /demo/** returned ${entries} entries, expected ${KEYS}`);
  return all;
}

export async function run(): Promise<BenchResult> {
  const dir = mkdtempSync(join(tmpdir(), "zest-bench-wild-"));
  const zest = await spawnZest("zest-get-wild");
  const uncached = await spawnZest("zest-get-wild-uncached", ["--cfg", "plugins/rest/cache_entries:0"]);
  let base: ServerProcess | undefined;
  try {
    const all = await fill(zest);
    await fill(uncached);
    const file = join(dir, "answer.json");
    writeFileSync(file, all);
    base = await spawnBaseline("get-bytes.mjs", [file]);
    const opts = { connections: 32, warmupSeconds: 1, roundSeconds: 4, rounds: 2 };
    const [w, b] = await compare(
      [
        { server: zest, spec: { path: "/demo/**" } },
        { server: base, spec: { path: "/demo/**" } },
      ],
      opts,
    );
    const [u, one] = await compare(
      [
        { server: uncached, spec: { path: "/demo/**" } },
        { server: zest, spec: { path: "/bench/one" } },
      ],
      { ...opts, rounds: 1 },
    );
    const ratio = w.reqPerSec / b.reqPerSec;
    const kib = fmtInt(Buffer.byteLength(all) / 1024);
    return {
      name: "get-wild",
      figures: {
        ...loadFigures("wild", w),
        ...loadFigures("baseline", b),
        ...loadFigures("uncached", u),
        ...loadFigures("oneKey", one),
        keys: KEYS,
        responseBytes: Buffer.byteLength(all),
        uncachedEntriesPerSec: u.reqPerSec * KEYS,
        uncachedRatio: u.reqPerSec / b.reqPerSec,
      },
      ratio,
      target: `>= ${TARGET}x`,
      pass: ratio >= TARGET,
      summary: `demo/** (${fmtInt(KEYS)} keys, ${kib} KiB) ${fmtInt(w.reqPerSec)} req/s / node:http sending the same bytes ${fmtInt(b.reqPerSec)} req/s (read cache off: ${fmtInt(u.reqPerSec)} req/s, ${fmtInt(u.reqPerSec * KEYS)} entries/s; one key ${fmtInt(one.reqPerSec)} req/s)`,
      interferencePct: Math.max(w.otherCpuPct, w.stealPct, b.otherCpuPct, b.stealPct),
      notes: [...loadNotes("demo/**", w), ...loadNotes("node:http", b), ...loadNotes("demo/**, cache off", u)],
    };
  } finally {
    await zest.stop();
    await uncached.stop();
    await base?.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}
