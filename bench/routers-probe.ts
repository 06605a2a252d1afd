/**
 * Where the CPU of a PUT goes with n routers (issue 38): the `nats-routers` setup (n routers on a
 * 3-node NATS cluster, one memory partition each, 32 connections spread, (n-1)/n of the PUTs
 * crossing), with each process's share broken down per PUT: user and kernel CPU, context switches
 * (every thread), read and write system calls, and for the nats-servers the messages and bytes
 * they took in and sent; for the routers the fabric's counters (samples sent and received,
 * acknowledgements sent). Counts do not depend on the host's load the way CPU does: they tell
 * how many wake-ups and messages a PUT costs.
 *
 * Usage (`npm run build` first; needs nats-server):
 *   node --import tsx bench/routers-probe.ts [routers=3] [seconds=4] [rounds=1]
 * `BENCH_CPU_PROF=1` writes a .cpuprofile per router into bench/results/prof/ (bench/prof.ts reads it);
 * `PROBE_PERF=<file>` records every router and nats-server with `perf` (cpu-clock, call graphs)
 * through the last measured round (give `BENCH_ZEST_NODE_ARGS=--perf-basic-prof` to name JIT code).
 */
import { spawn } from "node:child_process";
import { once } from "node:events";
import { readdirSync, readFileSync } from "node:fs";
import { fmtInt, fmtNum } from "./lib/format.js";
import { fabricStatus, natsPids, spawnRouter, startNatsCluster, waitRoutersMeet } from "./lib/nats.js";
import { processCpuSplit, type ServerProcess } from "./lib/proc.js";
import { memory, storagesCfg } from "./lib/storages.js";
import { fireSpread } from "./lib/system-load.js";
import { fillPartitions, partitionSpec } from "./suites/growth.js";

const IDS = ["A1", "B2", "C3"];

const [nArg = "3", secondsArg = "4", roundsArg = "1"] = process.argv.slice(2);
const n = Number(nArg);
const seconds = Number(secondsArg);
const rounds = Number(roundsArg);
if (![1, 2, 3].includes(n) || !(seconds > 0) || !(rounds >= 1)) {
  console.error("usage: bench/routers-probe.ts [routers=1..3] [seconds=4] [rounds=1]");
  process.exit(2);
}

interface ProcCounts {
  user: number;
  sys: number;
  vcs: number;
  ivcs: number;
  syscr: number;
  syscw: number;
}

/** CPU seconds, context switches summed over every thread, and system calls of `pid`. */
function counts(pid: number): ProcCounts {
  const { user, sys } = processCpuSplit(pid);
  let vcs = 0;
  let ivcs = 0;
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    const status = readFileSync(`/proc/${pid}/task/${tid}/status`, "utf8");
    vcs += Number(/voluntary_ctxt_switches:\s+(\d+)/.exec(status)?.[1] ?? 0);
    ivcs += Number(/nonvoluntary_ctxt_switches:\s+(\d+)/.exec(status)?.[1] ?? 0);
  }
  const io = readFileSync(`/proc/${pid}/io`, "utf8");
  const field = (name: string): number => Number(new RegExp(`${name}:\\s+(\\d+)`).exec(io)?.[1] ?? 0);
  return { user, sys, vcs, ivcs, syscr: field("syscr"), syscw: field("syscw") };
}

interface Varz {
  in_msgs: number;
  out_msgs: number;
  in_bytes: number;
  out_bytes: number;
}

async function varz(port: number): Promise<Varz> {
  return (await (await fetch(`http://127.0.0.1:${port}/varz`)).json()) as Varz;
}

const cluster = await startNatsCluster();
const routers: ServerProcess[] = [];
try {
  for (const [i, id] of IDS.slice(0, n).entries())
    routers.push(
      await spawnRouter(`zest-probe-${id}`, id, cluster.urls[i]!, storagesCfg({ [`p${i}`]: memory(`gr/${i}/**`) })),
    );
  if (n > 1) await waitRoutersMeet(routers.map((server, i) => ({ server, id: IDS[i]! })));
  await fillPartitions(routers);
  const nats = natsPids(cluster);
  const spread = routers.map((server, i) => ({ server, spec: partitionSpec("PUT", n, i) }));
  await fireSpread(spread, nats, { connections: 32, seconds: 1 });
  for (let round = 0; round < rounds; round++) {
    const pids = [...routers.map((r) => r.pid), ...nats];
    const c0 = pids.map(counts);
    const v0 = await Promise.all(cluster.nodes.map((nd) => varz(nd.monitorPort)));
    const f0 = await Promise.all(routers.map((r) => fabricStatus(r)));
    const perfOut = round === rounds - 1 ? process.env.PROBE_PERF : undefined;
    const perf = perfOut
      ? spawn("perf", ["record", "-e", "cpu-clock", "-F", "2000", "-g", "-p", pids.join(","), "-o", perfOut], {
          stdio: "ignore",
        })
      : undefined;
    const fig = await fireSpread(spread, nats, { connections: 32, seconds });
    if (perf) {
      perf.kill("SIGINT");
      await once(perf, "exit");
    }
    const c1 = pids.map(counts);
    const v1 = await Promise.all(cluster.nodes.map((nd) => varz(nd.monitorPort)));
    const f1 = await Promise.all(routers.map((r) => fabricStatus(r)));
    const per = fig.requests;
    const load = readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ");
    console.log(
      `${n} router(s), ${seconds} s: ${fmtInt(fig.reqPerSec)} req/s, ${fmtInt(fig.systemUsPerReq)} µs per PUT (NATS ${fmtInt(fig.helpersUsPerReq)}), p50 ${fmtNum(fig.p50Ms, 2)} ms, other ${fmtInt(fig.otherCpuPct)}%, load ${load}`,
    );
    console.log("process        user µs  sys µs  vol.cs  invol.cs  read sc  write sc  (per PUT)");
    for (const [k, pid] of pids.entries()) {
      const a = c0[k]!;
      const b = c1[k]!;
      const name = k < n ? `router ${IDS[k]}` : `nats ${k - n}`;
      const col = (x: number, d = 2): string => fmtNum(x / per, d).padStart(8);
      console.log(
        `${name.padEnd(12)} ${col(1e6 * (b.user - a.user), 0)} ${col(1e6 * (b.sys - a.sys), 0)} ${col(b.vcs - a.vcs)} ${col(b.ivcs - a.ivcs)} ${col(b.syscr - a.syscr)} ${col(b.syscw - a.syscw)}   pid ${pid}`,
      );
    }
    for (const [k, nd] of cluster.nodes.entries()) {
      const d = (f: keyof Varz): string => fmtNum((v1[k]![f] - v0[k]![f]) / per, 2);
      console.log(
        `nats ${k}: in ${d("in_msgs")} msgs ${d("in_bytes")} B, out ${d("out_msgs")} msgs ${d("out_bytes")} B per PUT (port ${nd.port})`,
      );
    }
    for (const [k, id] of IDS.slice(0, n).entries()) {
      const d = (f: string): string => fmtNum(((f1[k]!.detail[f] as number) - (f0[k]!.detail[f] as number)) / per, 3);
      console.log(
        `router ${id}: samplesSent ${d("samplesSent")}, samplesReceived ${d("samplesReceived")}, acksSent ${d("acksSent")} per PUT (all routers' PUTs)`,
      );
    }
  }
} finally {
  await Promise.all(routers.map((r) => r.stop()));
  await cluster.stop();
}
