/**
 * GET of one key (issue 2): zest with its default memory storage on `**`, the key put beforehand
 * with a 60-byte JSON value, against a bare node:http server answering the same 60 bytes.
 * Both servers are child processes; autocannon (32 connections) runs here.
 *
 * Repeated GETs of unchanged data are answered from zest's read cache, so the target is measured
 * on that path. A second zest with the cache off (`plugins/rest/cache_entries: 0`) is measured
 * alongside and reported (`uncached...`): it is what a GET costs when writes keep invalidating
 * the cache, i.e. the query, storage lookup and rendering path.
 */
import { fmtInt, fmtRatio } from "../lib/format.js";
import { httpGetText, httpPut } from "../lib/http.js";
import { compare, cpuPerReq, loadFigures, loadNotes, pairedRatio, roundsNote, PAIRED_ROUNDS } from "../lib/load.js";
import { JSON_60 } from "../lib/payloads.js";
import { type ServerProcess, spawnBaseline, spawnZest } from "../lib/proc.js";
import type { BenchResult } from "../lib/types.js";

const TARGET = 0.85;
/** The read cache off (issue 12): the query path alone, against the same bare server. */
const UNCACHED_TARGET = 0.8;

export async function run(): Promise<BenchResult> {
  const servers: ServerProcess[] = [];
  try {
    const zest = await spawnZest("zest-get");
    servers.push(zest);
    const uncached = await spawnZest("zest-get-uncached", ["--cfg", "plugins/rest/cache_entries:0"]);
    servers.push(uncached);
    const base = await spawnBaseline("get-json.mjs", [JSON_60]);
    servers.push(base);
    for (const z of [zest, uncached]) {
      await httpPut(z.url, "/bench/one", JSON_60, "application/json");
      const check = await httpGetText(z.url, "/bench/one");
      if (!check.includes('"sensor": "bench/one"') && !check.includes('"sensor":"bench/one"'))
        throw new Error(`unexpected GET answer: ${check}`);
    }

    const spec = { path: "/bench/one" };
    const [z, b, u] = await compare(
      [
        { server: zest, spec },
        { server: base, spec },
        { server: uncached, spec },
      ],
      PAIRED_ROUNDS,
    );
    const ratio = pairedRatio(z, b);
    const uncachedRatio = pairedRatio(u, b);
    return {
      name: "get",
      figures: {
        ...loadFigures("zest", z),
        ...loadFigures("baseline", b),
        ...loadFigures("uncached", u),
        uncachedRatio,
        // Server CPU per response, baseline over zest: the same ratio read from CPU accounting
        // rather than wall time, so it holds up better when neighbours share the machine.
        cpuPerReqRatio: cpuPerReq(b) / cpuPerReq(z),
      },
      ratio,
      target: `>= ${TARGET}x (cache off >= ${UNCACHED_TARGET}x)`,
      pass: ratio >= TARGET && uncachedRatio >= UNCACHED_TARGET,
      summary: `zest ${fmtInt(z.reqPerSec)} req/s / node:http ${fmtInt(b.reqPerSec)} req/s (${roundsNote(z, b)}; read cache off: ${fmtInt(u.reqPerSec)} req/s, ${fmtRatio(uncachedRatio)})`,
      interferencePct: Math.max(...[z, b, u].flatMap((f) => [f.otherCpuPct, f.stealPct])),
      notes: [...loadNotes("zest", z), ...loadNotes("node:http", b), ...loadNotes("zest, cache off", u)],
    };
  } finally {
    await Promise.all(servers.map((s) => s.stop()));
  }
}
