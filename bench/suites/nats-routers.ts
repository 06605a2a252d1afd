/**
 * Three routers against one (issue 38): the `growth` benchmark's routers dimension
 * (suites/growth.ts, `measureRouters`) on its own, with its floor. 1, 2 and 3 routers on one
 * 3-node NATS cluster (router i on node i), one memory partition per router (`gr/<i>/**`), 32
 * connections split over the routers, each router's requests spread over every partition, so
 * (n-1)/n of them cross the fabric. PUT of 100 B, then GET, 4 s each, each after a warm-up until
 * every router served 10,000 requests (growth.ts, `warmUp`).
 *
 * The figure that counts on a 2-core host is the CPU per request over every router and
 * nats-server (the load generator, this process, left out): n routers and three nats-servers
 * share the same two cores, so req/s says little about n machines. Ratio: CPU per PUT with 3
 * routers over 1 (target <= 1.5x).
 *
 * The floor: one router's CPU per PUT plus, for the (n-1)/n of the PUTs that cross, a bare NATS
 * publish-and-acknowledge of 100 bytes between two Node processes on two nodes (lib/nats-floor.ts,
 * 2 s before and 2 s after the routers). These per-operation figures feed the scaling model in
 * bench/README.md ("Scaling beyond one machine").
 */
import { fmtInt, fmtNum, fmtRatio } from "../lib/format.js";
import { type NatsCluster, natsPids, startNatsCluster } from "../lib/nats.js";
import { combineFloors, type FloorFigures, publishAckFloor } from "../lib/nats-floor.js";
import { interferenceNotes } from "../lib/proc.js";
import type { SpreadFigures } from "../lib/system-load.js";
import type { BenchResult } from "../lib/types.js";
import { measureRouters, spreadFigures } from "./growth.js";

const STEPS = [1, 2, 3];
/** Issue 38: CPU per PUT with three routers at most this multiple of one router's. */
const TARGET = 1.5;

function pubAck(cluster: NatsCluster): Promise<FloorFigures> {
  return publishAckFloor(cluster, natsPids(cluster), { from: 0, to: 1, bytes: 100, inFlight: 32, seconds: 2 });
}

export async function run(): Promise<BenchResult> {
  let cluster: NatsCluster | undefined;
  try {
    cluster = await startNatsCluster();
    const before = await pubAck(cluster);
    const steps: Array<{ put: SpreadFigures; get: SpreadFigures; putNatsMsgs: number; getNatsMsgs: number }> = [];
    for (const n of STEPS) steps.push(await measureRouters(cluster, n));
    const floor = combineFloors([before, await pubAck(cluster)]);
    const figures: Record<string, number> = {};
    const notes: string[] = [...interferenceNotes("floor (bare publish-and-acknowledge)", floor)];
    for (const [i, { put, get, putNatsMsgs, getNatsMsgs }] of steps.entries()) {
      const n = STEPS[i]!;
      Object.assign(figures, spreadFigures(`routers${n}Put`, put), spreadFigures(`routers${n}Get`, get), {
        [`routers${n}PutNatsMsgsPerReq`]: putNatsMsgs,
        [`routers${n}GetNatsMsgsPerReq`]: getNatsMsgs,
      });
      for (const [label, f] of [
        ["PUT", put],
        ["GET", get],
      ] as const) {
        notes.push(...interferenceNotes(`${n} router(s) ${label}`, f));
        if (f.errors > 0 || f.non2xx > 0)
          notes.push(`${n} router(s) ${label}: ${f.errors} errors and ${f.non2xx} non-2xx responses`);
      }
    }
    const one = steps[0]!;
    const three = steps[2]!;
    const floor3 = one.put.systemUsPerReq + (2 / 3) * floor.usPerOp;
    const ratio = three.put.systemUsPerReq / one.put.systemUsPerReq;
    Object.assign(figures, {
      floorPubAckUsPerMsg: floor.usPerOp,
      floorPubAckNatsUsPerMsg: floor.natsUsPerOp,
      floorPubAckPerSec: floor.opsPerSec,
      routers3PutFloorUsPerReq: floor3,
      routers3PutOverFloor: three.put.systemUsPerReq / floor3,
      routersPutCpuPerReqRatio: ratio,
      routersGetCpuPerReqRatio: three.get.systemUsPerReq / one.get.systemUsPerReq,
      routersPutRatio: three.put.reqPerSec / one.put.reqPerSec,
    });
    const cell = (f: SpreadFigures, msgs: number): string =>
      `${fmtInt(f.reqPerSec)} req/s, ${fmtInt(f.systemUsPerReq)} µs (NATS ${fmtInt(f.helpersUsPerReq)}, ${fmtNum(msgs, 2)} NATS messages)`;
    return {
      name: "nats-routers",
      figures,
      ratio,
      target: `CPU per PUT, 3 routers <= ${TARGET}x 1`,
      pass: ratio <= TARGET,
      summary:
        `CPU per PUT, every router and nats-server, 3 routers ${fmtInt(three.put.systemUsPerReq)} µs / 1 router ${fmtInt(one.put.systemUsPerReq)} µs = ${fmtRatio(ratio)}; ` +
        `floor with 3 (one router + 2/3 of a bare publish-and-acknowledge, ${fmtInt(floor.usPerOp)} µs): ${fmtInt(floor3)} µs = ${fmtNum(floor3 / one.put.systemUsPerReq, 2)}x 1 router, 3 routers ${fmtNum(three.put.systemUsPerReq / floor3, 2)}x it; ` +
        `PUT ${STEPS.map((n, i) => `${n}: ${cell(steps[i]!.put, steps[i]!.putNatsMsgs)}`).join("; ")}; ` +
        `GET ${STEPS.map((n, i) => `${n}: ${cell(steps[i]!.get, steps[i]!.getNatsMsgs)}`).join("; ")} (per request)`,
      interferencePct: Math.max(
        floor.otherCpuPct,
        floor.stealPct,
        ...steps.flatMap((s) => [s.put.otherCpuPct, s.put.stealPct, s.get.otherCpuPct, s.get.stealPct]),
      ),
      notes,
    };
  } finally {
    await cluster?.stop();
  }
}
