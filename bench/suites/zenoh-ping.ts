/**
 * zenoh round trip (issue 25): pico `z_ping` / `z_pong` (8-byte payloads) through a zest child
 * with the zenoh door, beside the same pair connected directly peer to peer, in alternating
 * rounds. z_ping prints each round trip in µs after its warm-up; the figure is the median of
 * every round trip of a side. Runs in a loopback-only namespace (bench/lib/zenoh.ts).
 */
import { setTimeout as sleep } from "node:timers/promises";
import { interferenceNotes, processCpuSeconds } from "../lib/proc.js";
import type { BenchResult } from "../lib/types.js";
import {
  alternatePairRounds,
  inLoopbackNamespace,
  numericLines,
  percentile,
  pico,
  picoPairArgs,
  type PairRound,
} from "../lib/zenoh.js";

const ROUNDS = 2;
const PINGS = 3_000;
const WARMUP_MS = 1_000;
const SETTLE_MS = 800;
const TARGET_RATIO = 3;

/**
 * One round; the round trips z_ping printed, and the CPU seconds of z_pong. z_ping's own CPU is
 * not known once it exited: it counts as interference (it mostly waits).
 */
const round: PairRound = async (zest) => {
  const { listener, connector } = await picoPairArgs(zest);
  const pong = pico("z_pong", listener);
  await sleep(SETTLE_MS);
  const ping = pico("z_ping", [...connector, "-s", "8", "-n", String(PINGS), "-w", String(WARMUP_MS)]);
  const timeout = setTimeout(() => void ping.stop(), 60_000);
  await ping.exited();
  clearTimeout(timeout);
  const picoCpu = processCpuSeconds(pong.proc.pid!);
  await pong.stop();
  return { values: numericLines(ping), picoCpu };
};

async function measure(): Promise<BenchResult> {
  const { direct, through, ...f } = await alternatePairRounds(ROUNDS, round);
  const zestP50 = percentile([...through], 50);
  const directP50 = percentile([...direct], 50);
  const zestP99 = percentile([...through], 99);
  const directP99 = percentile([...direct], 99);
  const ratio = zestP50 / directP50;
  const notes = interferenceNotes("round trips", f);
  if (through.length < ROUNDS * PINGS * 0.9)
    notes.push(`only ${through.length} round trips through zest of ${ROUNDS * PINGS} asked`);
  return {
    name: "zenoh-ping",
    figures: {
      zestP50Us: zestP50,
      directP50Us: directP50,
      zestP99Us: zestP99,
      directP99Us: directP99,
      zestPings: through.length,
      directPings: direct.length,
      otherCpuPct: f.otherCpuPct,
    },
    ratio,
    target: `p50 <= ${TARGET_RATIO}x direct`,
    pass: ratio <= TARGET_RATIO,
    summary: `round trip p50 zest ${zestP50} µs / direct ${directP50} µs (p99 ${zestP99} / ${directP99} µs; ${through.length} and ${direct.length} pings of 8 bytes)`,
    notes,
    interferencePct: f.otherCpuPct,
  };
}

export function run(): Promise<BenchResult> {
  return inLoopbackNamespace("zenoh-ping", measure);
}
