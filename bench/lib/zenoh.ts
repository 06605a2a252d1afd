/**
 * Shared parts of the zenoh benchmarks (bench/zenoh.md): the loopback-only network namespace
 * they run in, a zest child with the zenoh door, and the zenoh-pico programs as clients.
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
import { BENCH_DIR, ROOT, type ServerProcess, spawnZest, startInterference } from "./proc.js";
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
 * The endpoint flags of a pico pair (a listener and a connector): both clients of `zest`, or,
 * without it, peers connected directly on a free locator.
 */
export async function picoPairArgs(zest: ZenohZest | undefined): Promise<{ listener: string[]; connector: string[] }> {
  if (zest) return { listener: ["-e", zest.locator], connector: ["-e", zest.locator] };
  const loc = await freeLocator();
  return { listener: ["-m", "peer", "-l", loc], connector: ["-m", "peer", "-e", loc] };
}

/** One round of a pico pair, direct (`zest` undefined) or through zest: the numbers it printed, and the CPU seconds the pair used. */
export type PairRound = (zest: ZenohZest | undefined) => Promise<{ values: number[]; picoCpu: number }>;

/** What `alternatePairRounds` measured. */
export interface PairRounds {
  /** Every number the direct rounds printed. */
  direct: number[];
  /** Every number the rounds through zest printed. */
  through: number[];
  /** CPU seconds zest used over the rounds through it, and their wall time. */
  zestCpuSeconds: number;
  zestWallSeconds: number;
  otherCpuPct: number;
  stealPct: number;
}

/**
 * Runs `rounds` alternating pairs of rounds, direct then through a zest child with the zenoh
 * door, so drift hits both sides alike. The pair's CPU is part of the measurement; whatever
 * else ran meanwhile is interference.
 */
export async function alternatePairRounds(rounds: number, round: PairRound): Promise<PairRounds> {
  const zest = await spawnZenohZest();
  const out: PairRounds = {
    direct: [],
    through: [],
    zestCpuSeconds: Number.NaN,
    zestWallSeconds: 0,
    otherCpuPct: Number.NaN,
    stealPct: Number.NaN,
  };
  let picoCpu = 0;
  const interference = startInterference([zest.pid]);
  const cpu0 = zest.cpuSeconds();
  try {
    for (let i = 0; i < rounds; i++) {
      const d = await round(undefined);
      out.direct.push(...d.values);
      const t0 = performance.now();
      const z = await round(zest);
      out.zestWallSeconds += (performance.now() - t0) / 1000;
      out.through.push(...z.values);
      picoCpu += d.picoCpu + z.picoCpu;
    }
    out.zestCpuSeconds = zest.cpuSeconds() - cpu0;
    Object.assign(out, interference(picoCpu));
  } finally {
    await zest.stop();
  }
  return out;
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
