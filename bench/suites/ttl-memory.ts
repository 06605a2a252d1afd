/**
 * Memory per TTL (issue 27): the bytes (JS heap and array buffers, after a forced GC) that
 * 1,000,000 keys of 100 bytes hold in the memory volume when each has a TTL, minus those they
 * hold without, per key (bench/workers/ttl.mjs, two child processes).
 */
import { fmtNum } from "../lib/format.js";
import { runWorker } from "../lib/proc.js";
import type { BenchResult } from "../lib/types.js";

const TARGET_BYTES = 24;

interface WorkerOut {
  cpuSeconds: number;
  keys: number;
  bytesPerKey: number;
  rssMb: number;
}

export async function run(): Promise<BenchResult> {
  const keys = process.env.TTL_BENCH_KEYS ?? "1000000";
  const { out: plain } = await runWorker<WorkerOut>("ttl.mjs", ["--expose-gc"], ["memory", keys, "plain"]);
  const { out: ttl } = await runWorker<WorkerOut>("ttl.mjs", ["--expose-gc"], ["memory", keys, "ttl"]);
  const perTtl = ttl.bytesPerKey - plain.bytesPerKey;
  return {
    name: "ttl-memory",
    figures: { plainBytesPerKey: plain.bytesPerKey, ttlBytesPerKey: ttl.bytesPerKey, bytesPerTtl: perTtl },
    ratio: perTtl,
    target: `<= ${TARGET_BYTES} B per key`,
    pass: perTtl <= TARGET_BYTES,
    summary: `${fmtNum(perTtl, 1)} B per TTL (${fmtNum(ttl.bytesPerKey, 0)} B/key with, ${fmtNum(plain.bytesPerKey, 0)} B/key without; keys like bench/ttl/123456)`,
  };
}
