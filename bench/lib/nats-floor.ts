/**
 * The floors of the cluster benchmarks (issue 38): what NATS itself costs for the messages a
 * cross-router GET or PUT needs, between two plain Node processes with no zest at all, measured
 * on the same cluster in the same run. Both report latency and the CPU per operation of every
 * process that takes part: the requesting process (in the role of the router that takes the HTTP
 * request), the answering one (the router that holds the data) and the nats-servers. The bench
 * process, which only starts them, is not counted, as the HTTP load generator is not counted on
 * zest's side.
 *
 * - `requestReplyFloor`: sequential request/reply from node `from` to a responder on node `to`
 *   (60 bytes out, 150 back: a one-key GET's query and answer), as a cross-router GET does.
 * - `publishAckFloor`: publish-and-acknowledge, `inFlight` requests outstanding at all times
 *   (100 bytes out, 24 back: a sample and its acknowledgement), as a PUT to a subscriber on
 *   another router does.
 */
import { spawn } from "node:child_process";
import { join } from "node:path";
import type { NatsCluster } from "../../test/support/nats-cluster.js";
import { BENCH_DIR, processCpuSeconds, ROOT, startInterference, stopChild, trackChild } from "./proc.js";

/** What a floor measured; CPU in µs per operation. */
export interface FloorFigures {
  ops: number;
  seconds: number;
  opsPerSec: number;
  p50Ms: number;
  p99Ms: number;
  /** Requester + responder + nats-servers. */
  usPerOp: number;
  requesterUsPerOp: number;
  responderUsPerOp: number;
  natsUsPerOp: number;
  otherCpuPct: number;
  stealPct: number;
}

interface WorkerOut {
  cpuSeconds: number;
  p50Ms: number;
  p99Ms: number;
  requests?: number;
  acked?: number;
  seconds?: number;
}

const SUBJECT = "bench.floor";

/** Starts bench/workers/nats-echo.mjs on `url`; resolves once it is subscribed. */
function startEcho(url: string, replyBytes: number): Promise<{ pid: number; stop: () => Promise<void> }> {
  const child = spawn(
    process.execPath,
    [join(BENCH_DIR, "workers", "nats-echo.mjs"), url, SUBJECT, String(replyBytes)],
    {
      cwd: ROOT,
      stdio: ["ignore", "pipe", "inherit"],
    },
  );
  trackChild(child);
  return new Promise((resolve, reject) => {
    let out = "";
    child.stdout!.on("data", (c: Buffer) => {
      out += c.toString("utf8");
      if (out.includes("ready")) resolve({ pid: child.pid!, stop: () => stopChild(child, 2_000) });
    });
    child.once("exit", (code) => reject(new Error(`nats-echo exited early (code ${code})`)));
  });
}

/**
 * Runs a floor worker that prints `start` and `stop` around its measured part, and reads the CPU
 * of `pids` at those two lines.
 */
function runMarked(
  file: string,
  args: string[],
  pids: readonly number[],
): Promise<{ out: WorkerOut; cpu: number[]; wall: number; otherCpuPct: number; stealPct: number }> {
  const child = spawn(process.execPath, [join(BENCH_DIR, "workers", file), ...args], {
    cwd: ROOT,
    stdio: ["ignore", "pipe", "inherit"],
  });
  trackChild(child);
  return new Promise((resolve, reject) => {
    let pending = "";
    let last = "";
    let cpu0: number[] = [];
    let cpu: number[] = [];
    let t0 = 0;
    let wall = 0;
    let interference: ReturnType<typeof startInterference> | undefined;
    let measured = { otherCpuPct: Number.NaN, stealPct: Number.NaN };
    child.stdout!.on("data", (c: Buffer) => {
      pending += c.toString("utf8");
      for (let nl = pending.indexOf("\n"); nl !== -1; nl = pending.indexOf("\n")) {
        const line = pending.slice(0, nl).trim();
        pending = pending.slice(nl + 1);
        if (line === "start") {
          cpu0 = pids.map(processCpuSeconds);
          interference = startInterference([...pids, child.pid!]);
          t0 = performance.now();
        } else if (line === "stop") {
          wall = (performance.now() - t0) / 1000;
          cpu = pids.map((p, i) => processCpuSeconds(p) - cpu0[i]!);
          measured = interference?.() ?? measured;
        } else if (line !== "") last = line;
      }
    });
    child.once("exit", (code) => {
      try {
        if (code !== 0) throw new Error(`${file} exited with code ${code}`);
        resolve({ out: JSON.parse(last) as WorkerOut, cpu, wall, ...measured });
      } catch (err) {
        reject(err);
      }
    });
  });
}

function figures(
  ops: number,
  seconds: number,
  out: WorkerOut,
  responderCpu: number,
  natsCpu: number,
  m: { otherCpuPct: number; stealPct: number },
): FloorFigures {
  const us = (s: number): number => (1e6 * s) / ops;
  return {
    ops,
    seconds,
    opsPerSec: ops / seconds,
    p50Ms: out.p50Ms,
    p99Ms: out.p99Ms,
    usPerOp: us(out.cpuSeconds + responderCpu + natsCpu),
    requesterUsPerOp: us(out.cpuSeconds),
    responderUsPerOp: us(responderCpu),
    natsUsPerOp: us(natsCpu),
    otherCpuPct: m.otherCpuPct,
    stealPct: m.stealPct,
  };
}

/** Sequential request/reply from node `from` to a responder on node `to` (see above). */
export async function requestReplyFloor(
  cluster: NatsCluster,
  natsPids: readonly number[],
  opts: { from: number; to: number; warmup: number; count: number },
): Promise<FloorFigures> {
  const echo = await startEcho(cluster.urls[opts.to]!, 150);
  try {
    const r = await runMarked(
      "nats-rtt.mjs",
      [cluster.urls[opts.from]!, SUBJECT, String(opts.warmup), String(opts.count)],
      [echo.pid, ...natsPids],
    );
    const [responder, ...nats] = r.cpu;
    return figures(r.out.requests ?? opts.count, r.wall, r.out, responder!, sum(nats), r);
  } finally {
    await echo.stop();
  }
}

/** Publish-and-acknowledge from node `from` to a subscriber on node `to`, `inFlight` at once (see above). */
export async function publishAckFloor(
  cluster: NatsCluster,
  natsPids: readonly number[],
  opts: { from: number; to: number; bytes: number; inFlight: number; seconds: number },
): Promise<FloorFigures> {
  const echo = await startEcho(cluster.urls[opts.to]!, 24);
  try {
    const r = await runMarked(
      "nats-pub-ack.mjs",
      [cluster.urls[opts.from]!, SUBJECT, String(opts.bytes), String(opts.inFlight), String(opts.seconds)],
      [echo.pid, ...natsPids],
    );
    const [responder, ...nats] = r.cpu;
    return figures(r.out.acked ?? 0, r.out.seconds ?? r.wall, r.out, responder!, sum(nats), r);
  } finally {
    await echo.stop();
  }
}

function sum(xs: readonly number[]): number {
  return xs.reduce((a, b) => a + b, 0);
}

/**
 * Runs of one floor as one: operations, time and CPU summed; p50 the operation-weighted mean of
 * the runs' p50s, p99 the worst; interference the time-weighted mean.
 */
export function combineFloors(runs: readonly FloorFigures[]): FloorFigures {
  const ops = sum(runs.map((r) => r.ops));
  const seconds = sum(runs.map((r) => r.seconds));
  const byOps = (f: (r: FloorFigures) => number): number => sum(runs.map((r) => f(r) * r.ops)) / ops;
  const byTime = (f: (r: FloorFigures) => number): number => sum(runs.map((r) => f(r) * r.seconds)) / seconds;
  return {
    ops,
    seconds,
    opsPerSec: ops / seconds,
    p50Ms: byOps((r) => r.p50Ms),
    p99Ms: Math.max(...runs.map((r) => r.p99Ms)),
    usPerOp: byOps((r) => r.usPerOp),
    requesterUsPerOp: byOps((r) => r.requesterUsPerOp),
    responderUsPerOp: byOps((r) => r.responderUsPerOp),
    natsUsPerOp: byOps((r) => r.natsUsPerOp),
    otherCpuPct: byTime((r) => r.otherCpuPct),
    stealPct: byTime((r) => r.stealPct),
  };
}
