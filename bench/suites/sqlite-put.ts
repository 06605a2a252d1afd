/**
 * SQLite volume PUT (issue 3): PUTs of 100 bytes (text/plain, autocannon, 32 connections) into a
 * SQLite storage, against the same PUTs into a memory storage, on one zest child process with
 * exactly these two storages on distinct prefixes (`sql/**` in a fresh temp file, `mem/**`):
 * same process, same HTTP and routing path, only the volume differs. Every request writes a new
 * key (`sql/k<n>`, `mem/k<n>`), so SQLite inserts rows into a growing table rather than updating
 * one. Runs alternate (warm-up, then sql mem, mem sql).
 *
 * Check: after the runs, the table holds at least as many rows as there were acknowledged PUTs
 * on `sql/` (read from the file by a second, read-only connection).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { fmtInt, fmtNum } from "../lib/format.js";
import { loadNotes, pairedRatio, type RequestSpec, roundsNote, PAIRED_ROUNDS } from "../lib/load.js";
import { TEXT_100 } from "../lib/payloads.js";
import { type ServerProcess, spawnZest } from "../lib/proc.js";
import { memory, sqlite, storagesCfg } from "../lib/storages.js";
import { compareSystems, systemFigures } from "../lib/system-load.js";
import type { BenchResult } from "../lib/types.js";

const TARGET = 0.5;

export async function run(): Promise<BenchResult> {
  const dir = mkdtempSync(join(tmpdir(), "zest-bench-sqlite-"));
  const dbPath = join(dir, "b.db");
  let zest: ServerProcess | undefined;
  try {
    zest = await spawnZest("zest-sqlite-put", storagesCfg({ mem: memory("mem/**"), sql: sqlite("sql/**", dbPath) }));
    const put = (path: string): RequestSpec => ({
      path,
      method: "PUT",
      headers: { "content-type": "text/plain" },
      body: TEXT_100,
    });
    const {
      figures: [sql, mem],
      warmupRequests,
    } = await compareSystems(
      [
        { server: zest, spec: put("/sql/k"), distinctKeys: true },
        { server: zest, spec: put("/mem/k"), distinctKeys: true },
      ],
      PAIRED_ROUNDS,
    );
    const s = sql!;
    const m = mem!;

    const db = new Database(dbPath, { readonly: true, fileMustExist: true });
    let rows: number;
    try {
      rows = db.prepare<[], { n: number }>("SELECT count(*) AS n FROM sql WHERE deleted = 0").get()!.n;
    } finally {
      db.close();
    }
    const acked = s.requests + warmupRequests[0]!;
    const notes = [...loadNotes("sqlite", s), ...loadNotes("memory", m)];
    if (rows < acked)
      notes.push(`only ${fmtInt(rows)} rows in the SQLite table for ${fmtInt(acked)} acknowledged PUTs`);

    const ratio = pairedRatio(s, m);
    return {
      name: "sqlite-put",
      figures: {
        ...systemFigures("sqlite", s),
        ...systemFigures("memory", m),
        sqliteRows: rows,
        // Server CPU per PUT, memory over SQLite: the same ratio from CPU accounting.
        cpuPerReqRatio: m.systemUsPerReq / s.systemUsPerReq,
      },
      ratio,
      target: `>= ${TARGET}x`,
      pass: ratio >= TARGET && rows >= acked,
      summary: `sqlite ${fmtInt(s.reqPerSec)} req/s / memory ${fmtInt(m.reqPerSec)} req/s (CPU per PUT ${fmtNum(s.systemUsPerReq, 0)} µs / ${fmtNum(m.systemUsPerReq, 0)} µs; ${fmtInt(rows)} rows; ${roundsNote(s, m)})`,
      interferencePct: Math.max(s.otherCpuPct, s.stealPct, m.otherCpuPct, m.stealPct),
      notes,
    };
  } finally {
    await zest?.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}
