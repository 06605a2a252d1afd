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
import { compareCacheSides, startCacheSides } from "../lib/cache-sides.js";
import { httpGetText, httpPut } from "../lib/http.js";
import { JSON_60 } from "../lib/payloads.js";
import type { BenchResult } from "../lib/types.js";

const TARGET = 0.85;
/** The read cache off (issue 12): the query path alone, against the same bare server. */
const UNCACHED_TARGET = 0.8;

export async function run(): Promise<BenchResult> {
  const sides = await startCacheSides("zest-get", "get-json.mjs", [JSON_60]);
  try {
    for (const z of [sides.zest, sides.uncached]) {
      await httpPut(z.url, "/bench/one", JSON_60, "application/json");
      const check = await httpGetText(z.url, "/bench/one");
      if (!check.includes('"sensor": "bench/one"') && !check.includes('"sensor":"bench/one"'))
        throw new Error(`unexpected GET answer: ${check}`);
    }
    const c = await compareCacheSides(sides, () => ({ path: "/bench/one" }));
    return {
      name: "get",
      figures: c.figures,
      ratio: c.ratio,
      target: `>= ${TARGET}x (cache off >= ${UNCACHED_TARGET}x)`,
      pass: c.ratio >= TARGET && c.uncachedRatio >= UNCACHED_TARGET,
      summary: c.summary,
      interferencePct: c.interferencePct,
      notes: c.notes,
    };
  } finally {
    await sides.stop();
  }
}
