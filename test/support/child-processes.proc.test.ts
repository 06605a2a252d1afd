import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { test } from "node:test";

/** True while a process with this pid exists (and is not a zombie awaiting its parent). */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  const stat = spawnSync("ps", ["-o", "stat=", "-p", String(pid)], { encoding: "utf8" }).stdout.trim();
  return stat !== "" && !stat.startsWith("Z");
}

test("a server registered with killAtExit does not outlive a test process that exits without stopping it", async () => {
  // A test process that starts a long-running child, registers it, and exits abruptly.
  const script = `
    import { spawn } from "node:child_process";
    import { killAtExit } from "./test/support/child-processes.ts";
    const child = spawn("sleep", ["60"], { stdio: "ignore" });
    killAtExit(child);
    console.log(child.pid);
    process.exit(1);
  `;
  const r = spawnSync(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script], { encoding: "utf8" });
  const pid = Number(r.stdout.trim());
  assert.ok(pid > 0, `no pid printed: ${r.stdout} ${r.stderr}`);
  for (let i = 0; i < 50 && alive(pid); i++) await new Promise((res) => setTimeout(res, 100));
  assert.equal(alive(pid), false, `sleep ${pid} outlived the test process`);
});
