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
import { fmtInt } from "../lib/format.js";
import { type ServerProcess, spawnZest } from "../lib/proc.js";
import { comparePutPair, putPairResult } from "../lib/put-pair.js";
import { memory, sqlite, storagesCfg } from "../lib/storages.js";
import type { BenchResult } from "../lib/types.js";

const TARGET = 0.5;

export async function run(): Promise<BenchResult> {
  const dir = mkdtempSync(join(tmpdir(), "zest-bench-sqlite-"));
  const dbPath = join(dir, "b.db");
  let zest: ServerProcess | undefined;
  try {
    zest = await spawnZest("zest-sqlite-put", storagesCfg({ mem: memory("mem/**"), sql: sqlite("sql/**", dbPath) }));
    const pair = await comparePutPair(
      zest,
      { prefix: "sqlite", label: "sqlite", path: "/sql/k", distinctKeys: true },
      { prefix: "memory", label: "memory", path: "/mem/k", distinctKeys: true },
    );

    const db = new Database(dbPath, { readonly: true, fileMustExist: true });
    let rows: number;
    try {
      rows = db.prepare<[], { n: number }>("SELECT count(*) AS n FROM sql WHERE deleted = 0").get()!.n;
    } finally {
      db.close();
    }
    const acked = pair.a.requests + pair.warmupRequests[0]!;
    const notes =
      rows < acked ? [`only ${fmtInt(rows)} rows in the SQLite table for ${fmtInt(acked)} acknowledged PUTs`] : [];
    // cpuPerReqRatio: server CPU per PUT, memory over SQLite, the same ratio from CPU accounting.
    return putPairResult("sqlite-put", TARGET, pair, {
      figures: { sqliteRows: rows },
      detail: `${fmtInt(rows)} rows`,
      notes,
      pass: rows >= acked,
    });
  } finally {
    await zest?.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}
