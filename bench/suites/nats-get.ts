/**
 * Cross-router GET (issues 4 and 38): a real 3-node NATS cluster (JetStream on, as in the tests),
 * router A on node 1 with a memory storage on `g/**`, router B on node 2 with no storage at all
 * (`plugins/storage_manager/storages: {}`). The key `g/one` (60-byte JSON) is put through A; B
 * answers `GET /g/one` by querying A over NATS.
 *
 * Latency of sequential GETs (one keep-alive connection each; 2,000 measured per target in 4
 * alternating blocks after `WARMUP` GETs), timed in this process with sub-ms resolution:
 * - `remote`: GET /g/one through B (B → NATS → A → NATS → B);
 * - `single`: the same GET on a single router without NATS, with the read cache off
 *   (`cache_entries: 0`). A router on a fabric has no read cache (any remote write may change an
 *   answer), so this is the same work minus the fabric;
 * - `local`: the same GET through A itself (on the fabric, answered locally);
 * - `cached`: the single router with its read cache on (its default), for reference.
 *
 * The floor (issue 38): a GET through B costs at least one router's GET plus one NATS
 * request/reply from node 2 to node 1. That round trip is measured in the same run between two
 * plain Node processes (lib/nats-floor.ts: `workers/nats-rtt.mjs` on node 2, `workers/nats-echo.mjs`
 * on node 1, no zest), once before and once after the GETs. Floor p50 = single p50 + round trip
 * p50; floor CPU per GET = the single router's + the round trip's (both processes and the three
 * nats-servers). The CPU per GET of zest's system counts both routers and the three nats-servers;
 * the HTTP client (this process) is left out on both sides.
 *
 * Ratio: remote p50 over the floor's (target <= 1.1x); the CPU per GET over the floor's
 * (target <= 1.5x) is the second target of the line. Also reported: remote p50 over single p50
 * (issue 12's <= 2x).
 *
 * Every process is measured at V8's steady state, zest's and the floor's alike: from a cold start
 * router B spends about three times its steady CPU per GET over its first ~3,000 GETs (and the
 * floor's requester and responder twice theirs over their first ~2,000 requests) while V8
 * compiles the path; with 200 warm-up requests the run measured mostly that compilation
 * (bench/results/2026-11-29-xget2.md).
 */
import { fmtMs, fmtNum, fmtRatio } from "../lib/format.js";
import { httpGetText, httpPut } from "../lib/http.js";
import { type NatsCluster, natsPids, spawnRouter, startNatsCluster, waitRoutersMeet } from "../lib/nats.js";
import { combineFloors, type FloorFigures, requestReplyFloor } from "../lib/nats-floor.js";
import { memory, storagesCfg } from "../lib/storages.js";
import { JSON_60 } from "../lib/payloads.js";
import { interferenceNotes, type ServerProcess, spawnZest } from "../lib/proc.js";
import { compareLatency, latencyFigures, waitUntil } from "../lib/system-load.js";
import type { BenchResult } from "../lib/types.js";

const KEY = "/g/one";

/** Issue 38: p50 and CPU per GET over the floor's. */
const TARGET_P50 = 1.1;
const TARGET_CPU = 1.5;

/**
 * Requests each process gets before it is measured (every target, and each floor's fresh pair of
 * processes): past V8's compilation of the path on both sides (see above).
 */
const WARMUP = 4000;

/** The floor's round trip from node 2 (B's) to node 1 (A's). */
function roundTrip(cluster: NatsCluster): Promise<FloorFigures> {
  return requestReplyFloor(cluster, natsPids(cluster), { from: 1, to: 0, warmup: WARMUP, count: 1000 });
}

export async function run(): Promise<BenchResult> {
  let cluster: NatsCluster | undefined;
  const servers: ServerProcess[] = [];
  try {
    cluster = await startNatsCluster();
    const [a, b, single, cached] = await Promise.all([
      spawnRouter("zest-nats-a", "A1", cluster.urls[0]!, storagesCfg({ g: memory("g/**") })),
      spawnRouter("zest-nats-b", "B2", cluster.urls[1]!, storagesCfg({})),
      spawnZest("zest-single", [...storagesCfg({ g: memory("g/**") }), "--cfg", "plugins/rest/cache_entries:0"]),
      spawnZest("zest-single-cached", storagesCfg({ g: memory("g/**") })),
    ]);
    servers.push(a!, b!, single!, cached!);
    await waitRoutersMeet([
      { server: a!, id: "A1" },
      { server: b!, id: "B2" },
    ]);
    for (const z of [a!, single!, cached!]) await httpPut(z.url, KEY, JSON_60, "application/json");
    // B forwards the GET to A once it knows A's storage (declarations travel asynchronously).
    await waitUntil(
      async () => (await httpGetText(b!.url, KEY)).includes('"sensor"'),
      10_000,
      "router B to read g/one from router A",
    );

    const nats = natsPids(cluster);
    const rttBefore = await roundTrip(cluster);
    const [remote, base, local, hit] = await compareLatency(
      [
        { server: b!, path: KEY, helperPids: [a!.pid, ...nats] },
        { server: single!, path: KEY },
        { server: a!, path: KEY, helperPids: [b!.pid, ...nats] },
        { server: cached!, path: KEY },
      ],
      { warmup: WARMUP, perBlock: 500, blocks: 4 },
    );
    const r = remote!;
    const s = base!;
    const rtt = combineFloors([rttBefore, await roundTrip(cluster)]);
    const floorP50Ms = s.p50Ms + rtt.p50Ms;
    const floorUsPerReq = s.systemUsPerReq + rtt.usPerOp;
    const ratio = r.p50Ms / floorP50Ms;
    const cpuRatio = r.systemUsPerReq / floorUsPerReq;
    const all = [r, s, local!, hit!];
    const notes = all.flatMap((f, i) => interferenceNotes(["remote", "single", "local", "cached"][i]!, f));
    notes.push(...interferenceNotes("floor (bare request/reply)", rtt));
    for (const [label, f] of [
      ["remote", r],
      ["single", s],
      ["local", local!],
      ["cached", hit!],
    ] as const) {
      if (f.non2xx > 0) notes.push(`${label}: ${f.non2xx} of ${f.requests} GETs did not answer 2xx`);
    }
    return {
      name: "nats-get",
      figures: {
        ...latencyFigures("remote", r),
        ...latencyFigures("single", s),
        ...latencyFigures("local", local!),
        ...latencyFigures("cached", hit!),
        p99Ratio: r.p99Ms / s.p99Ms,
        p50OverSingle: r.p50Ms / s.p50Ms,
        natsRoundTripP50Ms: rtt.p50Ms,
        natsRoundTripP99Ms: rtt.p99Ms,
        natsRoundTripUsPerReq: rtt.usPerOp,
        natsRoundTripNatsUsPerReq: rtt.natsUsPerOp,
        floorP50Ms,
        floorUsPerReq,
        cpuOverFloor: cpuRatio,
        // The remote GET's CPU split: router B (the server), router A, the three nats-servers.
        remoteRouterBUsPerReq: r.serverUsPerReq,
        remoteRouterAUsPerReq: r.helperUsPerReq[0]!,
        remoteNatsUsPerReq: r.helperUsPerReq.slice(1).reduce((x, y) => x + y, 0),
      },
      ratio,
      target: `p50 <= ${TARGET_P50}x floor, CPU per GET <= ${TARGET_CPU}x floor`,
      pass: ratio <= TARGET_P50 && cpuRatio <= TARGET_CPU,
      summary:
        `through router B p50 ${fmtMs(r.p50Ms)} / floor ${fmtMs(floorP50Ms)} (one router, cache off, ${fmtMs(s.p50Ms)} + bare NATS request/reply node 2 → node 1 ${fmtMs(rtt.p50Ms)}) = ${fmtRatio(ratio)}; ` +
        `CPU per GET, routers and nats-servers: ${fmtNum(r.systemUsPerReq, 0)} µs (B ${fmtNum(r.serverUsPerReq, 0)}, A ${fmtNum(r.helperUsPerReq[0]!, 0)}, NATS ${fmtNum(
          r.helperUsPerReq.slice(1).reduce((x, y) => x + y, 0),
          0,
        )}) / ` +
        `floor ${fmtNum(floorUsPerReq, 0)} µs (one router ${fmtNum(s.systemUsPerReq, 0)} + request/reply ${fmtNum(rtt.usPerOp, 0)}, of which NATS ${fmtNum(rtt.natsUsPerOp, 0)}) = ${fmtRatio(cpuRatio)}; ` +
        `p99 ${fmtMs(r.p99Ms)} / one router ${fmtMs(s.p99Ms)}; remote / one router p50 ${fmtRatio(r.p50Ms / s.p50Ms)}; on A itself p50 ${fmtMs(local!.p50Ms)}; cache on ${fmtMs(hit!.p50Ms)}`,
      interferencePct: Math.max(...all.flatMap((f) => [f.otherCpuPct, f.stealPct]), rtt.otherCpuPct, rtt.stealPct),
      notes,
    };
  } finally {
    await Promise.all(servers.map((z) => z.stop()));
    await cluster?.stop();
  }
}
