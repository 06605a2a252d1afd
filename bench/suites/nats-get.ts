/**
 * Cross-router GET (issue 4): a real 3-node NATS cluster (JetStream on, as in the tests), router
 * A on node 1 with a memory storage on `g/**`, router B on node 2 with no storage at all
 * (`plugins/storage_manager/storages: {}`). The key `g/one` (60-byte JSON) is put through A; B
 * answers `GET /g/one` by querying A over NATS.
 *
 * Latency of sequential GETs (one keep-alive connection each; 2,000 measured per target in 4
 * alternating blocks after 200 warm-up), timed in this process with sub-ms resolution:
 * - `remote`: GET /g/one through B (B → NATS → A → NATS → B);
 * - `single`: the same GET on a single router without NATS, with the read cache off
 *   (`cache_entries: 0`): the baseline. A router on a fabric has no read cache (any remote write
 *   may change an answer), so this is the same work minus the fabric;
 * - `local`: the same GET through A itself (on the fabric, answered locally);
 * - `cached`: the single router with its read cache on (its default), for reference.
 *
 * Ratio: remote p50 / single p50. The CPU per GET of the whole system (both routers and the
 * three nats-servers) is reported too.
 *
 * The floor: a bare `@nats-io` request/reply between a plain process on node 2 (where B is) and
 * a responder in this process on node 1 (where A is), no zest at all (bench/workers/nats-rtt.mjs).
 * A GET through B costs at least one router's GET plus that round trip, so `floorRatio`,
 * (single p50 + round trip p50) / single p50, is the lowest ratio any fabric could reach here.
 */
import { fmtMs, fmtNum } from "../lib/format.js";
import { httpGetText, httpPut } from "../lib/http.js";
import { type NatsCluster, natsPids, spawnRouter, startNatsCluster, waitRoutersMeet } from "../lib/nats.js";
import { memory, storagesCfg } from "../lib/storages.js";
import { JSON_60 } from "../lib/payloads.js";
import { interferenceNotes, runWorker, type ServerProcess, spawnZest } from "../lib/proc.js";
import { connect } from "@nats-io/transport-node";
import { compareLatency, latencyFigures, waitUntil } from "../lib/system-load.js";
import type { BenchResult } from "../lib/types.js";

const KEY = "/g/one";
const RTT_SUBJECT = "bench.rtt";

interface RttOut {
  requests: number;
  p50Ms: number;
  p99Ms: number;
  cpuSeconds: number;
}

/** A bare request/reply from node 2 to a responder on node 1 (the floor, see above). */
async function natsRoundTrip(cluster: NatsCluster): Promise<RttOut> {
  const responder = await connect({ servers: cluster.urls[0]! });
  // About the bytes of a one-key GET answer.
  const answer = new TextEncoder().encode("y".repeat(150));
  responder.subscribe(RTT_SUBJECT, {
    callback: (_err, msg) => {
      msg.respond(answer);
    },
  });
  try {
    await responder.flush();
    // The nats-servers carry the round trip: their CPU is the system under test, not interference.
    const { out } = await runWorker<RttOut>("nats-rtt.mjs", [], [cluster.urls[1]!, RTT_SUBJECT, "200", "2000"], {
      measuredPids: natsPids(cluster),
    });
    return out;
  } finally {
    await responder.close();
  }
}

/** Issue 12: the cross-router GET p50 is at most this multiple of one router's. */
const TARGET = 2;

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
    const [remote, base, local, hit] = await compareLatency(
      [
        { server: b!, path: KEY, helperPids: [a!.pid, ...nats] },
        { server: single!, path: KEY },
        { server: a!, path: KEY, helperPids: [b!.pid, ...nats] },
        { server: cached!, path: KEY },
      ],
      { warmup: 200, perBlock: 500, blocks: 4 },
    );
    const r = remote!;
    const s = base!;
    const ratio = r.p50Ms / s.p50Ms;
    const rtt = await natsRoundTrip(cluster);
    const floorRatio = (s.p50Ms + rtt.p50Ms) / s.p50Ms;
    const all = [r, s, local!, hit!];
    const notes = all.flatMap((f, i) => interferenceNotes(["remote", "single", "local", "cached"][i]!, f));
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
        natsRoundTripP50Ms: rtt.p50Ms,
        natsRoundTripP99Ms: rtt.p99Ms,
        floorRatio,
        // The remote GET's CPU split: router B (the server), router A, the three nats-servers.
        remoteRouterAUsPerReq: r.helperUsPerReq[0]!,
        remoteNatsUsPerReq: r.helperUsPerReq.slice(1).reduce((x, y) => x + y, 0),
      },
      ratio,
      target: `<= ${TARGET}x`,
      pass: ratio <= TARGET,
      summary:
        `through router B p50 ${fmtMs(r.p50Ms)}, p99 ${fmtMs(r.p99Ms)} / one router (cache off) p50 ${fmtMs(s.p50Ms)}, p99 ${fmtMs(s.p99Ms)} ` +
        `(on A itself p50 ${fmtMs(local!.p50Ms)}; cache on ${fmtMs(hit!.p50Ms)}; CPU per GET, all processes: ${fmtNum(r.systemUsPerReq, 0)} µs / ${fmtNum(s.systemUsPerReq, 0)} µs); ` +
        `a bare NATS request/reply from node 2 to node 1, no zest, p50 ${fmtMs(rtt.p50Ms)}: no fabric gets below ${fmtNum(floorRatio, 2)}x here`,
      interferencePct: Math.max(...all.flatMap((f) => [f.otherCpuPct, f.stealPct])),
      notes,
    };
  } finally {
    await Promise.all(servers.map((z) => z.stop()));
    await cluster?.stop();
  }
}
