/**
 * The zenoh-pico example programs as test counterparts (and benchmark clients).
 *
 * The programs are found in `$ZENOH_PICO_BIN`, by default `../shared/tools/zenoh-pico/bin`
 * beside the repository (CI's clone has `shared/` there, read-only). On a machine without them a
 * test skips with one line (`picoSkip`); under CI (`CI=true`) a missing program fails the test.
 * They run only inside a loopback-only network namespace (see ./netns.ts): a pico client without
 * `-e` scouts with UDP multicast, which must never leave the machine.
 *
 * ```ts
 * test("z_info prints its zid", { skip: picoSkip("z_info") }, async () => {
 *   const info = runPico("z_info", ["-e", `tcp/127.0.0.1:${port}`]);
 *   try {
 *     await info.waitFor(/^own id: [0-9a-f]+$/);
 *   } finally {
 *     await info.stop();
 *   }
 * });
 * ```
 */
import assert from "node:assert/strict";
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { dirname, isAbsolute, join, resolve } from "node:path";
import { executable, killAtExit, waitForLine } from "./child-processes.js";
import { assertLoopbackOnly, loopbackOnly, UNDER_CI } from "./netns.js";
import { REPO_ROOT } from "./repo.js";

/**
 * Where the pico programs are: `$ZENOH_PICO_BIN` (relative to the repository root), else
 * `../shared/tools/zenoh-pico/bin`. Without the variable, the directories above that are tried
 * too (`../../shared/...`), so that a git worktree one level deeper finds the same programs.
 */
export const PICO_BIN = (() => {
  const dir = process.env.ZENOH_PICO_BIN;
  if (dir !== undefined && dir !== "") return isAbsolute(dir) ? dir : resolve(REPO_ROOT, dir);
  const suffix = join("shared", "tools", "zenoh-pico", "bin");
  for (let up = dirname(REPO_ROOT); ; up = dirname(up)) {
    if (existsSync(join(up, suffix))) return join(up, suffix);
    if (dirname(up) === up) return resolve(REPO_ROOT, "..", suffix);
  }
})();

/** The path of pico program `name` (e.g. `z_put`). */
export function picoPath(name: string): string {
  return join(PICO_BIN, name);
}

/**
 * The `skip` option for a test that runs the named pico programs: a one-line reason when one of
 * them is missing or the test is not inside a loopback-only namespace, else `false`. Under CI it
 * is always `false`: what is missing there fails the test (in `runPico`) instead of skipping it.
 */
export function picoSkip(...programs: string[]): string | false {
  if (UNDER_CI) return false;
  const missing = programs.filter((p) => !executable(picoPath(p)));
  if (missing.length > 0)
    return `zenoh-pico programs not found in ${PICO_BIN} (${missing.join(", ")}; set ZENOH_PICO_BIN)`;
  if (!loopbackOnly()) return "pico programs run only inside a loopback-only network namespace (*.netns.test.ts)";
  return false;
}

/** A running pico program. */
export interface PicoProgram {
  readonly name: string;
  readonly proc: ChildProcess;
  /** Every line it printed so far, stdout and stderr interleaved as they arrived. */
  lines(): readonly string[];
  /**
   * Resolves with the first line (printed so far, or later) that matches `pattern`. Rejects,
   * quoting the output, when `timeoutMs` passes or the program exits first.
   */
  waitFor(pattern: RegExp, timeoutMs?: number): Promise<string>;
  /** Resolves when the program exits, with its exit code (null when killed by a signal). */
  exited(): Promise<number | null>;
  /** SIGTERM, then SIGKILL after 2 s; resolves when the program is gone. Safe to call twice. */
  stop(): Promise<void>;
}

/** Options of `runPico`. */
export interface RunPicoOptions {
  /** Extra environment (e.g. `ZENOH_LOG`). */
  env?: NodeJS.ProcessEnv;
}

/**
 * Starts pico program `name` with `args`, under `stdbuf -oL` so that its output arrives line by
 * line. Throws when the program is missing or this process is not in a loopback-only namespace.
 * The program is killed when the test process exits, whatever happens to the test.
 */
export function runPico(name: string, args: readonly string[] = [], opts: RunPicoOptions = {}): PicoProgram {
  assertLoopbackOnly(`pico program ${name}`);
  const path = picoPath(name);
  if (!executable(path)) throw new Error(`zenoh-pico program ${name} not found in ${PICO_BIN} (set ZENOH_PICO_BIN)`);
  return runZenohProgram(name, ["stdbuf", "-oL", "-eL", path, ...args], opts);
}

/**
 * Starts any zenoh program (`command`: the executable and its arguments; zenoh-python's scripts,
 * say) the way `runPico` starts a pico one: its lines collected, killed when this process exits,
 * and only inside a loopback-only namespace. The program should print line by line itself.
 */
export function runZenohProgram(name: string, command: readonly string[], opts: RunPicoOptions = {}): PicoProgram {
  assertLoopbackOnly(`zenoh program ${name}`);
  const proc = spawn(command[0]!, command.slice(1), {
    stdio: ["ignore", "pipe", "pipe"],
    env: { ...process.env, ...opts.env },
  });
  killAtExit(proc);

  const lines: string[] = [];
  const waiters = new Set<() => void>();
  let exitCode: number | null | undefined;
  const gone = new Promise<number | null>((resolveExit) => {
    proc.once("close", (code) => {
      exitCode = code;
      resolveExit(code);
      for (const w of waiters) w();
    });
  });
  for (const stream of [proc.stdout!, proc.stderr!]) {
    let partial = "";
    stream.setEncoding("utf8");
    stream.on("data", (chunk: string) => {
      const parts = (partial + chunk).split("\n");
      partial = parts.pop()!;
      if (parts.length === 0) return;
      lines.push(...parts);
      for (const w of waiters) w();
    });
    stream.on("end", () => {
      if (partial !== "") lines.push(partial);
      partial = "";
    });
  }

  const tail = (): string => lines.slice(-30).join("\n");
  return {
    name,
    proc,
    lines: () => lines,
    waitFor(pattern, timeoutMs = 10_000) {
      return waitForLine(
        lines,
        waiters,
        (line) => pattern.test(line),
        timeoutMs,
        () => exitCode,
        {
          exited: (code) => `${name} exited (${code}) before printing ${pattern}; its output:\n${tail()}`,
          timedOut: () => `${name} printed no line matching ${pattern} within ${timeoutMs} ms; its output:\n${tail()}`,
        },
      );
    },
    exited: () => gone,
    async stop() {
      if (exitCode !== undefined) return;
      proc.kill("SIGTERM");
      const t = setTimeout(() => proc.kill("SIGKILL"), 2_000);
      await gone;
      clearTimeout(t);
    },
  };
}

/** What pico's z_put prints when its put was not sent. */
const PUT_FAILED = /Put has failed/;

/**
 * Runs pico's z_put with `args` until it has sent its put, at most `attempts` times, each run
 * expected to exit 0; returns what the last run printed. z_put puts with congestion control
 * DROP, and pico then only tries its transmit lock: when another of its tasks holds it at that
 * moment (its lease task writing a KEEP_ALIVE), pico drops the put, prints "Put has failed", and
 * still exits 0. That is pico being right, not zest losing a write, so the put is made again.
 */
export async function picoPut(args: readonly string[], attempts = 3): Promise<readonly string[]> {
  for (let attempt = 1; ; attempt++) {
    const put = runPico("z_put", args);
    try {
      assert.equal(await put.exited(), 0, put.lines().join("\n"));
    } finally {
      await put.stop();
    }
    const lines = put.lines();
    if (attempt >= attempts || !lines.some((l) => PUT_FAILED.test(l))) return lines;
  }
}
