/**
 * Conditional PUT (issue 13): PUTs of 100 bytes with `If-None-Match: *` (create only if absent,
 * so the memory storage checks and writes in one step) against the same PUTs without the header,
 * on one zest child process with one memory storage; every request writes a new key, so every
 * conditional PUT succeeds. Runs alternate (warm-up, then cond plain, plain cond).
 */
import { type ServerProcess, spawnZest } from "../lib/proc.js";
import { comparePutPair, putPairResult } from "../lib/put-pair.js";
import { memory, storagesCfg } from "../lib/storages.js";
import type { BenchResult } from "../lib/types.js";

const TARGET = 0.9;

export async function run(): Promise<BenchResult> {
  let zest: ServerProcess | undefined;
  try {
    zest = await spawnZest("zest-conditional-put", storagesCfg({ cond: memory("cond/**"), plain: memory("plain/**") }));
    const pair = await comparePutPair(
      zest,
      {
        prefix: "conditional",
        label: "If-None-Match PUT",
        path: "/cond/k",
        headers: { "if-none-match": "*" },
        distinctKeys: true,
      },
      { prefix: "plain", label: "plain PUT", path: "/plain/k", distinctKeys: true },
    );
    return putPairResult("conditional-put", TARGET, pair);
  } finally {
    await zest?.stop();
  }
}
