/**
 * Shared parts of the zenoh benchmarks (bench/zenoh.md): the loopback-only network namespace
 * they run in, a zest child with the zenoh door, a bare TCP relay child (the floor of one
 * process hop), and the zenoh-pico programs as clients.
 *
 * zenoh's own router is the third side (issue 35): the Rust runtime of the eclipse-zenoh wheel
 * in router mode (test/zenoh-python/clients/router.py), wire-identical to zenohd without plugins.
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
import { executable } from "../../test/support/child-processes.js";
import { repoPath } from "../../test/support/repo.js";
import { ZENOH_PYTHON } from "../../test/support/zenoh-python.js";
import {
  BENCH_DIR,
  ROOT,
  type ServerProcess,
  spawnBaseline,
  spawnReady,
  spawnZest,
  startInterference,
} from "./proc.js";
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

/** The zenoh router script the benchmarks run (test/zenoh-python/clients/router.py). */
const ROUTER_SCRIPT = repoPath("test", "zenoh-python", "clients", "router.py");

/**
 * One line saying why zenoh's own router cannot run here (zenoh-python missing: `npm test`
 * installs it into .venv-zenoh/, or set ZENOH_PYTHON), else false.
 */
export function zenohRouterSkip(): string | false {
  if (executable(ZENOH_PYTHON)) return false;
  return `zenoh's router needs zenoh-python at ${ZENOH_PYTHON} (npm test installs it; or set ZENOH_PYTHON)`;
}

/**
 * Starts zenoh's own router (the wheel's Rust runtime in router mode, zenohd without plugins) on
 * a free loopback port, multicast scouting and gossip off; `cfg` are more config values
 * (`path=json5`). Only inside a loopback-only namespace, as every zenoh program here.
 */
export async function spawnZenohRouter(cfg: string[] = []): Promise<ZenohZest> {
  const skip = zenohRouterSkip();
  if (skip) throw new Error(skip);
  const [port] = await freePorts(1);
  const locator = `tcp/127.0.0.1:${port}`;
  const server = await spawnReady("zenoh router", [ZENOH_PYTHON, "-u", ROUTER_SCRIPT, locator, ...cfg], /^ready/, {
    stdin: "pipe",
    env: { RUST_LOG: "error" },
  });
  return { ...server, locator, port: port! };
}

/**
 * zest configured as zenohd runs with no configuration: no storage. zest's own default, a memory
 * storage on `**`, would also store every routed sample, which zenohd's router does not do.
 */
export const AS_ZENOHD = ["--cfg", "plugins/storage_manager/storages:{}"];

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
  /** Every number the rounds through zenoh's own router printed (empty unless asked for). */
  routed: number[];
  /** CPU seconds zest used over the rounds through it, and their wall time. */
  zestCpuSeconds: number;
  zestWallSeconds: number;
  /** The same for zenoh's router (NaN and 0 without it). */
  routerCpuSeconds: number;
  routerWallSeconds: number;
  /** CPU seconds the relay children used. */
  relayCpuSeconds: number;
  otherCpuPct: number;
  stealPct: number;
}

/** zest's and zenoh's router's CPU over the rounds through them, in percent of a core (NaN without the router). */
export function pairCpuPcts(r: PairRounds): { zestCpuPct: number; routerCpuPct: number } {
  return {
    zestCpuPct: (100 * r.zestCpuSeconds) / r.zestWallSeconds,
    routerCpuPct: (100 * r.routerCpuSeconds) / r.routerWallSeconds,
  };
}

type SideName = "direct" | "zest" | "relay" | "router";

/**
 * Runs `rounds` rounds of the pair directly and through a zest child with the zenoh door, set
 * up as zenohd (`AS_ZENOHD`), and, with `relay`, through a bare TCP relay child, with `router`,
 * through zenoh's own router; the order of the sides rotating from round to round, so drift
 * hits every side alike. The pair's, the routers' and the relays' CPU is part of the
 * measurement; whatever else ran meanwhile is interference. A relayed round starts a relay child of its own (its target, the listener's
 * port, is new each round); zest and the router live for the whole run.
 */
export async function alternatePairRounds(
  rounds: number,
  round: PairRound,
  options: { relay?: boolean; router?: boolean } = {},
): Promise<PairRounds> {
  const zest = await spawnZenohZest("zest", AS_ZENOHD);
  const router = options.router ? await spawnZenohRouter().catch(stopFirst(zest)) : undefined;
  const out: PairRounds = {
    direct: [],
    through: [],
    relayed: [],
    routed: [],
    zestCpuSeconds: Number.NaN,
    zestWallSeconds: 0,
    routerCpuSeconds: Number.NaN,
    routerWallSeconds: 0,
    relayCpuSeconds: 0,
    otherCpuPct: Number.NaN,
    stealPct: Number.NaN,
  };
  let picoCpu = 0;
  const sides: SideName[] = ["direct"];
  if (options.relay) sides.push("relay");
  if (router) sides.push("router");
  sides.push("zest");
  const interference = startInterference(router ? [zest.pid, router.pid] : [zest.pid]);
  const cpu0 = zest.cpuSeconds();
  const routerCpu0 = router?.cpuSeconds() ?? Number.NaN;
  try {
    for (let i = 0; i < rounds; i++) {
      for (let s = 0; s < sides.length; s++) {
        const side = sides[(i + s) % sides.length];
        if (side === "direct") {
          const d = await round(undefined);
          out.direct.push(...d.values);
          picoCpu += d.picoCpu;
        } else if (side === "zest" || side === "router") {
          const t0 = performance.now();
          const z = await round(side === "zest" ? zest : router);
          const wall = (performance.now() - t0) / 1000;
          if (side === "zest") {
            out.zestWallSeconds += wall;
            out.through.push(...z.values);
          } else {
            out.routerWallSeconds += wall;
            out.routed.push(...z.values);
          }
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
    if (router) out.routerCpuSeconds = router.cpuSeconds() - routerCpu0;
    Object.assign(out, interference(picoCpu + out.relayCpuSeconds));
  } finally {
    await zest.stop();
    await router?.stop();
  }
  return out;
}

/** A `catch` handler that stops `first` (already started), then rethrows. */
function stopFirst(first: ServerProcess): (err: unknown) => Promise<never> {
  return async (err) => {
    await first.stop();
    throw err;
  };
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
/** The mean of `xs`; NaN when empty. */
export function mean(xs: number[]): number {
  if (xs.length === 0) return Number.NaN;
  let sum = 0;
  for (const x of xs) sum += x;
  return sum / xs.length;
}

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
