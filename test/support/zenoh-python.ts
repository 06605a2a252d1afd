/**
 * zenoh-python (the `eclipse-zenoh` wheel, pinned in test/zenoh-python/requirements.txt) as a
 * test counterpart. `npm test` installs it into `.venv-zenoh/` at the repository root
 * (scripts/zenoh-python-venv.sh); `$ZENOH_PYTHON` names another interpreter that has it.
 *
 * Each `startAgent` runs test/zenoh-python/clients/agent.py: one zenoh session, in client or peer
 * mode, connected to zest only, driven over stdio with one JSON object per line. `call` sends a
 * command and resolves with its answer; `waitEvent` resolves with the first event (a sample, a
 * query, a matching status, a liveliness change) that satisfies a predicate. Every wait is
 * bounded. Like the pico programs, agents run only inside a loopback-only network namespace
 * (./netns.ts); a test skips with one line where the interpreter is missing (`pythonSkip`),
 * and fails instead under CI.
 *
 * ```ts
 * const sub = await startAgent("client", ep);
 * await sub.call("sub", { name: "s", key: "demo/**" });
 * const ev = await sub.waitEvent((e) => e.ev === "sample");
 * await sub.stop();
 * ```
 */
import { type ChildProcess, spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { isAbsolute, resolve } from "node:path";
import { after, before, describe } from "node:test";
import { forwarder, suiteResource } from "./suite.js";
import { executable } from "./child-processes.js";
import { type JsonLine, jsonLinesChild } from "./json-lines.js";
import { assertLoopbackOnly, loopbackOnly, UNDER_CI } from "./netns.js";
import { REPO_ROOT, repoPath } from "./repo.js";
import { startZest, type ZestProcess, zenohLocatorOf } from "./zest-process.js";

/** The interpreter with zenoh-python: `$ZENOH_PYTHON`, else the project's `.venv-zenoh`. */
export const ZENOH_PYTHON = (() => {
  const p = process.env.ZENOH_PYTHON;
  if (p !== undefined && p !== "") return isAbsolute(p) ? p : resolve(REPO_ROOT, p);
  return repoPath(".venv-zenoh", "bin", "python");
})();

/**
 * `$ZENOH_PYTHON_ROUTER`: the endpoint of zenoh's own router (test/zenoh-python/clients/router.py),
 * to run the agents of a test file against it instead of zest, by hand, to check that what a
 * test expects is what zenoh does. Unset in `npm test`.
 */
export const REFERENCE_ROUTER = process.env.ZENOH_PYTHON_ROUTER || undefined;

/** The agent script the tests drive. */
export const AGENT = repoPath("test", "zenoh-python", "clients", "agent.py");

/** The two modes a zenoh-python session connects to zest in. */
export type Mode = "client" | "peer";
export const MODES: readonly Mode[] = ["client", "peer"];

/**
 * The `skip` option for a zenoh-python test: a one-line reason when the interpreter is missing
 * or the test is not in a loopback-only namespace, else `false`. Always `false` under CI, where
 * what is missing fails the test (in `startAgent`).
 */
export function pythonSkip(): string | false {
  if (UNDER_CI) return false;
  if (!executable(ZENOH_PYTHON))
    return `zenoh-python not installed at ${ZENOH_PYTHON} (npm test installs it; or set ZENOH_PYTHON)`;
  if (!loopbackOnly()) return "zenoh-python runs only inside a loopback-only network namespace (*.netns.test.ts)";
  return false;
}

/** A line the agent printed: an answer (`id`) or an event (`ev`). */
export type AgentLine = Record<string, unknown> & { ev?: string; id?: number; name?: string };

/** A payload as the agent reports it: length and digest always, bytes when small. */
export interface PayloadJson {
  len: number;
  sha256: string;
  b64?: string;
  text?: string;
}

/** A sample as the agent reports it (agent.py `sample_json`). */
export interface SampleJson {
  key: string;
  kind: "PUT" | "DELETE";
  payload: PayloadJson;
  encoding: string;
  priority: string;
  congestion: string;
  express: boolean;
  timestamp: { str: string; id: string; ntp64: number } | null;
  attachment: PayloadJson | null;
  source_info: { zid: string; eid: number; sn: number } | null;
  timestamp_stack: TimestampStackJson | null;
}

/** A timestamp stack (network extension 0x7) as the agent reports it. */
export interface TimestampStackJson {
  records: Array<{ point: string; custom: boolean; timestamp: string }>;
}

/** The records of a timestamp stack as `[point, zid of the node that wrote it]`. */
export function stackRecords(stack: TimestampStackJson | null): Array<[string, string]> {
  return (stack?.records ?? []).map((r) => [r.point, r.timestamp.split("/")[1] ?? ""]);
}

/** A reply to a get, as the agent reports it. */
export interface ReplyJson {
  ok?: SampleJson;
  err?: { payload: PayloadJson; encoding: string };
}

/** A sample event of subscriber `name`. */
export type SampleEvent = SampleJson & { ev: "sample"; name: string };

/** A running agent. */
export interface Agent {
  readonly mode: Mode;
  /** The zid of its session. */
  readonly zid: string;
  /** Sends command `op` and resolves with its answer; rejects on an error answer or after `timeoutMs`. */
  call<T = Record<string, unknown>>(op: string, args?: Record<string, unknown>, timeoutMs?: number): Promise<T>;
  /** The first event (already seen or to come) that satisfies `match`; rejects after `timeoutMs`. */
  waitEvent<T = AgentLine>(match: (e: AgentLine) => boolean, timeoutMs?: number): Promise<T>;
  /** The first sample event of subscriber `name` (and on `key`, when given). */
  waitSample(name: string, key?: string, timeoutMs?: number): Promise<SampleEvent>;
  /** Every event so far that satisfies `match`. */
  events<T = AgentLine>(match: (e: AgentLine) => boolean): T[];
  /** Everything it printed on stderr. */
  stderr(): string;
  /** Asks it to exit, then SIGKILL after 3 s. Safe to call twice. */
  stop(): Promise<void>;
}

/** The bytes of a large test value, as agent.py `pattern` builds them. */
export function pattern(size: number, seed = 0): Buffer {
  const b = Buffer.alloc(size);
  for (let i = 0; i < size; i++) b[i] = (i + seed) % 251;
  return b;
}

/** The hex SHA-256 of `data`. */
export function sha256(data: Buffer | string): string {
  return createHash("sha256").update(data).digest("hex");
}

/**
 * Starts agent.py in `mode`, connected to zest's `endpoint`, and waits for its session to open.
 * The agent is killed when the test process exits, and exits by itself after `lifetimeS`.
 * `config`: zenoh settings for its session, by path (`transport/link/...`), as JSON5 values.
 */
export async function startAgent(
  mode: Mode,
  endpoint: string,
  lifetimeS = 90,
  config: Readonly<Record<string, string>> = {},
): Promise<Agent> {
  assertLoopbackOnly("zenoh-python");
  if (!executable(ZENOH_PYTHON)) throw new Error(`zenoh-python not installed at ${ZENOH_PYTHON} (run npm test)`);
  const proc: ChildProcess = spawn(
    ZENOH_PYTHON,
    [
      "-u",
      AGENT,
      "--mode",
      mode,
      "--connect",
      endpoint,
      "--lifetime",
      String(lifetimeS),
      ...Object.entries(config).flatMap(([path, value]) => ["--config", `${path}=${value}`]),
    ],
    { stdio: ["pipe", "pipe", "pipe"], env: { ...process.env, RUST_LOG: process.env.RUST_LOG ?? "error" } },
  );
  const child = jsonLinesChild(proc, `zenoh-python agent (${mode})`);
  const waitLine = (match: (e: AgentLine) => boolean, timeoutMs: number, what: string): Promise<AgentLine> =>
    child.waitLine(match as (l: JsonLine) => boolean, timeoutMs, what) as Promise<AgentLine>;

  let ready: AgentLine;
  try {
    ready = await waitLine((l) => l.ev === "ready", 15_000, "open session");
  } catch (e) {
    proc.kill("SIGKILL");
    throw e;
  }
  let nextId = 1;
  return {
    mode,
    zid: String(ready.zid),
    async call<T>(op: string, args: Record<string, unknown> = {}, timeoutMs = 10_000): Promise<T> {
      const id = nextId++;
      child.send({ ...args, id, op });
      const answer = await waitLine((l) => l.id === id, timeoutMs, `answer to ${op}`);
      if (answer.ok !== true)
        throw new Error(`zenoh-python ${op} failed: ${String(answer.error)}\n${String(answer.trace)}`);
      return answer as T;
    },
    waitEvent: <T>(match: (e: AgentLine) => boolean, timeoutMs = 10_000) =>
      waitLine((l) => l.ev !== undefined && match(l), timeoutMs, "matching event") as Promise<T>,
    waitSample: (name: string, key?: string, timeoutMs = 10_000) =>
      waitLine(
        (l) => l.ev === "sample" && l.name === name && (key === undefined || l.key === key),
        timeoutMs,
        `sample of ${name}${key === undefined ? "" : ` on ${key}`}`,
      ) as unknown as Promise<SampleEvent>,
    events: <T>(match: (e: AgentLine) => boolean) =>
      (child.lines as AgentLine[]).filter((l) => l.ev !== undefined && match(l)) as T[],
    stderr: () => child.stderr(),
    async stop() {
      if (child.exitCode() !== undefined) return;
      child.send({ op: "exit" });
      await child.stop();
    },
  };
}

/**
 * Starts the zest the python tests talk to: a zenoh listener on a free loopback port, no
 * scouting, and a memory storage on `demo/**` only (keys under `py/` reach no storage, so what a
 * test sees there is only what its sessions did). `ep` is where the agents connect: zest's
 * locator, or `$ZENOH_PYTHON_ROUTER` when set. `extraArgs` are more zest arguments.
 */
export async function startZestForPython(extraArgs: string[] = []): Promise<{ zest: ZestProcess; ep: string }> {
  const zest = await startZest([
    "-l",
    "tcp/127.0.0.1:0",
    "--no-multicast-scouting",
    "--cfg",
    'plugins/storage_manager/storages/demo:{key_expr:"demo/**",volume:"memory"}',
    ...extraArgs,
  ]);
  return { zest, ep: REFERENCE_ROUTER ?? zenohLocatorOf(zest) };
}

/** The zest of a python test suite and where its agents connect; read inside the tests. */
export interface PythonSuite {
  readonly zest: ZestProcess;
  readonly ep: string;
}

/**
 * zest for the tests of the enclosing `describe` (`startZestForPython(extraArgs)`), started
 * before them and stopped after them.
 */
export function zestForPythonSuite(extraArgs: string[] = []): PythonSuite {
  return suiteResource(
    "the suite's zest",
    () => startZestForPython(extraArgs),
    (p) => p.zest.stop(),
  );
}

/** What `describeEachMode` hands each mode's tests. */
export interface ModeSuite {
  mode: Mode;
  /** The suite's agents, connected in `mode` to the suite's zest before the tests (`b` when it asked for two). */
  a: Agent;
  b: Agent;
  /** A key of this mode's own: `<prefix>/<mode>/<s>`, so the modes' tests never meet. */
  k(s: string): string;
}

/**
 * A `describe` per mode (`in client mode`, `in peer mode`), each with `count` agents (1 or 2)
 * connected to the suite's zest before its tests and stopped after them, and keys under
 * `<prefix>/<mode>/`. `agentConfig`: zenoh settings for the agents' sessions (`startAgent`).
 */
export function describeEachMode(
  suite: PythonSuite,
  count: 1 | 2,
  prefix: string,
  body: (m: ModeSuite) => void,
  agentConfig: Readonly<Record<string, string>> = {},
): void {
  for (const mode of MODES) {
    describe(`in ${mode} mode`, () => {
      // Started together: an agent takes a second or two to open its session.
      let started: Agent[] = [];
      before(async () => {
        started = await Promise.all(
          Array.from({ length: count }, () => startAgent(mode, suite.ep, undefined, agentConfig)),
        );
      });
      after(async () => {
        await Promise.all(started.map((agent) => agent.stop()));
      });
      const [a, b] = [0, 1].map((i) => forwarder(() => started[i], `the suite's agent ${i}`)) as [Agent, Agent];
      body({ mode, a, b, k: (s) => `${prefix}/${mode}/${s}` });
    });
  }
}
