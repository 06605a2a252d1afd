/**
 * zenoh-python throughput (issue 35): a zenoh-python publisher → a zenoh-python subscriber
 * (bench/workers/zenoh-python-thr.py, 8-byte payloads, congestion control BLOCK), both clients
 * of a zest child with the zenoh door, beside the same pair through zenoh's own router (the
 * wheel's Rust runtime, zenohd without plugins) and connected directly peer to peer, in rounds
 * whose order rotates. Each round's figure is the median of the samples/s windows the subscriber
 * printed, its first (warm-up) window dropped. Runs in a loopback-only namespace
 * (bench/lib/zenoh.ts).
 */
import { setTimeout as sleep } from "node:timers/promises";
import { runZenohProgram } from "../../test/support/pico.js";
import { ZENOH_PYTHON } from "../../test/support/zenoh-python.js";
import { fmtInt } from "../lib/format.js";
import { BENCH_DIR, interferenceNotes, processCpuSeconds } from "../lib/proc.js";
import type { BenchResult } from "../lib/types.js";
import {
  alternatePairRounds,
  pairCpuPcts,
  freeLocator,
  inLoopbackNamespace,
  mean,
  median,
  numericLines,
  type PairRound,
  type PairSide,
  zenohRouterSkip,
} from "../lib/zenoh.js";

const ROUNDS = 2;
const ROUND_MS = 6_000;
const PAYLOAD = 8;
/** zest's samples/s over zenoh's router's. */
const TARGET_RATIO = 1.0;
const SCRIPT = `${BENCH_DIR}/workers/zenoh-python-thr.py`;

/** The mode and endpoint arguments of the subscriber and the publisher on `side`. */
async function pairArgs(side: PairSide): Promise<{ sub: string[]; pub: string[] }> {
  if (side !== undefined && "relay" in side) return { sub: ["peer", "-l", side.target], pub: ["peer", side.relay] };
  if (side) return { sub: ["client", side.locator], pub: ["client", side.locator] };
  const loc = await freeLocator();
  return { sub: ["peer", "-l", loc], pub: ["peer", loc] };
}

function python(role: "sub" | "pub", args: string[]) {
  return runZenohProgram(`zenoh-python ${role}`, [ZENOH_PYTHON, "-u", SCRIPT, role, ...args], {
    env: { RUST_LOG: "error" },
  });
}

/** One round: the samples/s windows the subscriber printed, and the CPU seconds the pair used. */
const round: PairRound = async (side) => {
  const { sub: subArgs, pub: pubArgs } = await pairArgs(side);
  const sub = python("sub", subArgs);
  await sub.waitFor(/^ready$/, 15_000);
  const pub = python("pub", [...pubArgs, String(PAYLOAD)]);
  await pub.waitFor(/^ready$/, 15_000);
  await sleep(ROUND_MS);
  const cpu = processCpuSeconds(sub.proc.pid!) + processCpuSeconds(pub.proc.pid!);
  await pub.stop();
  await sub.stop();
  return { values: numericLines(sub).slice(1), picoCpu: cpu };
};

async function measure(): Promise<BenchResult> {
  const noRouter = zenohRouterSkip();
  if (noRouter) throw new Error(noRouter);
  const f = await alternatePairRounds(ROUNDS, round, { router: true, relay: true });
  const { direct, through, routed, relayed } = f;
  const { zestCpuPct, routerCpuPct } = pairCpuPcts(f);
  // Each window is one second: their mean is what arrived in all over the rounds, stalls
  // included (a second with nothing counts as 0); the median hides a stall.
  const zestMsgs = mean(through);
  const routerMsgs = mean(routed);
  const directMsgs = mean(direct);
  const relayMsgs = mean(relayed);
  const ratio = zestMsgs / routerMsgs;
  // The floor: the peers joined by a bare node:net relay, the most a Node process between them
  // carries on this host; under zenoh's router's figure, no Node router reaches it here.
  const floorRatio = relayMsgs / routerMsgs;
  const notes = interferenceNotes("throughput", f);
  if (through.length === 0) notes.push("the subscriber printed no window through zest: nothing arrived");
  if (routed.length === 0) notes.push("the subscriber printed no window through zenoh's router: nothing arrived");
  return {
    name: "zenoh-python-thr",
    figures: {
      zestMsgPerSec: zestMsgs,
      routerMsgPerSec: routerMsgs,
      directMsgPerSec: directMsgs,
      relayMsgPerSec: relayMsgs,
      floorRatio,
      zestMedianMsgPerSec: median(through),
      routerMedianMsgPerSec: median(routed),
      zestWindows: through.length,
      routerWindows: routed.length,
      directWindows: direct.length,
      zestCpuPct,
      routerCpuPct,
      otherCpuPct: f.otherCpuPct,
    },
    ratio,
    target: `>= ${TARGET_RATIO.toFixed(1)}x zenoh's router`,
    pass: ratio >= TARGET_RATIO,
    summary: `zest ${fmtInt(zestMsgs)} samples/s (at ${Math.round(zestCpuPct)}% of a core) / zenoh's router ${fmtInt(routerMsgs)} samples/s (at ${Math.round(routerCpuPct)}% of a core) / direct peer-to-peer ${fmtInt(directMsgs)} samples/s; the floor, the peers through a bare node:net relay: ${fmtInt(relayMsgs)} samples/s = ${floorRatio.toFixed(2)}x the router (${PAYLOAD}-byte payloads; means of ${through.length}, ${routed.length}, ${direct.length} and ${relayed.length} one-second windows; medians zest ${fmtInt(median(through))} / router ${fmtInt(median(routed))})`,
    notes,
    interferencePct: f.otherCpuPct,
  };
}

export function run(): Promise<BenchResult> {
  return inLoopbackNamespace("zenoh-python-thr", measure);
}
