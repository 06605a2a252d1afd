/**
 * PUT with a TTL (issue 27): PUTs of 100 bytes with `?_ttl=1h` against the same PUTs without,
 * on one zest child process with one memory storage, each side writing one key over and over
 * (the TTL's deadline moves in place). Runs alternate (warm-up, then ttl plain, plain ttl).
 */
import { type ServerProcess, spawnZest } from "../lib/proc.js";
import { comparePutPair, putPairResult } from "../lib/put-pair.js";
import { memory, storagesCfg } from "../lib/storages.js";
import type { BenchResult } from "../lib/types.js";

const TARGET = 0.95;

export async function run(): Promise<BenchResult> {
  let zest: ServerProcess | undefined;
  try {
    zest = await spawnZest("zest-ttl-put", storagesCfg({ ttl: memory("ttl/**"), plain: memory("plain/**") }));
    const pair = await comparePutPair(
      zest,
      { prefix: "ttl", label: "PUT ?_ttl=1h", path: "/ttl/k?_ttl=1h" },
      { prefix: "plain", label: "plain PUT", path: "/plain/k" },
    );
    return putPairResult("ttl-put", TARGET, pair);
  } finally {
    await zest?.stop();
  }
}
