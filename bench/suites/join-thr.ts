/**
 * zest joined to a zenoh network (issue 37, docs/zenoh-network.md): pico throughput from a
 * publisher on zenoh's router's side to a subscriber on zest. `z_pub_thr -s 8` is a client of
 * zenoh's own router (the eclipse-zenoh wheel's, router mode); `z_sub_thr` a client of a zest
 * child joined to that router with `-e`. The baseline, in alternating rounds of the same run: the
 * same pair both clients of zenoh's router. Each round's figure is the median of the msgs/s
 * windows z_sub_thr printed, its first (warm-up) window dropped; the ratio compares the messages
 * delivered in all (windows of a fixed count, rounds as long). Target: at least 0.8× the
 * baseline. Runs in a loopback-only namespace.
 */
import { setTimeout as sleep } from "node:timers/promises";
import { fmtInt, fmtRatio } from "../lib/format.js";
import { startJoinedPair } from "../lib/join.js";
import { interferenceNotes, processCpuSeconds, startInterference } from "../lib/proc.js";
import type { BenchResult } from "../lib/types.js";
import { inLoopbackNamespace, median, numericLines, pico } from "../lib/zenoh.js";

const ROUNDS = 2;
const ROUND_MS = 6_000;
/** Time for the subscriber's declaration to reach the publisher's router (through zest, when joined). */
const SETTLE_MS = 1_500;
const TARGET_RATIO = 0.8;

/** One round: the subscriber on `subLocator`, the publisher on zenoh's router; its windows and the pair's CPU. */
async function round(subLocator: string, pubLocator: string): Promise<{ values: number[]; picoCpu: number }> {
  const sub = pico("z_sub_thr", ["-e", subLocator]);
  await sleep(SETTLE_MS);
  const pub = pico("z_pub_thr", ["-e", pubLocator, "-s", "8"]);
  await sleep(ROUND_MS);
  const picoCpu = processCpuSeconds(sub.proc.pid!) + processCpuSeconds(pub.proc.pid!);
  await pub.stop();
  await sub.stop();
  return { values: numericLines(sub).slice(1), picoCpu };
}

async function measure(): Promise<BenchResult> {
  const pair = await startJoinedPair(["--cfg", "plugins/storage_manager:{storages:{}}"]);
  const z = pair.zest;
  const joined: number[] = [];
  const router: number[] = [];
  let picoCpu = 0;
  let zestCpu = 0;
  let zestWall = 0;
  const interference = startInterference([z.pid]);
  try {
    for (let i = 0; i < ROUNDS; i++) {
      for (const side of i % 2 === 0 ? ["router", "joined"] : ["joined", "router"]) {
        if (side === "router") {
          const r = await round(pair.routerLocator, pair.routerLocator);
          router.push(...r.values);
          picoCpu += r.picoCpu;
        } else {
          const c0 = z.cpuSeconds();
          const t0 = performance.now();
          const r = await round(z.locator, pair.routerLocator);
          zestCpu += z.cpuSeconds() - c0;
          zestWall += (performance.now() - t0) / 1000;
          joined.push(...r.values);
          picoCpu += r.picoCpu;
        }
      }
    }
  } finally {
    await pair.stop();
  }
  // zenoh's router is a child of this process's child (the python script): its CPU counts as the host's.
  const f = interference(picoCpu);
  const joinedMsgs = median(joined);
  const routerMsgs = median(router);
  // z_sub_thr prints one window per fixed count of messages and both sides' rounds are as long:
  // the windows' counts compare what each side delivered in all, stalls included (pico's pair on
  // zenoh's router receives for a fraction of a second, then stalls), which the medians do not.
  const medianRatio = joinedMsgs / routerMsgs;
  const ratio = joined.length / router.length;
  const zestCpuPct = (100 * zestCpu) / zestWall;
  const notes = interferenceNotes("throughput", f);
  if (joined.length === 0) notes.push("z_sub_thr on zest printed no window: nothing arrived through the join");
  notes.push("zenoh's router (a python process running zenoh-rust) is counted with the other processes");
  return {
    name: "join-thr",
    figures: {
      joinedMsgPerSec: joinedMsgs,
      routerMsgPerSec: routerMsgs,
      medianRatio,
      joinedWindows: joined.length,
      routerWindows: router.length,
      zestCpuPct,
      otherCpuPct: f.otherCpuPct,
    },
    ratio,
    target: `>= ${fmtRatio(TARGET_RATIO)}`,
    pass: ratio >= TARGET_RATIO,
    summary: `z_pub_thr on zenoh's router → zest (joined) → z_sub_thr ${fmtInt(joinedMsgs)} msg/s / both on zenoh's router ${fmtInt(routerMsgs)} msg/s (8-byte payloads, medians of ${joined.length} and ${router.length} windows, ${fmtRatio(medianRatio)}; messages delivered in all, joined/router: ${fmtRatio(ratio)}; zest at ${Math.round(zestCpuPct)}% of a core)`,
    notes,
    interferencePct: f.otherCpuPct,
  };
}

export function run(): Promise<BenchResult> {
  return inLoopbackNamespace("join-thr", measure);
}
