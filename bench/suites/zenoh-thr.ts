/**
 * zenoh throughput (issues 25 and 35): pico `z_pub_thr -s 8` → zest → `z_sub_thr`, both clients
 * of a zest child with the zenoh door, beside the same pair through zenoh's own router (the
 * wheel's Rust runtime, zenohd without plugins) and connected directly peer to peer (the limit of
 * the clients themselves), in rounds whose order rotates. Each round's figure is the median of
 * the msgs/s windows z_sub_thr printed, its first (warm-up) window dropped. Runs in a
 * loopback-only namespace (bench/lib/zenoh.ts). Without zenoh-python the router side is left
 * out, with a note.
 */
import { setTimeout as sleep } from "node:timers/promises";
import { fmtInt } from "../lib/format.js";
import { interferenceNotes, processCpuSeconds } from "../lib/proc.js";
import type { BenchResult } from "../lib/types.js";
import {
  alternatePairRounds,
  pairCpuPcts,
  inLoopbackNamespace,
  median,
  numericLines,
  pico,
  picoPairArgs,
  type PairRound,
  zenohRouterSkip,
} from "../lib/zenoh.js";

const ROUNDS = 2;
const ROUND_MS = 6_000;
/** Time for a subscriber to open its session and declare before the publisher starts. */
const SETTLE_MS = 800;
const TARGET_MSGS = 1_000_000;
/** zest's msgs/s over zenoh's router's (issue 35). */
const TARGET_RATIO = 1.0;

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
  const noRouter = zenohRouterSkip();
  const f = await alternatePairRounds(ROUNDS, round, { router: !noRouter, relay: true });
  const { direct, through, routed, relayed } = f;
  const { zestCpuPct, routerCpuPct } = pairCpuPcts(f);
  const zestMsgs = median(through);
  const routerMsgs = median(routed);
  // On a shared host zest may get less than a core: what it routes per CPU-second it did get
  // is the figure that says what a whole core would carry.
  const zestMsgPerCpuSecond = zestMsgs / (zestCpuPct / 100);
  const routerMsgPerCpuSecond = routerMsgs / (routerCpuPct / 100);
  const directMsgs = median(direct);
  const notes = interferenceNotes("throughput", f);
  if (through.length === 0) notes.push("z_sub_thr printed no window through zest: nothing arrived");
  if (noRouter) notes.push(`no zenoh router side: ${noRouter}`);
  else if (routed.length === 0) notes.push("z_sub_thr printed no window through zenoh's router: nothing arrived");
  // z_sub_thr prints one window per fixed count of messages, and every side's rounds are as long:
  // the windows' counts compare the messages each side delivered in all, stalls included, which
  // the median of the windows does not see. That is the throughput compared with the router.
  const deliveredRatio = through.length / routed.length;
  const medianRatio = zestMsgs / routerMsgs;
  const ratio = noRouter ? zestMsgs / directMsgs : deliveredRatio;
  // The floor: the peers joined by a bare node:net relay, the most a Node process between them
  // carries on this host.
  const relayMsgs = median(relayed);
  const floorRatio = relayed.length / routed.length;
  const routerPart = noRouter
    ? ""
    : ` / zenoh's router ${fmtInt(routerMsgs)} msg/s (${routed.length} windows, at ${Math.round(routerCpuPct)}% of a core, ${fmtInt(routerMsgPerCpuSecond)} msg per CPU-second; medians zest/router ${medianRatio.toFixed(2)}x; messages delivered in all, zest/router: ${deliveredRatio.toFixed(2)}x, the relay/router ${floorRatio.toFixed(2)}x)`;
  return {
    name: "zenoh-thr",
    figures: {
      zestMsgPerSec: zestMsgs,
      routerMsgPerSec: routerMsgs,
      directMsgPerSec: directMsgs,
      zestOverDirect: zestMsgs / directMsgs,
      zestWindows: through.length,
      routerWindows: routed.length,
      deliveredRatio,
      medianRatio,
      relayMsgPerSec: relayMsgs,
      relayWindows: relayed.length,
      floorRatio,
      directWindows: direct.length,
      zestCpuPct,
      routerCpuPct,
      zestMsgPerCpuSecond,
      routerMsgPerCpuSecond,
      otherCpuPct: f.otherCpuPct,
    },
    ratio,
    target: noRouter
      ? `>= ${fmtInt(TARGET_MSGS)} msg/s through zest`
      : `>= ${TARGET_RATIO.toFixed(1)}x zenoh's router, and >= ${fmtInt(TARGET_MSGS)} msg/s`,
    pass: zestMsgs >= TARGET_MSGS && (noRouter !== false || ratio >= TARGET_RATIO),
    summary: `zest ${fmtInt(zestMsgs)} msg/s (${through.length} windows, at ${Math.round(zestCpuPct)}% of a core, ${fmtInt(zestMsgPerCpuSecond)} msg per CPU-second)${routerPart} / direct peer-to-peer ${fmtInt(directMsgs)} msg/s (${direct.length} windows) / the floor, the peers through a bare node:net relay, ${fmtInt(relayMsgs)} msg/s (${relayed.length} windows; 8-byte payloads, medians)`,
    notes,
    interferencePct: f.otherCpuPct,
  };
}

export function run(): Promise<BenchResult> {
  return inLoopbackNamespace("zenoh-thr", measure);
}
