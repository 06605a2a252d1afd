import { spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { killAtExit } from "./child-processes.js";
import { repoPath } from "./repo.js";
import { suiteResource } from "./suite.js";

/** Path of the built CLI the end-to-end tests run (npm test builds it first). */
export const CLI = repoPath("dist", "cli.js");

/**
 * How long a router may take to start (ms): 15 s, or `ZEST_START_TIMEOUT_MS` for long runs on a
 * host so busy that a cold start takes longer (bench/jepsen.ts).
 */
const START_TIMEOUT_MS = Number(process.env.ZEST_START_TIMEOUT_MS ?? 15_000);

/** A `zest` process started for a test. */
export interface ZestProcess {
  readonly url: string;
  readonly proc: ChildProcess;
  /** Everything the process wrote on stderr so far. */
  stderr(): string;
  /** SIGTERM, then SIGKILL after 5 s; resolves when the process is gone. */
  stop(): Promise<void>;
  /** SIGKILL at once. */
  kill9(): Promise<void>;
}

/**
 * Starts the real `zest` command on a free loopback port (unless the args choose one) and waits
 * for the line announcing its URL.
 */
export async function startZest(
  args: string[] = [],
  opts: { env?: NodeJS.ProcessEnv; cwd?: string } = {},
): Promise<ZestProcess> {
  const hasPort = args.some((a) => a.startsWith("--rest-http-port"));
  const proc = spawn(process.execPath, [CLI, ...(hasPort ? [] : ["--rest-http-port", "127.0.0.1:0"]), ...args], {
    stdio: ["ignore", "ignore", "pipe"],
    env: { ...process.env, ...opts.env },
    cwd: opts.cwd,
  });
  killAtExit(proc);
  let err = "";
  proc.stderr!.setEncoding("utf8");
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => {
      // Never leave a half-started router behind a failed test.
      proc.kill("SIGKILL");
      reject(new Error(`zest did not start within ${START_TIMEOUT_MS / 1000} s; stderr:\n${err}`));
    }, START_TIMEOUT_MS);
    proc.stderr!.on("data", (d: string) => {
      err += d;
      const m = /serving (https?:\/\/\S+)/.exec(err);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]!.replace("localhost", "127.0.0.1"));
      }
    });
    proc.once("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`zest exited with ${code} before serving; stderr:\n${err}`));
    });
  });
  const gone = once(proc, "exit");
  return {
    url,
    proc,
    stderr: () => err,
    async stop() {
      if (proc.exitCode !== null || proc.signalCode !== null) return;
      proc.kill("SIGTERM");
      const t = setTimeout(() => proc.kill("SIGKILL"), 5_000);
      await gone;
      clearTimeout(t);
    },
    async kill9() {
      if (proc.exitCode !== null || proc.signalCode !== null) return;
      proc.kill("SIGKILL");
      await gone;
    },
  };
}

/** Starts several routers at once; if one fails, stops the others before throwing. */
export async function startRouters(argsList: string[][]): Promise<ZestProcess[]> {
  const results = await Promise.allSettled(argsList.map((args) => startZest(args)));
  const started = results.flatMap((r) => (r.status === "fulfilled" ? [r.value] : []));
  const failed = results.find((r): r is PromiseRejectedResult => r.status === "rejected");
  if (failed) {
    await Promise.all(started.map((z) => z.stop()));
    throw failed.reason;
  }
  return started;
}

/** Runs `zest` with args expected to fail, returning its exit code and stderr. */
export async function runZestExpectingExit(
  args: string[],
  timeoutMs = 15_000,
): Promise<{ code: number | null; stderr: string }> {
  const proc = spawn(process.execPath, [CLI, ...args], { stdio: ["ignore", "ignore", "pipe"] });
  killAtExit(proc);
  let stderr = "";
  proc.stderr!.setEncoding("utf8").on("data", (d: string) => (stderr += d));
  const timer = setTimeout(() => proc.kill("SIGKILL"), timeoutMs);
  const [code] = (await once(proc, "exit")) as [number | null];
  clearTimeout(timer);
  return { code, stderr };
}

/** The zenoh locator of `protocol` a zest process printed in its serving line. */
export function zenohLocatorOf(z: ZestProcess, protocol: "tcp" | "udp" | "tls" = "tcp"): string {
  const m = new RegExp(`zenoh (${protocol}/\\S+)`).exec(z.stderr());
  if (!m) throw new Error(`no zenoh ${protocol} locator in:\n${z.stderr()}`);
  return m[1]!;
}

/**
 * A `zest` process for the tests of the enclosing `describe`, started (`startZest(args)`) before
 * them and stopped after them: read it inside the tests.
 */
export function zestForSuite(args: string[] = []): ZestProcess {
  return suiteResource(
    "the suite's zest",
    () => startZest(args),
    (z) => z.stop(),
  );
}
