/**
 * zenoh-pico's own integration programs (`tests/` beside pico's example programs, see
 * docs/zenoh-protocol.md, "Testing against zenoh-pico"), each against a fresh zest without
 * storages, as pico's CI runs them against a fresh zenohd: exit 0 is a pass, an `assert()` that
 * fails exits 134 naming its line. They find the router by scouting, so they run only inside
 * the loopback-only namespace. Only the programs that take under a minute are here; the others
 * are run by hand (docs/zenoh-protocol.md).
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { accessSync, constants } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { test } from "node:test";
import { killAtExit } from "../support/child-processes.js";
import { loopbackOnly, UNDER_CI } from "../support/netns.js";
import { PICO_BIN } from "../support/pico.js";
import { startZest } from "../support/zest-process.js";

const TESTS_DIR = join(dirname(PICO_BIN), "tests");

function skipFor(program: string): string | false {
  if (UNDER_CI) return false;
  try {
    accessSync(join(TESTS_DIR, program), constants.X_OK);
  } catch {
    return `zenoh-pico integration program ${program} not found in ${TESTS_DIR}`;
  }
  if (!loopbackOnly()) return "pico programs run only inside a loopback-only network namespace (*.netns.test.ts)";
  return false;
}

/** Runs `program` against a fresh zest; resolves with its exit code and output. */
async function runAgainstZest(program: string, timeoutMs: number): Promise<{ code: number | null; output: string }> {
  const zest = await startZest(["-l", "tcp/127.0.0.1:0", "--cfg", "plugins/storage_manager/storages:{}"]);
  try {
    const proc = spawn(join(TESTS_DIR, program), [], { cwd: tmpdir(), stdio: ["ignore", "pipe", "pipe"] });
    killAtExit(proc);
    let output = "";
    proc.stdout.setEncoding("utf8").on("data", (d: string) => (output += d));
    proc.stderr.setEncoding("utf8").on("data", (d: string) => (output += d));
    const timer = setTimeout(() => proc.kill("SIGKILL"), timeoutMs);
    const code = await new Promise<number | null>((resolve) => proc.on("exit", (c) => resolve(c)));
    clearTimeout(timer);
    return { code, output };
  } finally {
    await zest.stop();
  }
}

test("z_api_source_info_test: source info of puts, deletes, queries and replies arrives unchanged", {
  skip: skipFor("z_api_source_info_test"),
  timeout: 90_000,
}, async () => {
  const { code, output } = await runAgainstZest("z_api_source_info_test", 80_000);
  assert.equal(code, 0, output);
});
