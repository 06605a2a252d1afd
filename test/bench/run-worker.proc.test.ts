/**
 * The benchmarks' interference accounting (bench/lib/proc.ts `runWorker`): the CPU of the
 * servers a worker drives is part of the measurement, not "other processes". Before, a zest
 * child's own work marked the remote API benchmarks unreliable (51% of a core "taken by other
 * processes" was mostly the router under test).
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { test } from "node:test";
import { runWorker } from "../../bench/lib/proc.js";
import { killAtExit } from "../support/child-processes.js";

test("a worker's measured servers are not counted as other processes' CPU", async () => {
  // A "server" that keeps one core busy for longer than the workers run.
  const server = spawn(process.execPath, ["-e", "const end = Date.now() + 5000; while (Date.now() < end);"]);
  killAtExit(server);
  try {
    await new Promise((r) => setTimeout(r, 300));
    // Two idle workers over the same stretch of time: one told the server is measured, one not.
    // Whatever else the machine does meanwhile counts for both alike.
    const [measured, unmeasured] = await Promise.all([
      runWorker<{ cpuSeconds: number }>("idle.mjs", [], ["1500"], { measuredPids: [server.pid!] }),
      runWorker<{ cpuSeconds: number }>("idle.mjs", [], ["1500"]),
    ]);
    const gap = unmeasured.otherCpuPct - measured.otherCpuPct;
    assert.ok(
      gap >= 20,
      `the busy server counted as interference: ${measured.otherCpuPct.toFixed(0)}% with it measured, ${unmeasured.otherCpuPct.toFixed(0)}% without`,
    );
  } finally {
    server.kill("SIGKILL");
  }
});
