/**
 * Shared parts of the zenoh benchmarks (bench/zenoh.md): the loopback-only network namespace
 * they run in, a zest child with the zenoh door, a bare TCP relay child (the floor of one
 * process hop), and the zenoh-pico programs as clients.
 *
 * The pico programs scout with UDP multicast when given no endpoint, and the rule for them is
 * the tests' rule: they run only inside a namespace holding nothing but loopback. A zenoh suite
 * run from `npm run bench` (outside one) runs itself again through `scripts/in-netns.sh`
 * (`bench/lib/netns-main.ts`), and returns what that run measured.
 */
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { freePorts } from "../../test/support/nats-cluster.js";
import { loopbackOnly } from "../../test/support/netns.js";
import { type PicoProgram, picoSkip, runPico } from "../../test/support/pico.js";
import { BENCH_DIR, ROOT, type ServerProcess, spawnBaseline, spawnZest, startInterference } from "./proc.js";
import type { BenchResult } from "./types.js";

/**
 * Runs benchmark `name` (a zenoh suite) inside a fresh loopback-only namespace and resolves
 * with its result, unless this process is in one already (then `measure` runs here).
 */
export async function inLoopbackNamespace(name: string, measure: () => Promise<BenchResult>): Promise<BenchResult> {
  const missing = picoSkip("z_pub_thr", "z_sub_thr", "z_ping", "z_pong", "z_put", "z_sub");
  if (loopbackOnly()) {
    if (missing) throw new Error(missing);
    return measure();
  }
  const child = spawn(
    "bash",
    [
      join(ROOT, "scripts", "in-netns.sh"),
      process.execPath,
      "--import",
      "tsx",
      join(BENCH_DIR, "lib", "netns-main.ts"),
      name,
    ],
    { cwd: ROOT, stdio: ["ignore", "pipe", "inherit"] },
  );
  let out = "";
  child.stdout!.setEncoding("utf8").on("data", (c: string) => (out += c));
  const code = await new Promise<number | null>((resolve) => child.once("exit", resolve));
  if (code === 77) throw new Error("the zenoh benchmarks need a network namespace (unshare -n): run as root");
  const last = out.trim().split("\n").pop() ?? "";
  if (code !== 0) throw new Error(`${name} in its namespace failed (code ${code}): ${last}`);
  return JSON.parse(last) as BenchResult;
}

/** A zest child process with the zenoh door on `locator`. */
export interface ZenohZest extends ServerProcess {
  /** `tcp/127.0.0.1:<port>` */
  readonly locator: string;
  /** The zenoh door's port (the locator's). */
  readonly port: number;
}

/**
 * Starts the built `zest` with REST on a free port and the zenoh door on another (`-l`), without
 * multicast scouting (every benchmark client is given the endpoint), and the plugin that settles
 * the heap on a put to `bench/zenoh/gc` (workers/gc-on-put.mjs).
 */
export async function spawnZenohZest(
  label = "zest",
  extraArgs: string[] = [],
  nodeArgs: string[] = [],
): Promise<ZenohZest> {
  const [port] = await freePorts(1);
  const locator = `tcp/127.0.0.1:${port}`;
  const args = ["-l", locator, "--no-multicast-scouting", "-P", join(BENCH_DIR, "workers", "gc-on-put.mjs")];
  const server = await spawnZest(label, [...args, ...extraArgs], nodeArgs);
  return { ...server, locator, port: port! };
}

/** A free loopback locator for a pico peer to listen on. */
export async function freeLocator(): Promise<string> {
  const [port] = await freePorts(1);
  return `tcp/127.0.0.1:${port}`;
}

/**
 * A relayed side: the pair peer to peer, the listener on `target`, the connector on `relay`, a
 * bare `node:net` relay child (`baselines/tcp-relay.mjs`) that joins each connection to `target`.
 */
export interface RelaySide {
  /** `tcp/127.0.0.1:<port>` of the relay. */
  readonly relay: string;
  /** `tcp/127.0.0.1:<port>` the listener listens on. */
  readonly target: string;
}

/** Which way a pico pair's traffic goes: directly peer to peer (undefined), through a zest child, or through a relay. */
export type PairSide = ZenohZest | RelaySide | undefined;

/**
 * The endpoint flags of a pico pair (a listener and a connector): both clients of a zest child,
 * peers joined through a relay, or, for no side, peers connected directly on a free locator.
 */
export async function picoPairArgs(side: PairSide): Promise<{ listener: string[]; connector: string[] }> {
  if (side !== undefined && "relay" in side)
    return { listener: ["-m", "peer", "-l", side.target], connector: ["-m", "peer", "-e", side.relay] };
  if (side) return { listener: ["-e", side.locator], connector: ["-e", side.locator] };
  const loc = await freeLocator();
  return { listener: ["-m", "peer", "-l", loc], connector: ["-m", "peer", "-e", loc] };
}

/** One round of a pico pair on one side: the numbers it printed, and the CPU seconds the pair used. */
export type PairRound = (side: PairSide) => Promise<{ values: number[]; picoCpu: number }>;

/** What `alternatePairRounds` measured. */
export interface PairRounds {
  /** Every number the direct rounds printed. */
  direct: number[];
  /** Every number the rounds through zest printed. */
  through: number[];
  /** Every number the relayed rounds printed (empty unless asked for). */
  relayed: number[];
  /** CPU seconds zest used over the rounds through it, and their wall time. */
  zestCpuSeconds: number;
  zestWallSeconds: number;
  /** CPU seconds the relay children used. */
  relayCpuSeconds: number;
  otherCpuPct: number;
  stealPct: number;
}

/**
 * Runs `rounds` rounds of the pair directly and through a zest child with the zenoh door (and,
 * with `relay`, through a bare TCP relay child as well), the order of the sides rotating from
 * round to round, so drift hits every side alike. The pair's, zest's and the relays' CPU is part
 * of the measurement; whatever else ran meanwhile is interference. A relayed round starts a
 * relay child of its own (its target, the listener's port, is new each round).
 */
export async function alternatePairRounds(
  rounds: number,
  round: PairRound,
  options: { relay?: boolean } = {},
): Promise<PairRounds> {
  const zest = await spawnZenohZest();
  const out: PairRounds = {
    direct: [],
    through: [],
    relayed: [],
    zestCpuSeconds: Number.NaN,
    zestWallSeconds: 0,
    relayCpuSeconds: 0,
    otherCpuPct: Number.NaN,
    stealPct: Number.NaN,
  };
  let picoCpu = 0;
  const sides: Array<"direct" | "zest" | "relay"> = options.relay ? ["direct", "relay", "zest"] : ["direct", "zest"];
  const interference = startInterference([zest.pid]);
  const cpu0 = zest.cpuSeconds();
  try {
    for (let i = 0; i < rounds; i++) {
      for (let s = 0; s < sides.length; s++) {
        const side = sides[(i + s) % sides.length];
        if (side === "direct") {
          const d = await round(undefined);
          out.direct.push(...d.values);
          picoCpu += d.picoCpu;
        } else if (side === "zest") {
          const t0 = performance.now();
          const z = await round(zest);
          out.zestWallSeconds += (performance.now() - t0) / 1000;
          out.through.push(...z.values);
          picoCpu += z.picoCpu;
        } else {
          const target = await freeLocator();
          const relay = await spawnTcpRelay(target);
          try {
            const r = await round({ relay: relay.locator, target });
            out.relayed.push(...r.values);
            picoCpu += r.picoCpu;
          } finally {
            out.relayCpuSeconds += relay.cpuSeconds();
            await relay.stop();
          }
        }
      }
    }
    out.zestCpuSeconds = zest.cpuSeconds() - cpu0;
    Object.assign(out, interference(picoCpu + out.relayCpuSeconds));
  } finally {
    await zest.stop();
  }
  return out;
}

/**
 * A bare `node:net` relay child (`baselines/tcp-relay.mjs`) on a free loopback port, joining each
 * connection to `target` (`tcp/<host>:<port>`).
 */
export async function spawnTcpRelay(target: string): Promise<ServerProcess & { locator: string }> {
  const m = /^tcp\/(.+):(\d+)$/.exec(target);
  if (m === null) throw new Error(`not a tcp locator: ${target}`);
  const server = await spawnBaseline("tcp-relay.mjs", [m[1]!, m[2]!], "tcp-relay");
  return { ...server, locator: `tcp/${new URL(server.url).host}` };
}

/** Starts pico program `name`; the benchmark counts its CPU as its own, not as interference. */
export function pico(name: string, args: readonly string[]): PicoProgram {
  return runPico(name, args);
}

/** The median of `xs` (sorted in place); NaN when empty. */
export function median(xs: number[]): number {
  return percentile(xs, 50);
}

/** The `p`th percentile of `xs` (sorted in place, nearest rank); NaN when empty. */
export function percentile(xs: number[], p: number): number {
  if (xs.length === 0) return Number.NaN;
  xs.sort((a, b) => a - b);
  return xs[Math.min(xs.length - 1, Math.max(0, Math.ceil((p / 100) * xs.length) - 1))]!;
}

/** The numbers a pico program printed one per line (z_sub_thr's msgs/s, z_ping's µs). */
export function numericLines(p: PicoProgram): number[] {
  const out: number[] = [];
  for (const l of p.lines()) {
    const n = Number(l.trim());
    if (l.trim() !== "" && Number.isFinite(n)) out.push(n);
  }
  return out;
}

/** The resident set of process `pid`, in bytes (VmRSS). */
export function rssBytes(pid: number): number {
  const m = /^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
  if (m === null) throw new Error(`no VmRSS for process ${pid}`);
  return Number(m[1]) * 1024;
}
