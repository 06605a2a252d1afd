/**
 * zenoh round trip (issue 25): pico `z_ping` / `z_pong` (8-byte payloads) through a zest child
 * with the zenoh door, beside the same pair connected directly peer to peer, and the same peer
 * pair joined through a bare `node:net` relay child (`baselines/tcp-relay.mjs`), in rounds whose
 * order rotates. z_ping prints each round trip in µs after its warm-up; the figure is the median
 * of every round trip of a side. Runs in a loopback-only namespace (bench/lib/zenoh.ts).
 *
 * The relay is the floor: a round trip through zest crosses one more process twice (ping → zest
 * → pong, pong → zest → ping), and so does one through the relay, which does nothing but pass the
 * bytes on. relay/direct is what a process hop in Node.js costs on this host, whatever the
 * router does; zest/relay is what zest's zenoh work adds to it. The target stays zest/direct.
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

const ROUNDS = 3;
const PINGS = 3_000;
const WARMUP_MS = 1_000;
const SETTLE_MS = 800;
const TARGET_RATIO = 3;

/**
 * One round; the round trips z_ping printed, and the CPU seconds of z_pong. z_ping's own CPU is
 * not known once it exited: it counts as interference (it mostly waits).
 */
const round: PairRound = async (side) => {
  const { listener, connector } = await picoPairArgs(side);
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
  const { direct, through, relayed, ...f } = await alternatePairRounds(ROUNDS, round, { relay: true });
  const zestP50 = percentile([...through], 50);
  const directP50 = percentile([...direct], 50);
  const relayP50 = percentile([...relayed], 50);
  const zestP99 = percentile([...through], 99);
  const directP99 = percentile([...direct], 99);
  const relayP99 = percentile([...relayed], 99);
  const ratio = zestP50 / directP50;
  const relayOverDirect = relayP50 / directP50;
  const zestOverRelay = zestP50 / relayP50;
  const notes = interferenceNotes("round trips", f);
  for (const [side, n] of [
    ["zest", through.length],
    ["the relay", relayed.length],
  ] as const)
    if (n < ROUNDS * PINGS * 0.9) notes.push(`only ${n} round trips through ${side} of ${ROUNDS * PINGS} asked`);
  return {
    name: "zenoh-ping",
    figures: {
      zestP50Us: zestP50,
      directP50Us: directP50,
      relayP50Us: relayP50,
      zestP99Us: zestP99,
      directP99Us: directP99,
      relayP99Us: relayP99,
      relayOverDirect,
      zestOverRelay,
      zestPings: through.length,
      directPings: direct.length,
      relayPings: relayed.length,
      otherCpuPct: f.otherCpuPct,
    },
    ratio,
    target: `p50 <= ${TARGET_RATIO}x direct`,
    pass: ratio <= TARGET_RATIO,
    summary: `round trip p50 zest ${zestP50} µs / direct ${directP50} µs; the floor, a bare node:net relay: ${relayP50} µs = ${relayOverDirect.toFixed(2)}x direct, zest/relay ${zestOverRelay.toFixed(2)}x (p99 zest ${zestP99} / direct ${directP99} / relay ${relayP99} µs; ${through.length}, ${direct.length} and ${relayed.length} pings of 8 bytes)`,
    notes,
    interferencePct: f.otherCpuPct,
  };
}

export function run(): Promise<BenchResult> {
  return inLoopbackNamespace("zenoh-ping", measure);
}
