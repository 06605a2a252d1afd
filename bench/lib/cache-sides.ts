/**
 * The read-cache comparison of `get` and `mixed`: zest, a second zest with its read cache off
 * (`plugins/rest/cache_entries: 0`), and a bare baseline, given the same requests in alternation.
 * The ratio is zest's over the baseline's; the cache-off side is reported beside it.
 */
import { fmtInt, fmtRatio } from "./format.js";
import {
  compare,
  cpuPerReq,
  type LoadFigures,
  loadFigures,
  loadNotes,
  PAIRED_ROUNDS,
  pairedRatio,
  type RequestSpec,
  roundsNote,
} from "./load.js";
import { type ServerProcess, spawnBaseline, spawnZest } from "./proc.js";

/** The three servers; `stop()` stops every one that started. */
export interface CacheSides {
  zest: ServerProcess;
  uncached: ServerProcess;
  base: ServerProcess;
  stop(): Promise<void>;
}

/** Starts `<name>` and `<name>-uncached` zest children and baseline `script` with `args`. */
export async function startCacheSides(name: string, script: string, args: string[]): Promise<CacheSides> {
  const started: ServerProcess[] = [];
  const stop = async (): Promise<void> => {
    await Promise.all(started.map((s) => s.stop()));
  };
  try {
    const zest = await spawnZest(name);
    started.push(zest);
    const uncached = await spawnZest(`${name}-uncached`, ["--cfg", "plugins/rest/cache_entries:0"]);
    started.push(uncached);
    const base = await spawnBaseline(script, args);
    started.push(base);
    return { zest, uncached, base, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}

/** What `compareCacheSides` measured, with the parts of a `BenchResult` it gives. */
export interface CacheComparison {
  z: LoadFigures;
  b: LoadFigures;
  u: LoadFigures;
  ratio: number;
  uncachedRatio: number;
  figures: Record<string, number>;
  summary: string;
  interferencePct: number;
  notes: string[];
}

/** Runs `spec()` (a fresh spec a side, so each sees the same sequence) against the three servers. */
export async function compareCacheSides(sides: CacheSides, spec: () => RequestSpec): Promise<CacheComparison> {
  const [z, b, u] = await compare(
    [
      { server: sides.zest, spec: spec() },
      { server: sides.base, spec: spec() },
      { server: sides.uncached, spec: spec() },
    ],
    PAIRED_ROUNDS,
  );
  const ratio = pairedRatio(z!, b!);
  const uncachedRatio = pairedRatio(u!, b!);
  return {
    z: z!,
    b: b!,
    u: u!,
    ratio,
    uncachedRatio,
    figures: {
      ...loadFigures("zest", z!),
      ...loadFigures("baseline", b!),
      ...loadFigures("uncached", u!),
      uncachedRatio,
      // Server CPU per response, baseline over zest: the same ratio read from CPU accounting
      // rather than wall time, so it holds up better when neighbours share the machine.
      cpuPerReqRatio: cpuPerReq(b!) / cpuPerReq(z!),
    },
    summary: `zest ${fmtInt(z!.reqPerSec)} req/s / node:http ${fmtInt(b!.reqPerSec)} req/s (${roundsNote(z!, b!)}; read cache off: ${fmtInt(u!.reqPerSec)} req/s, ${fmtRatio(uncachedRatio)})`,
    interferencePct: Math.max(...[z!, b!, u!].flatMap((f) => [f.otherCpuPct, f.stealPct])),
    notes: [...loadNotes("zest", z!), ...loadNotes("node:http", b!), ...loadNotes("zest, cache off", u!)],
  };
}
