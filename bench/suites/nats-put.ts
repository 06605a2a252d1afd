/**
 * PUT through the NATS fabric (issue 4): a real 3-node NATS cluster, router A on node 1 with no
 * storage, router B on node 2 with a memory storage on `np/**` (the one remote subscriber).
 * PUTs of 100 bytes (text/plain, autocannon, 32 connections) on `np/k` through A: each is routed
 * over NATS to B, stored there, and acknowledged back before A answers.
 *
 * Baseline: the in-process fabric, a single router without NATS holding the same memory storage
 * on `np/**` (the same subscriber, local). Runs alternate (warm-up, then fabric single, single
 * fabric). Ratio: fabric req/s over in-process req/s. CPU per PUT is reported for the whole
 * system (A, B and the three nats-servers; the single router).
 *
 * The floor (issue 38): a bare NATS publish-and-acknowledge of 100 bytes from node 1 (A's) to a
 * subscriber on node 2 (B's), 32 in flight, between two plain Node processes
 * (lib/nats-floor.ts), 2 s before and 2 s after the PUTs. A PUT to a remote subscriber costs at
 * least the in-process PUT plus that: floor CPU per PUT = the single router's + the
 * publish-and-acknowledge's (both processes and the three nats-servers). The HTTP load generator
 * (this process) is left out on both sides.
 *
 * Targets: fabric req/s >= 0.8x the in-process PUT's (the line's ratio), and CPU per PUT over
 * the floor's <= 1.5x.
 *
 * Check: B's fabric counted at least as many received samples as A had acknowledged PUTs.
 */
import { fmtInt, fmtNum } from "../lib/format.js";
import { httpGetText, httpPut } from "../lib/http.js";
import { loadNotes, pairedRatio, type RequestSpec, roundsNote, PAIRED_ROUNDS } from "../lib/load.js";
import {
  fabricStatus,
  type NatsCluster,
  natsPids,
  spawnRouter,
  startNatsCluster,
  waitRoutersMeet,
} from "../lib/nats.js";
import { combineFloors, type FloorFigures, publishAckFloor } from "../lib/nats-floor.js";
import { interferenceNotes } from "../lib/proc.js";
import { memory, storagesCfg } from "../lib/storages.js";
import { type ServerProcess, spawnZest } from "../lib/proc.js";
import { compareSystems, systemFigures, waitUntil } from "../lib/system-load.js";
import type { BenchResult } from "../lib/types.js";
import { availableParallelism } from "node:os";
import { textPut } from "../lib/put-pair.js";

/** Issue 38: a PUT to a subscriber on another router is at least this fraction of the in-process PUT... */
const TARGET = 0.8;
/** ...and costs at most this multiple of the floor's CPU. */
const TARGET_CPU = 1.5;

/** The floor's publish-and-acknowledge from node 1 (A's) to node 2 (B's). */
function pubAck(cluster: NatsCluster): Promise<FloorFigures> {
  return publishAckFloor(cluster, natsPids(cluster), { from: 0, to: 1, bytes: 100, inFlight: 32, seconds: 2 });
}

export async function run(): Promise<BenchResult> {
  let cluster: NatsCluster | undefined;
  const servers: ServerProcess[] = [];
  try {
    cluster = await startNatsCluster();
    const [a, b, single] = await Promise.all([
      spawnRouter("zest-nats-a", "A1", cluster.urls[0]!, storagesCfg({})),
      spawnRouter("zest-nats-b", "B2", cluster.urls[1]!, storagesCfg({ np: memory("np/**") })),
      spawnZest("zest-single", storagesCfg({ np: memory("np/**") })),
    ]);
    servers.push(a!, b!, single!);
    await waitRoutersMeet([
      { server: a!, id: "A1" },
      { server: b!, id: "B2" },
    ]);
    // A waits for B's acknowledgement once it knows B's storage: probe until a PUT through A is in B.
    let probe = 0;
    await waitUntil(
      async () => {
        const v = `probe-${++probe}`;
        await httpPut(a!.url, "/np/probe", v, "text/plain");
        return (await httpGetText(b!.url, "/np/probe")).includes(v);
      },
      10_000,
      "a PUT through router A to reach router B's storage",
    );

    const nats = natsPids(cluster);
    const floorBefore = await pubAck(cluster);
    const received0 = (await fabricStatus(b!)).detail.samplesReceived;
    const spec: RequestSpec = textPut("/np/k");
    const {
      figures: [fab, inproc],
      warmupRequests,
    } = await compareSystems(
      [
        { server: a!, spec, helperPids: [b!.pid, ...nats] },
        { server: single!, spec },
      ],
      PAIRED_ROUNDS,
    );
    const f = fab!;
    const s = inproc!;
    const received = (await fabricStatus(b!)).detail.samplesReceived - received0;
    const floor = combineFloors([floorBefore, await pubAck(cluster)]);
    const floorUsPerReq = s.systemUsPerReq + floor.usPerOp;
    const cpuRatio = f.systemUsPerReq / floorUsPerReq;
    // What this host allows a fabric that adds nothing to NATS: its cores shared by the floor's
    // processes and the load generator (whose CPU per request is the fabric run's).
    const loadgenUsPerReq = (f.loadgenCpuPct * 1e4) / f.reqPerSec;
    const hostBoundReqPerSec = (availableParallelism() * 1e6) / (floorUsPerReq + loadgenUsPerReq);
    const hostBoundRatio = hostBoundReqPerSec / s.reqPerSec;
    const acked = f.requests + warmupRequests[0]!;
    const notes = [
      ...loadNotes("fabric", f),
      ...loadNotes("in-process", s),
      ...interferenceNotes("floor (bare publish-and-acknowledge)", floor),
    ];
    if (received < acked)
      notes.push(`router B received ${fmtInt(received)} samples for ${fmtInt(acked)} PUTs acknowledged by A`);

    const ratio = pairedRatio(f, s);
    return {
      name: "nats-put",
      figures: {
        ...systemFigures("fabric", f),
        ...systemFigures("inproc", s),
        fabricRouterBUsPerReq: f.helperUsPerReq[0]!,
        fabricNatsUsPerReq: f.helperUsPerReq.slice(1).reduce((x, y) => x + y, 0),
        samplesReceivedByB: received,
        cpuPerReqRatio: s.systemUsPerReq / f.systemUsPerReq,
        floorPubAckPerSec: floor.opsPerSec,
        floorPubAckUsPerMsg: floor.usPerOp,
        floorPubAckNatsUsPerMsg: floor.natsUsPerOp,
        floorUsPerReq,
        cpuOverFloor: cpuRatio,
        loadgenUsPerReq,
        hostBoundReqPerSec,
        hostBoundRatio,
      },
      ratio,
      target: `>= ${TARGET}x req/s, CPU per PUT <= ${TARGET_CPU}x floor`,
      pass: ratio >= TARGET && cpuRatio <= TARGET_CPU,
      summary:
        `NATS fabric (A → B) ${fmtInt(f.reqPerSec)} req/s / in-process ${fmtInt(s.reqPerSec)} req/s (${roundsNote(f, s)}); ` +
        `CPU per PUT, routers and nats-servers: ${fmtNum(f.systemUsPerReq, 0)} µs (A ${fmtNum(f.serverUserUsPerReq + f.serverSysUsPerReq, 0)}, B ${fmtNum(f.helperUsPerReq[0]!, 0)}, NATS ${fmtNum(
          f.helperUsPerReq.slice(1).reduce((x, y) => x + y, 0),
          0,
        )}) / ` +
        `floor ${fmtNum(floorUsPerReq, 0)} µs (in-process PUT ${fmtNum(s.systemUsPerReq, 0)} + bare publish-and-acknowledge ${fmtNum(floor.usPerOp, 0)}, of which NATS ${fmtNum(floor.natsUsPerOp, 0)}; ${fmtInt(floor.opsPerSec)} msg/s) = ${fmtNum(cpuRatio, 2)}x; ` +
        `p99 ${fmtNum(f.p99Ms, 1)} ms / ${fmtNum(s.p99Ms, 1)} ms; ` +
        `on ${availableParallelism()} cores, at the floor's CPU per PUT plus the load generator's (${fmtNum(loadgenUsPerReq, 0)} µs), no fabric exceeds ${fmtInt(hostBoundReqPerSec)} req/s = ${fmtNum(hostBoundRatio, 2)}x the in-process PUT${hostBoundRatio < TARGET ? " (the req/s target is blocked on this host)" : ""}`,
      interferencePct: Math.max(
        f.otherCpuPct,
        f.stealPct,
        s.otherCpuPct,
        s.stealPct,
        floor.otherCpuPct,
        floor.stealPct,
      ),
      notes,
    };
  } finally {
    await Promise.all(servers.map((z) => z.stop()));
    await cluster?.stop();
  }
}
