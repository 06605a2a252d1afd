import type { ChildProcess } from "node:child_process";
import { accessSync, constants } from "node:fs";

/** Every server a test started and that is still running. */
const live = new Set<ChildProcess>();
let exitHookInstalled = false;

/**
 * Kills `proc` with SIGKILL when the test process exits, if it is still running then, so a test
 * file that crashes or is aborted leaves no server (nor its port) behind.
 */
export function killAtExit(proc: ChildProcess): void {
  live.add(proc);
  proc.once("exit", () => live.delete(proc));
  if (!exitHookInstalled) {
    exitHookInstalled = true;
    process.once("exit", () => {
      for (const p of live) p.kill("SIGKILL");
    });
  }
}

/** True when `path` is a file this process may execute. */
export function executable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/**
 * Resolves with the first of a child's `lines` (those there already, then those to come) that
 * `match`es. `waiters` are called by the reader on each new line and at exit; it fails with
 * `failure.exited(code)` when the child exits first, with `failure.timedOut()` after `timeoutMs`.
 */
export function waitForLine<T>(
  lines: readonly T[],
  waiters: Set<() => void>,
  match: (line: T) => boolean,
  timeoutMs: number,
  exitCode: () => number | null | undefined,
  failure: { exited(code: number | null): string; timedOut(): string },
): Promise<T> {
  return new Promise<T>((resolveLine, reject) => {
    let from = 0;
    const check = (): void => {
      for (; from < lines.length; from++)
        if (match(lines[from]!)) {
          done();
          resolveLine(lines[from]!);
          return;
        }
      const code = exitCode();
      if (code !== undefined) {
        done();
        reject(new Error(failure.exited(code)));
      }
    };
    const timer = setTimeout(() => {
      done();
      reject(new Error(failure.timedOut()));
    }, timeoutMs);
    const done = (): void => {
      clearTimeout(timer);
      waiters.delete(check);
    };
    waiters.add(check);
    check();
  });
}
