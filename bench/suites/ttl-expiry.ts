/**
 * Expiry on time (issue 27): 1,000,000 keys of 100 bytes in the memory volume, with deadlines
 * spread evenly over 60 s, while a mixed workload (90% GET / 10% PUT over 1,000 other keys)
 * runs in the same router (20,000 ops/s, TTL_BENCH_MIX_OPS); how late each expiry's DELETE reaches a subscriber
 * (bench/workers/ttl.mjs, on the built package). TTL_BENCH_KEYS and TTL_BENCH_SECONDS scale it.
 *
 * The keys are written through the router's in-process Session API (no HTTP, no NATS), the
 * fastest honest path for what is measured here: the router's expiry, not its doors. Each key
 * carries an absolute deadline (`{ deadline }`), and the deadlines start once all are written.
 */
import { fmtInt, fmtNum } from "../lib/format.js";
import { runWorker } from "../lib/proc.js";
import type { BenchResult } from "../lib/types.js";

const TARGET_P99_MS = 100;

interface WorkerOut {
  cpuSeconds: number;
  keys: number;
  spreadSeconds: number;
  expired: number;
  early: number;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
  fillSeconds: number;
  mixOpsPerSec: number;
}

export async function run(): Promise<BenchResult> {
  const keys = process.env.TTL_BENCH_KEYS ?? "1000000";
  const seconds = process.env.TTL_BENCH_SECONDS ?? "60";
  const { out: w, ...interference } = await runWorker<WorkerOut>("ttl.mjs", [], ["expiry", keys, seconds], {
    timeoutMs: 600_000,
  });
  const notes: string[] = [];
  if (w.expired !== w.keys) notes.push(`only ${w.expired} of ${w.keys} keys expired`);
  if (w.early > 0) notes.push(`${w.early} keys expired before their deadline`);
  return {
    name: "ttl-expiry",
    figures: { ...w, otherCpuPct: interference.otherCpuPct, stealPct: interference.stealPct },
    ratio: w.p99Ms,
    target: `p99 <= ${TARGET_P99_MS} ms late`,
    pass: w.p99Ms <= TARGET_P99_MS && w.expired === w.keys && w.early === 0,
    summary: `${fmtInt(w.expired)} keys over ${w.spreadSeconds} s: late by p50 ${fmtNum(w.p50Ms, 0)} ms, p99 ${fmtNum(w.p99Ms, 0)} ms, max ${fmtNum(w.maxMs, 0)} ms, with ${fmtInt(w.mixOpsPerSec)} mixed ops/s alongside`,
    interferencePct: Math.max(interference.otherCpuPct, interference.stealPct),
    notes,
  };
}
