/**
 * zenoh round trip (issues 25 and 35): pico `z_ping` / `z_pong` (8-byte payloads) through a zest
 * child with the zenoh door, beside the same pair through zenoh's own router (the wheel's Rust
 * runtime, zenohd without plugins; left out with a note without zenoh-python), connected
 * directly peer to peer, and joined through a bare `node:net` relay child
 * (`baselines/tcp-relay.mjs`), in rounds whose order rotates. z_ping prints each round trip in
 * µs after its warm-up; the figure is the median of every round trip of a side. Runs in a loopback-only namespace (bench/lib/zenoh.ts).
 *
 * The relay is the floor: a round trip through zest crosses one more process twice (ping → zest
 * → pong, pong → zest → ping), and so does one through the relay, which does nothing but pass the
 * bytes on. relay/direct is what a process hop in Node.js costs on this host, whatever the
 * router does; zest/relay is what zest's zenoh work adds to it. The targets: zest/router (issue
 * 35) and zest/direct (issue 25).
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
  zenohRouterSkip,
} from "../lib/zenoh.js";

const ROUNDS = 3;
const PINGS = 3_000;
const WARMUP_MS = 1_000;
const SETTLE_MS = 800;
/** zest's p50 over the direct pair's (issue 25). */
const TARGET_DIRECT_RATIO = 3;
/** zest's p50 over zenoh's router's (issue 35). */
const TARGET_ROUTER_RATIO = 1.25;

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
  const noRouter = zenohRouterSkip();
  const { direct, through, relayed, routed, ...f } = await alternatePairRounds(ROUNDS, round, {
    relay: true,
    router: !noRouter,
  });
  const p50 = (xs: number[]): number => percentile([...xs], 50);
  const p99 = (xs: number[]): number => percentile([...xs], 99);
  const [zestP50, directP50, relayP50, routerP50] = [through, direct, relayed, routed].map(p50) as [
    number,
    number,
    number,
    number,
  ];
  const [zestP99, directP99, relayP99, routerP99] = [through, direct, relayed, routed].map(p99) as [
    number,
    number,
    number,
    number,
  ];
  const zestOverDirect = zestP50 / directP50;
  const zestOverRouter = zestP50 / routerP50;
  const relayOverDirect = relayP50 / directP50;
  const zestOverRelay = zestP50 / relayP50;
  const notes = interferenceNotes("round trips", f);
  if (noRouter) notes.push(`no zenoh router side: ${noRouter}`);
  const sides: Array<[string, number]> = [
    ["zest", through.length],
    ["the relay", relayed.length],
  ];
  if (!noRouter) sides.push(["zenoh's router", routed.length]);
  for (const [side, n] of sides)
    if (n < ROUNDS * PINGS * 0.9) notes.push(`only ${n} round trips through ${side} of ${ROUNDS * PINGS} asked`);
  const ratio = noRouter ? zestOverDirect : zestOverRouter;
  const directPass = zestOverDirect <= TARGET_DIRECT_RATIO;
  return {
    name: "zenoh-ping",
    figures: {
      zestP50Us: zestP50,
      routerP50Us: routerP50,
      directP50Us: directP50,
      relayP50Us: relayP50,
      zestP99Us: zestP99,
      routerP99Us: routerP99,
      directP99Us: directP99,
      relayP99Us: relayP99,
      zestOverRouter,
      zestOverDirect,
      relayOverDirect,
      zestOverRelay,
      zestPings: through.length,
      routerPings: routed.length,
      directPings: direct.length,
      relayPings: relayed.length,
      otherCpuPct: f.otherCpuPct,
    },
    ratio,
    target: noRouter
      ? `p50 <= ${TARGET_DIRECT_RATIO}x direct`
      : `p50 <= ${TARGET_ROUTER_RATIO}x zenoh's router, and <= ${TARGET_DIRECT_RATIO}x direct`,
    pass: directPass && (noRouter !== false || zestOverRouter <= TARGET_ROUTER_RATIO),
    summary: `round trip p50 zest ${zestP50} µs${noRouter ? "" : ` / zenoh's router ${routerP50} µs`} / direct ${directP50} µs (zest/direct ${zestOverDirect.toFixed(2)}x); the floor, a bare node:net relay: ${relayP50} µs = ${relayOverDirect.toFixed(2)}x direct, zest/relay ${zestOverRelay.toFixed(2)}x (p99 zest ${zestP99}${noRouter ? "" : ` / router ${routerP99}`} / direct ${directP99} / relay ${relayP99} µs; ${through.length}, ${routed.length}, ${direct.length} and ${relayed.length} pings of 8 bytes)`,
    notes,
    interferencePct: f.otherCpuPct,
  };
}

export function run(): Promise<BenchResult> {
  return inLoopbackNamespace("zenoh-ping", measure);
}
