/**
 * A child process that speaks JSON lines (the suite's python clients and routers): what it
 * printed so far, commands written to its stdin, and waits on its lines that end when it exits.
 */
import type { ChildProcess } from "node:child_process";
import { killAtExit, waitForLine } from "./child-processes.js";

/** A line the child printed: a JSON object, or `{ ev: "unparsed", text }` for any other line. */
export type JsonLine = Record<string, unknown>;

export interface JsonLinesChild {
  /** Lines printed so far. */
  readonly lines: JsonLine[];
  /** Writes `cmd` as one JSON line to its stdin. */
  send(cmd: Record<string, unknown>): void;
  /**
   * The first line (seen or to come) that satisfies `match`; rejects after `timeoutMs`, or when
   * the child exits first, with its last lines and stderr (`what` names the wait).
   */
  waitLine(match: (l: JsonLine) => boolean, timeoutMs: number, what: string): Promise<JsonLine>;
  /** Everything it printed on stderr (the last 20,000 characters). */
  stderr(): string;
  /** Its exit code once it exited (null when killed by a signal), undefined before. */
  exitCode(): number | null | undefined;
  /** Closes its stdin (its cue to exit), then SIGKILL after 3 s. Safe to call twice. */
  stop(): Promise<void>;
}

/** Reads `proc`'s stdout as JSON lines; `name` names it in errors. The child is killed when the test process exits. */
export function jsonLinesChild(proc: ChildProcess, name: string): JsonLinesChild {
  killAtExit(proc);
  // A command written after the child died is reported by the wait on its answer, not here.
  proc.stdin!.on("error", () => {});
  const lines: JsonLine[] = [];
  const waiters = new Set<() => void>();
  let err = "";
  let code: number | null | undefined;
  const gone = new Promise<void>((r) =>
    proc.once("close", (c) => {
      code = c;
      r();
      for (const w of waiters) w();
    }),
  );
  proc.stderr!.setEncoding("utf8").on("data", (d: string) => {
    err = (err + d).slice(-20_000);
  });
  let partial = "";
  proc.stdout!.setEncoding("utf8").on("data", (chunk: string) => {
    const parts = (partial + chunk).split("\n");
    partial = parts.pop()!;
    for (const p of parts) {
      if (p.trim() === "") continue;
      try {
        lines.push(JSON.parse(p) as JsonLine);
      } catch {
        lines.push({ ev: "unparsed", text: p });
      }
    }
    for (const w of waiters) w();
  });
  const tail = (): string =>
    `${lines
      .slice(-8)
      .map((l) => JSON.stringify(l).slice(0, 400))
      .join("\n")}\nstderr: ${err.slice(-2000)}`;
  return {
    lines,
    send: (cmd) => void proc.stdin!.write(`${JSON.stringify(cmd)}\n`),
    waitLine(match, timeoutMs, what) {
      return waitForLine(lines, waiters, match, timeoutMs, () => code, {
        exited: (c) => `${name} exited (${c}) before ${what}; its output:\n${tail()}`,
        timedOut: () => `${name}: no ${what} within ${timeoutMs} ms; its output:\n${tail()}`,
      });
    },
    stderr: () => err,
    exitCode: () => code,
    async stop() {
      if (code !== undefined) return;
      proc.stdin!.end();
      const t = setTimeout(() => proc.kill("SIGKILL"), 3_000);
      await gone;
      clearTimeout(t);
    },
  };
}
