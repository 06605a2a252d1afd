/**
 * Instructions per operation of the cluster's floor (issue 38), counted by callgrind like
 * bench/repl-instructions.ts counts zest's two routers: the bare NATS exchange of
 * lib/nats-floor.ts, both processes under valgrind, on one nats-server. Set beside
 * `repl-instructions.ts get` (the requesting and answering routers of a cross-router GET) and
 * `remote` (a PUT to another router's storage), it tells what zest adds to each side.
 *
 * Usage (valgrind installed): node --import tsx bench/nats-floor-instructions.ts [request|publish] [warm=60] [seconds=60]
 *   request: 60 bytes out, 150 back (a one-key GET's query and its answer);
 *   publish: 100 bytes out, 24 back (a sample and its acknowledgement);
 *   16 in flight (as the routers get 16 connections), `warm` seconds at valgrind's pace before
 *   counting, then `seconds` counted on both processes.
 */
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { callgrindControl, callgrindTotals, callgrindWrapper } from "./lib/callgrind.js";
import { type NatsCluster, startNatsCluster } from "./lib/nats.js";
import { BENCH_DIR, ROOT, stopChild, trackChild } from "./lib/proc.js";

const [modeArg = "request", warmArg = "60", secondsArg = "60"] = process.argv.slice(2);
if ((modeArg !== "request" && modeArg !== "publish") || !(Number(warmArg) > 0) || !(Number(secondsArg) > 0)) {
  console.error("usage: bench/nats-floor-instructions.ts [request|publish] [warm=60] [seconds=60]");
  process.exit(2);
}
const [outBytes, backBytes] = modeArg === "request" ? [60, 150] : [100, 24];
const SUBJECT = "bench.floor";

/** Starts `node <worker> <args>` under callgrind (counting off); `onLine` gets each stdout line. */
function underCallgrind(dir: string, worker: string, args: string[], onLine: (line: string) => void): ChildProcess {
  mkdirSync(dir);
  const [cmd, ...wrap] = callgrindWrapper(dir);
  const child = spawn(
    cmd!,
    [...wrap, process.execPath, "--no-concurrent-recompilation", join(BENCH_DIR, "workers", worker), ...args],
    { cwd: ROOT, stdio: ["ignore", "pipe", "ignore"] },
  );
  trackChild(child);
  let pending = "";
  child.stdout!.on("data", (c: Buffer) => {
    pending += c.toString("utf8");
    for (let nl = pending.indexOf("\n"); nl !== -1; nl = pending.indexOf("\n")) {
      onLine(pending.slice(0, nl).trim());
      pending = pending.slice(nl + 1);
    }
  });
  return child;
}

/** Instructions in the dump a process left when it exited (its counting window only). */
function exitTotals(dir: string): number {
  const dump = readdirSync(dir).find((f) => f.startsWith("callgrind.out"));
  if (dump === undefined) throw new Error(`no callgrind dump in ${dir}`);
  const text = execFileSync("callgrind_annotate", ["--threshold=100", join(dir, dump)], { encoding: "utf8" });
  const m = /^\s*([\d,]+) \([\s\d.]+%\)\s+PROGRAM TOTALS/m.exec(text);
  return m ? Number(m[1]!.replaceAll(",", "")) : Number.NaN;
}

const dir = mkdtempSync(join(tmpdir(), "zest-floor-instructions-"));
let cluster: NatsCluster | undefined;
let echo: ChildProcess | undefined;
try {
  cluster = await startNatsCluster({ size: 1, jetstream: false });
  const url = cluster.urls[0]!;
  const echoDir = join(dir, "echo");
  const ready = new Promise<void>((resolve) => {
    echo = underCallgrind(echoDir, "nats-echo.mjs", [url, SUBJECT, String(backBytes)], (l) => {
      if (l === "ready") resolve();
    });
  });
  await ready;
  const reqDir = join(dir, "requester");
  let last = "";
  const requester = underCallgrind(
    reqDir,
    "nats-pub-ack.mjs",
    [url, SUBJECT, String(outBytes), "16", secondsArg, warmArg],
    (l) => {
      if (l === "start" || l === "stop") {
        const on = l === "start" ? "on" : "off";
        callgrindControl(echo!.pid!, "-i", on);
        callgrindControl(requester.pid!, "-i", on);
      } else if (l !== "") last = l;
    },
  );
  await new Promise((r) => requester.once("exit", r));
  const { acked } = JSON.parse(last) as { acked: number };
  const req = exitTotals(reqDir);
  const ans = callgrindTotals(echo!.pid!, echoDir);
  const per = (n: number): string => Math.round(n / acked).toLocaleString("en-US");
  console.log(`bare NATS ${modeArg} (${outBytes} B out, ${backBytes} B back), 16 in flight: ${acked} counted`);
  console.log(`  requester: ${per(req)} instructions per operation (V8's compiler included)`);
  console.log(
    `  answerer: ${per(ans.total - ans.compiler)} instructions per operation (V8's compiler meanwhile: ${per(ans.compiler)})`,
  );
} finally {
  if (echo) await stopChild(echo, 2_000);
  await cluster?.stop();
  rmSync(dir, { recursive: true, force: true });
}
