/**
 * zenoh throughput (issue 25): pico `z_pub_thr -s 8` → zest → `z_sub_thr`, both clients of a
 * zest child with the zenoh door, beside the same pair connected directly peer to peer (the
 * limit of the clients themselves), in alternating rounds. Each round's figure is the median of
 * the msgs/s windows z_sub_thr printed, its first (warm-up) window dropped. Runs in a
 * loopback-only namespace (bench/lib/zenoh.ts).
 */
import { setTimeout as sleep } from "node:timers/promises";
import { fmtInt } from "../lib/format.js";
import { interferenceNotes, processCpuSeconds } from "../lib/proc.js";
import type { BenchResult } from "../lib/types.js";
import {
  alternatePairRounds,
  inLoopbackNamespace,
  median,
  numericLines,
  pico,
  picoPairArgs,
  type PairRound,
} from "../lib/zenoh.js";

const ROUNDS = 2;
const ROUND_MS = 6_000;
/** Time for a subscriber to open its session and declare before the publisher starts. */
const SETTLE_MS = 800;
const TARGET_MSGS = 1_000_000;

/**
 * One round: the pair, directly or through `zest`; the msgs/s windows the subscriber printed,
 * and the CPU seconds the pair used (part of the measurement, not interference).
 */
const round: PairRound = async (zest) => {
  const { listener, connector } = await picoPairArgs(zest);
  const sub = pico("z_sub_thr", listener);
  await sleep(SETTLE_MS);
  const pub = pico("z_pub_thr", [...connector, "-s", "8"]);
  await sleep(ROUND_MS);
  const picoCpu = processCpuSeconds(sub.proc.pid!) + processCpuSeconds(pub.proc.pid!);
  await pub.stop();
  await sub.stop();
  return { values: numericLines(sub).slice(1), picoCpu };
};

async function measure(): Promise<BenchResult> {
  const { direct, through, zestCpuSeconds, zestWallSeconds, ...f } = await alternatePairRounds(ROUNDS, round);
  const zestCpuPct = (100 * zestCpuSeconds) / zestWallSeconds;
  const zestMsgs = median(through);
  // On a shared host zest may get less than a core: what it routes per CPU-second it did get
  // is the figure that says what a whole core would carry.
  const zestMsgPerCpuSecond = zestMsgs / (zestCpuPct / 100);
  const directMsgs = median(direct);
  const notes = interferenceNotes("throughput", f);
  if (through.length === 0) notes.push("z_sub_thr printed no window through zest: nothing arrived");
  return {
    name: "zenoh-thr",
    figures: {
      zestMsgPerSec: zestMsgs,
      directMsgPerSec: directMsgs,
      zestWindows: through.length,
      directWindows: direct.length,
      zestCpuPct,
      zestMsgPerCpuSecond,
      otherCpuPct: f.otherCpuPct,
    },
    ratio: zestMsgs / directMsgs,
    target: `>= ${fmtInt(TARGET_MSGS)} msg/s through zest`,
    pass: zestMsgs >= TARGET_MSGS,
    summary: `zest ${fmtInt(zestMsgs)} msg/s / direct peer-to-peer ${fmtInt(directMsgs)} msg/s (8-byte payloads, medians of ${through.length} and ${direct.length} windows; zest at ${Math.round(zestCpuPct)}% of a core, ${fmtInt(zestMsgPerCpuSecond)} msg per CPU-second)`,
    notes,
    interferencePct: f.otherCpuPct,
  };
}

export function run(): Promise<BenchResult> {
  return inLoopbackNamespace("zenoh-thr", measure);
}
