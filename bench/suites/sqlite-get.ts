/**
 * SQLite volume GET (issue 3): GET of one key (a 60-byte JSON value) from a SQLite storage,
 * against the same GET from a memory storage, autocannon 32 connections, on one zest child
 * process with exactly these two storages (`sql/**` in a fresh temp file, `mem/**`).
 *
 * The router's read cache answers repeated GETs of unchanged data without asking the storage, so
 * the comparison runs with it off (`plugins/rest/cache_entries: 0`): what is measured is the
 * query and the storage lookup. A second router with the cache on (its default) is measured
 * briefly alongside (`cached...` figures), where both volumes should be alike.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fmtInt, fmtNum } from "../lib/format.js";
import { httpGetText, httpPut } from "../lib/http.js";
import { loadNotes, pairedRatio, roundsNote, PAIRED_ROUNDS } from "../lib/load.js";
import { JSON_60 } from "../lib/payloads.js";
import { type ServerProcess, spawnZest } from "../lib/proc.js";
import { memory, sqlite, storagesCfg } from "../lib/storages.js";
import { compareSystems, systemFigures } from "../lib/system-load.js";
import type { BenchResult } from "../lib/types.js";

const TARGET = 0.8;

export async function run(): Promise<BenchResult> {
  const dir = mkdtempSync(join(tmpdir(), "zest-bench-sqlite-"));
  const servers: ServerProcess[] = [];
  try {
    const storages = (file: string): string[] =>
      storagesCfg({ mem: memory("mem/**"), sql: sqlite("sql/**", join(dir, file)) });
    const uncached = await spawnZest("zest-sqlite-get", [
      ...storages("uncached.db"),
      "--cfg",
      "plugins/rest/cache_entries:0",
    ]);
    servers.push(uncached);
    const cached = await spawnZest("zest-sqlite-get-cached", storages("cached.db"));
    servers.push(cached);
    for (const z of servers) {
      for (const key of ["sql/one", "mem/one"]) {
        await httpPut(z.url, `/${key}`, JSON_60, "application/json");
        const check = await httpGetText(z.url, `/${key}`);
        if (!check.includes('"sensor"')) throw new Error(`unexpected GET answer for ${key}: ${check}`);
      }
    }

    const sqlSpec = { path: "/sql/one" };
    const memSpec = { path: "/mem/one" };
    const {
      figures: [sql, mem],
    } = await compareSystems(
      [
        { server: uncached, spec: sqlSpec },
        { server: uncached, spec: memSpec },
      ],
      PAIRED_ROUNDS,
    );
    const {
      figures: [cSql, cMem],
    } = await compareSystems(
      [
        { server: cached, spec: sqlSpec },
        { server: cached, spec: memSpec },
      ],
      { connections: 32, warmupSeconds: 1, roundSeconds: 3, rounds: 1 },
    );
    const s = sql!;
    const m = mem!;
    const ratio = pairedRatio(s, m);
    const cachedRatio = cSql!.reqPerSec / cMem!.reqPerSec;
    return {
      name: "sqlite-get",
      figures: {
        ...systemFigures("sqlite", s),
        ...systemFigures("memory", m),
        ...systemFigures("cachedSqlite", cSql!),
        ...systemFigures("cachedMemory", cMem!),
        cachedRatio,
        // CPU per GET, memory over SQLite: the same ratio from CPU accounting.
        cpuPerReqRatio: m.systemUsPerReq / s.systemUsPerReq,
      },
      ratio,
      target: `>= ${TARGET}x`,
      pass: ratio >= TARGET,
      summary:
        `read cache off: sqlite ${fmtInt(s.reqPerSec)} req/s / memory ${fmtInt(m.reqPerSec)} req/s ` +
        `(${roundsNote(s, m)}; CPU per GET ${fmtNum(s.systemUsPerReq, 0)} µs / ${fmtNum(m.systemUsPerReq, 0)} µs; ` +
        `cache on: ${fmtInt(cSql!.reqPerSec)} / ${fmtInt(cMem!.reqPerSec)} req/s, ${fmtNum(cachedRatio, 2)}x)`,
      interferencePct: Math.max(...[s, m, cSql!, cMem!].flatMap((f) => [f.otherCpuPct, f.stealPct])),
      notes: [
        ...loadNotes("sqlite", s),
        ...loadNotes("memory", m),
        ...loadNotes("sqlite, cache on", cSql!),
        ...loadNotes("memory, cache on", cMem!),
      ],
    };
  } finally {
    await Promise.all(servers.map((z) => z.stop()));
    rmSync(dir, { recursive: true, force: true });
  }
}
