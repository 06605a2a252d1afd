/**
 * Child processes for the benchmarks: servers under test (zest from the built CLI, and the bare
 * `node:http` baselines), and in-process workers. Every child is tracked and stopped by its pid
 * when the run ends, however it ends.
 */
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { appendFileSync, existsSync, readFileSync, statSync, readdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { findUp } from "../../src/find-up.js";

/**
 * Repository root: where the nearest package.json is (bench/lib/ two levels below it, or a
 * compiled copy of it, as the tests run, in a build directory inside the repository).
 */
export const ROOT = dirname(findUp(dirname(fileURLToPath(import.meta.url)), "package.json"));
export const BENCH_DIR = join(ROOT, "bench");
/** The zest CLI the benchmarks run: this checkout's build, or `ZEST_CLI` (another build, for a before/after pair). */
export const CLI = process.env.ZEST_CLI || join(ROOT, "dist", "cli.js");

const live = new Set<ChildProcess>();

/** Kills every child still running (by pid); called on exit and on signals. */
export function killAllChildren(): void {
  for (const child of live) {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  }
  live.clear();
}
process.once("exit", killAllChildren);

/** Tracks a child started elsewhere, so it is killed with the others however the run ends. */
export function trackChild(child: ChildProcess): void {
  live.add(child);
  child.once("exit", () => live.delete(child));
}

/** A server child that printed `serving http://host:port`. */
export interface ServerProcess {
  readonly label: string;
  readonly url: string;
  readonly pid: number;
  /** CPU seconds (user + system) the process has used so far. */
  cpuSeconds(): number;
  /** The same, split into user and system (kernel) time. */
  cpuSplit(): { user: number; sys: number };
  /** SIGTERM, then SIGKILL after `graceMs`; resolves when the process is gone. */
  stop(graceMs?: number): Promise<void>;
}

export interface SpawnServerOptions {
  /** Extra node flags (`--cpu-prof`...). */
  nodeArgs?: string[];
  /** A command that runs node in its own process, node's path and arguments appended (`valgrind ...`). */
  wrapper?: readonly string[];
  env?: NodeJS.ProcessEnv;
  timeoutMs?: number;
}

/**
 * Starts `node <nodeArgs> <script> <args>` (under `wrapper`, if given) and waits for its
 * `serving http://...` line (stdout or stderr).
 */
export function spawnServer(
  label: string,
  script: string,
  args: string[],
  options: SpawnServerOptions = {},
): Promise<ServerProcess> {
  const command = [...(options.wrapper ?? []), process.execPath, ...(options.nodeArgs ?? []), script, ...args];
  return spawnReady(label, command, /serving (https?:\/\/\S+)/, options);
}

/**
 * Starts any `command` (a program and its arguments) and waits for a line it prints (stdout or
 * stderr) that matches `ready`; the server's `url` is the pattern's first group, when it has one.
 * `stdin: "pipe"` keeps its stdin open for its life (a program that exits when stdin closes).
 */
export function spawnReady(
  label: string,
  command: readonly string[],
  ready: RegExp,
  options: SpawnServerOptions & { stdin?: "ignore" | "pipe" } = {},
): Promise<ServerProcess> {
  const child = spawn(command[0]!, command.slice(1), {
    cwd: ROOT,
    env: { ...process.env, ...options.env },
    stdio: [options.stdin ?? "ignore", "pipe", "pipe"],
  });
  live.add(child);
  const tail: string[] = [];
  const timeoutMs = options.timeoutMs ?? 15_000;
  return new Promise<ServerProcess>((resolvePromise, reject) => {
    let settled = false;
    let pending = "";
    const timer = setTimeout(() => fail(new Error(`${label} was not ready within ${timeoutMs} ms`)), timeoutMs);
    const fail = (err: Error): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      child.kill("SIGKILL");
      reject(new Error(`${err.message}${tail.length ? `\n  ${label} output:\n  ${tail.join("\n  ")}` : ""}`));
    };
    const onData = (chunk: Buffer): void => {
      if (CHILD_LOG) appendFileSync(CHILD_LOG, chunk);
      pending += chunk.toString("utf8");
      for (let nl = pending.indexOf("\n"); nl !== -1; nl = pending.indexOf("\n")) {
        const line = pending.slice(0, nl);
        pending = pending.slice(nl + 1);
        tail.push(line);
        if (tail.length > 20) tail.shift();
        const m = ready.exec(line);
        if (m && !settled) {
          settled = true;
          clearTimeout(timer);
          resolvePromise(makeServer(label, m[1] ?? "", child));
        }
      }
    };
    // Keep draining both pipes for the whole life of the child, so it never blocks on a full pipe.
    child.stdout!.on("data", onData);
    child.stderr!.on("data", onData);
    child.once("error", (err) => fail(err));
    child.once("exit", (code, signal) => {
      live.delete(child);
      fail(new Error(`${label} exited early (${signal ?? `code ${code}`})`));
    });
  });
}

function makeServer(label: string, url: string, child: ChildProcess): ServerProcess {
  const pid = child.pid!;
  return {
    label,
    url,
    pid,
    cpuSeconds: () => processCpuSeconds(pid),
    cpuSplit: () => processCpuSplit(pid),
    stop: (graceMs = 5_000) => stopChild(child, graceMs),
  };
}

/** SIGTERM, then SIGKILL after `graceMs`. */
export function stopChild(child: ChildProcess, graceMs = 5_000): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) {
    live.delete(child);
    return Promise.resolve();
  }
  return new Promise((resolvePromise) => {
    const timer = setTimeout(() => child.kill("SIGKILL"), graceMs);
    child.once("exit", () => {
      clearTimeout(timer);
      live.delete(child);
      resolvePromise();
    });
    child.kill("SIGTERM");
  });
}

/** Clock ticks per second of /proc/<pid>/stat (`getconf CLK_TCK`, 100 on Linux in practice). */
const clockTicks = ((): number => {
  try {
    const n = Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).trim());
    return n > 0 ? n : 100;
  } catch {
    return 100;
  }
})();

/** User and system CPU seconds of `pid` from /proc (Linux); NaN elsewhere. */
export function processCpuSplit(pid: number): { user: number; sys: number } {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    // fields[0] is field 3 (state): utime is field 14, stime field 15.
    return { user: Number(fields[11]) / clockTicks, sys: Number(fields[12]) / clockTicks };
  } catch {
    return { user: Number.NaN, sys: Number.NaN };
  }
}

/** User + system CPU seconds of `pid`. */
export function processCpuSeconds(pid: number): number {
  const { user, sys } = processCpuSplit(pid);
  return user + sys;
}

/** Busy and steal CPU seconds of the whole machine, from /proc/stat (Linux); NaN elsewhere. */
export function machineCpuSeconds(): { busy: number; steal: number } {
  try {
    const line = readFileSync("/proc/stat", "utf8").split("\n", 1)[0]!;
    // cpu  user nice system idle iowait irq softirq steal guest guest_nice
    const v = line.trim().split(/\s+/).slice(1).map(Number);
    const busy = v[0]! + v[1]! + v[2]! + v[5]! + v[6]!;
    return { busy: busy / clockTicks, steal: (v[7] ?? 0) / clockTicks };
  } catch {
    return { busy: Number.NaN, steal: Number.NaN };
  }
}

/**
 * Measures, over a stretch of time, the CPU used by processes other than the bench and the given
 * server pids (colleagues' test runs, builds...), and the CPU stolen by the hypervisor, both in %
 * of one core. Either above ~15% makes the figures of that stretch unreliable. The function it
 * returns takes the CPU seconds of any other process that is part of the measurement and was
 * counted apart (a worker that reports its own).
 */
export function startInterference(
  pids: readonly number[],
): (alsoOwnSeconds?: number) => { otherCpuPct: number; stealPct: number } {
  const t0 = performance.now();
  const m0 = machineCpuSeconds();
  const own0 = selfCpuSeconds() + pids.reduce((s, p) => s + processCpuSeconds(p), 0);
  return (alsoOwnSeconds = 0) => {
    const wall = (performance.now() - t0) / 1000;
    const m1 = machineCpuSeconds();
    const own1 = selfCpuSeconds() + pids.reduce((s, p) => s + processCpuSeconds(p), 0);
    const other = m1.busy - m0.busy - (own1 - own0) - alsoOwnSeconds;
    return { otherCpuPct: Math.max(0, (100 * other) / wall), stealPct: (100 * (m1.steal - m0.steal)) / wall };
  };
}

/** Above this (in % of one core), other processes or the hypervisor make figures unreliable. */
export const INTERFERENCE_LIMIT_PCT = 15;

/** A note when other processes or the hypervisor took CPU during a measurement. */
export function interferenceNotes(label: string, f: { otherCpuPct: number; stealPct: number }): string[] {
  const notes: string[] = [];
  if (f.otherCpuPct > INTERFERENCE_LIMIT_PCT)
    notes.push(
      `${label}: other processes used ${Math.round(f.otherCpuPct)}% of a core meanwhile: rerun on a quiet machine`,
    );
  if (f.stealPct > INTERFERENCE_LIMIT_PCT)
    notes.push(`${label}: the hypervisor stole ${Math.round(f.stealPct)}% of a core meanwhile`);
  return notes;
}

/** CPU seconds the bench process itself has used (all threads). */
export function selfCpuSeconds(): number {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1e6;
}

/**
 * Starts the built zest CLI on a free loopback port (`BENCH_CPU_PROF=1` profiles it into
 * bench/results/prof). `nodeArgs`: extra node flags, e.g. `--expose-gc` for a plugin that settles
 * the heap before the RSS is read.
 */
export function spawnZest(label = "zest", extraArgs: string[] = [], nodeArgs: string[] = []): Promise<ServerProcess> {
  if (!existsSync(CLI)) throw new Error(`${CLI} is missing: run \`npm run build\` first`);
  return spawnServer(label, CLI, ["--rest-http-port", "127.0.0.1:0", ...extraArgs, ...envWords("BENCH_ZEST_ARGS")], {
    nodeArgs: [...nodeArgs, ...envWords("BENCH_ZEST_NODE_ARGS"), ...profileArgs(label)],
    // A router on a loaded 2-core host can take more than the default 15 s to start.
    timeoutMs: 60_000,
  });
}

/**
 * Diagnostics, read from the environment (bench/README.md, "Looking inside a run"): extra zest
 * flags (`BENCH_ZEST_ARGS`), extra node flags for zest (`BENCH_ZEST_NODE_ARGS`, e.g.
 * `--trace-gc-nvp`), space-separated.
 */
function envWords(name: string): string[] {
  return (process.env[name] ?? "").split(" ").filter((a) => a !== "");
}

/** `BENCH_CHILD_LOG`: a file that gets everything the server children print. */
const CHILD_LOG = process.env.BENCH_CHILD_LOG;

/** Starts a baseline server script from bench/baselines/ (profiled too under BENCH_CPU_PROF). */
export function spawnBaseline(script: string, args: string[] = [], label = "node:http"): Promise<ServerProcess> {
  return spawnServer(label, join(BENCH_DIR, "baselines", script), args, {
    nodeArgs: profileArgs(script.replace(/\.m?js$/, "")),
  });
}

/** `--cpu-prof` flags when BENCH_CPU_PROF is set: one .cpuprofile per server, in bench/results/prof/. */
function profileArgs(label: string): string[] {
  if (!process.env.BENCH_CPU_PROF) return [];
  return [
    "--cpu-prof",
    "--cpu-prof-dir",
    join(BENCH_DIR, "results", "prof"),
    `--cpu-prof-name=${label.replace(/\W+/g, "-")}-${Date.now()}.cpuprofile`,
  ];
}

/**
 * Runs a worker script from bench/workers/ in a child process and resolves with the JSON line it
 * prints last on stdout. `.mjs` workers run on plain node against dist/ (like the `zest`
 * command); `.ts` ones under tsx. `measuredPids`: the servers the worker drives (a zest child,
 * say), whose CPU is part of the measurement, not interference; the worker reports its own
 * (`cpuSeconds`).
 */
export function runWorker<T extends { cpuSeconds: number }>(
  file: string,
  nodeArgs: string[] = [],
  args: string[] = [],
  options: { timeoutMs?: number; measuredPids?: readonly number[] } = {},
): Promise<{ out: T; otherCpuPct: number; stealPct: number }> {
  const timeoutMs = options.timeoutMs ?? 180_000;
  const name = file;
  const loader = file.endsWith(".ts") ? ["--import", "tsx"] : [];
  const child = spawn(process.execPath, [...nodeArgs, ...loader, join(BENCH_DIR, "workers", file), ...args], {
    cwd: ROOT,
    env: process.env,
    stdio: ["ignore", "pipe", "pipe"],
  });
  live.add(child);
  const interference = startInterference(options.measuredPids ?? []);
  let out = "";
  let err = "";
  child.stdout!.on("data", (c: Buffer) => (out += c.toString("utf8")));
  child.stderr!.on("data", (c: Buffer) => (err += c.toString("utf8")));
  return new Promise((resolvePromise, reject) => {
    const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
    child.once("exit", (code, signal) => {
      clearTimeout(timer);
      live.delete(child);
      const last = out.trim().split("\n").pop() ?? "";
      if (code === 0) {
        try {
          const parsed = JSON.parse(last) as T;
          // The worker reports its own CPU time: whatever else the machine did is interference.
          resolvePromise({ out: parsed, ...interference(parsed.cpuSeconds) });
          return;
        } catch {
          /* fall through */
        }
      }
      reject(
        new Error(
          `worker ${name} failed (${signal ?? `code ${code}`}):\n${(err || out).trim().split("\n").slice(-15).join("\n")}`,
        ),
      );
    });
  });
}

/** Newest modification time (ms) of any file under `dir` with one of `exts`. */
function newestMtime(dir: string, exts: string[]): number {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, entry.name);
    if (entry.isDirectory()) newest = Math.max(newest, newestMtime(p, exts));
    else if (exts.some((e) => entry.name.endsWith(e))) newest = Math.max(newest, statSync(p).mtimeMs);
  }
  return newest;
}

/** A warning when dist/ is missing or older than src/ (the HTTP benchmarks run the built CLI). */
export function distStaleness(): string | undefined {
  if (!existsSync(CLI)) return "dist/cli.js is missing: run `npm run build` first";
  const src = newestMtime(join(ROOT, "src"), [".ts"]);
  const dist = newestMtime(join(ROOT, "dist"), [".js"]);
  return src > dist
    ? "dist/ is older than src/: the HTTP benchmarks run the built CLI, so run `npm run build` to measure the current code"
    : undefined;
}
