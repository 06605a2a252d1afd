/**
 * zenoh-python for the tests of zest joining a zenoh network: zenoh's own router (router.py, the
 * zenoh-rust runtime of the `eclipse-zenoh` wheel) and clients attached to it (client.py), each
 * driven over stdio. They run only inside a loopback-only network namespace (*.netns.test.ts).
 *
 * The interpreter is the one test/support/zenoh-python.ts names (`$ZENOH_PYTHON`, else
 * `<repo>/.venv-zenoh/bin/python`, which the test command creates). Missing, a test skips with
 * one line; under CI it fails.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { executable } from "../../support/child-processes.js";
import { resolve } from "node:path";
import { jsonLinesChild } from "../../support/json-lines.js";
import { assertLoopbackOnly } from "../../support/netns.js";
import { repoPath } from "../../support/repo.js";
import { ZENOH_PYTHON } from "../../support/zenoh-python.js";

/** A JSON line a client printed. */
export type Line = Record<string, unknown>;

/** A running python script. */
export interface PyProcess {
  /** Lines printed so far (JSON objects for client.py; `{ text }` for others). */
  readonly lines: Line[];
  send(cmd: Record<string, unknown>): void;
  /** The first line (seen or to come) that satisfies `match`; rejects after `timeoutMs` or when it exits. */
  waitLine(match: (l: Line) => boolean, timeoutMs?: number): Promise<Line>;
  stderr(): string;
  stop(): Promise<void>;
}

const HERE = repoPath("test", "zenoh", "join");

function run(script: string, args: string[], env: Record<string, string> = {}): PyProcess {
  assertLoopbackOnly("zenoh-python");
  const python = ZENOH_PYTHON;
  if (!executable(python)) throw new Error(`zenoh-python not installed at ${python}`);
  const proc: ChildProcess = spawn(python, ["-u", resolve(HERE, script), ...args], {
    stdio: ["pipe", "pipe", "pipe"],
    env: { ...process.env, RUST_LOG: process.env.RUST_LOG ?? "error", ...env },
  });
  const child = jsonLinesChild(proc, script);
  return {
    lines: child.lines,
    send: child.send,
    waitLine: (match, timeoutMs = 10_000) => child.waitLine(match, timeoutMs, "matching line"),
    stderr: child.stderr,
    stop: child.stop,
  };
}

/**
 * zenoh's router on `tcp/127.0.0.1:<port>` (and on `udp/127.0.0.1:<udpPort>`, when given),
 * started and listening (and connecting to `connect`, when given).
 */
export async function startZenohRouter(
  port: number,
  connect?: string,
  udpPort?: number,
): Promise<PyProcess & { zid: string }> {
  const listen = [`tcp/127.0.0.1:${port}`, ...(udpPort === undefined ? [] : [`udp/127.0.0.1:${udpPort}`])];
  const p = run("router.py", [listen.join(","), ...(connect === undefined ? [] : [connect])]);
  const ready = await p.waitLine((l) => typeof l.text === "string" && l.text.startsWith("ready"), 15_000);
  return Object.assign(p, { zid: String(ready.text).split(" ")[1] ?? "" });
}

/** A zenoh-python client of the router at `endpoint`, its session open (`env`: more environment). */
export async function startZenohClient(endpoint: string, env: Record<string, string> = {}): Promise<PyProcess> {
  const p = run("client.py", [endpoint], env);
  await p.waitLine((l) => "ready" in l, 15_000);
  return p;
}

/** Sends `cmd` and waits for its `done` line. */
export async function call(p: PyProcess, cmd: Record<string, unknown>, timeoutMs = 10_000): Promise<Line> {
  const from = p.lines.length;
  p.send(cmd);
  return p.waitLine((l) => l.done === cmd.op && p.lines.indexOf(l) >= from, timeoutMs);
}

/** The samples subscriber lines of `p` carry, in order. */
export function samplesOf(p: PyProcess): Array<{ key: string; kind: string; value: string }> {
  return p.lines.filter((l) => "sample" in l).map((l) => l.sample as { key: string; kind: string; value: string });
}
