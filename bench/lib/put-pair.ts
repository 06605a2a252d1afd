/**
 * Two kinds of 100-byte PUT on the same zest child (a TTL against none, SQLite against memory, a
 * conditional PUT against a plain one): same process, same HTTP and routing path, only what the
 * benchmark names differs. The sides run in alternation (warm-up, then A B, B A...) over
 * `PAIRED_ROUNDS`, and the ratio is the median of the per-round ratios, A over B.
 */
import { fmtInt, fmtNum } from "./format.js";
import { loadNotes, PAIRED_ROUNDS, pairedRatio, type RequestSpec, roundsNote } from "./load.js";
import { TEXT_100 } from "./payloads.js";
import type { ServerProcess } from "./proc.js";
import type { BenchResult } from "./types.js";
import { compareSystems, type SystemFigures, systemFigures } from "./system-load.js";

/** A PUT of the 100-byte text/plain body to `path`, with extra request `headers`. */
export function textPut(path: string, headers: Readonly<Record<string, string>> = {}): RequestSpec {
  return { path, method: "PUT", headers: { "content-type": "text/plain", ...headers }, body: TEXT_100 };
}

/** One side of the pair. */
export interface PutSide {
  /** Figure prefix and note label (`ttl`, `sqlite`...). */
  prefix: string;
  /** Its label in the summary (`PUT ?_ttl=1h`). */
  label: string;
  path: string;
  headers?: Readonly<Record<string, string>>;
  /** Every request writes a key of its own (`path` + a counter). */
  distinctKeys?: boolean;
}

/** What `comparePutPair` measured, with the parts of a `BenchResult` both sides give. */
export interface PutPair {
  a: SystemFigures;
  b: SystemFigures;
  /** Requests each side's warm-up sent: acknowledged, not counted. */
  warmupRequests: number[];
  ratio: number;
  /** Both sides' figures and the same ratio from CPU accounting (B's CPU per PUT over A's). */
  figures: Record<string, number>;
  interferencePct: number;
  notes: string[];
  /** `<A> n req/s / <B> m req/s (CPU per PUT x µs / y µs; <detail; >rounds)`. */
  summary(detail?: string): string;
}

/** Measures PUT side `a` against side `b` on `zest`. */
export async function comparePutPair(zest: ServerProcess, a: PutSide, b: PutSide): Promise<PutPair> {
  const target = (s: PutSide) => ({ server: zest, spec: textPut(s.path, s.headers), distinctKeys: s.distinctKeys });
  const {
    figures: [fa, fb],
    warmupRequests,
  } = await compareSystems([target(a), target(b)], PAIRED_ROUNDS);
  const x = fa!;
  const y = fb!;
  return {
    a: x,
    b: y,
    warmupRequests,
    ratio: pairedRatio(x, y),
    figures: {
      ...systemFigures(a.prefix, x),
      ...systemFigures(b.prefix, y),
      cpuPerReqRatio: y.systemUsPerReq / x.systemUsPerReq,
    },
    interferencePct: Math.max(x.otherCpuPct, x.stealPct, y.otherCpuPct, y.stealPct),
    notes: [...loadNotes(a.prefix, x), ...loadNotes(b.prefix, y)],
    summary: (detail) =>
      `${a.label} ${fmtInt(x.reqPerSec)} req/s / ${b.label} ${fmtInt(y.reqPerSec)} req/s (CPU per PUT ${fmtNum(x.systemUsPerReq, 0)} µs / ${fmtNum(y.systemUsPerReq, 0)} µs; ${detail ? `${detail}; ` : ""}${roundsNote(x, y)})`,
  };
}

/**
 * The result of benchmark `name` from `pair`, passing at `target` × and above; `extra` adds
 * figures, a detail to the summary, notes, and a further condition to pass.
 */
export function putPairResult(
  name: string,
  target: number,
  pair: PutPair,
  extra: { figures?: Record<string, number>; detail?: string; notes?: string[]; pass?: boolean } = {},
): BenchResult {
  return {
    name,
    figures: { ...pair.figures, ...extra.figures },
    ratio: pair.ratio,
    target: `>= ${target}x`,
    pass: pair.ratio >= target && (extra.pass ?? true),
    summary: pair.summary(extra.detail),
    interferencePct: pair.interferencePct,
    notes: [...pair.notes, ...(extra.notes ?? [])],
  };
}
