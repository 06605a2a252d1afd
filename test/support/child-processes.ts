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
