/**
 * jetstream volume PUT (issue 12): a real 3-node NATS cluster, and on it
 * - zest: one router with one storage, `js/**` on a jetstream volume connected to node 1 (its
 *   own `servers`, a KV bucket with 3 replicas); HTTP PUTs of 100 bytes (text/plain, autocannon,
 *   32 connections), every request on a new key (`js/k<n>`). This router runs without the NATS
 *   fabric, so the figure is the volume's; also reported (`fabric…`, one run, after the others):
 *   the same PUTs on a router joined to the cluster's fabric (`--nats`), whose volume uses the
 *   fabric's connection, so what the fabric adds to each PUT shows apart;
 * - the baseline: `@nats-io/kv` puts of 100 bytes from a plain Node script
 *   (`workers/kv-put.mjs`, a child process connected to node 1), 32 in flight, each on a new key
 *   (`k.<pid>.<n>`, beside zest's `js.k<n>`), into the same bucket: one stream, so its leader's
 *   place (node 1, or across a route, which costs each put two more messages and more of the
 *   servers' CPU) weighs on both alike.
 * - the HTTP floor: a bare `node:http` server (`baselines/kv-http.mjs`, connected to node 1)
 *   answering each PUT after one `@nats-io/kv` put into the same bucket, driven by the same
 *   autocannon load: what an HTTP gateway over the bucket cannot go below on this host, where the
 *   load generator shares the two cores with everything else (the kv script needs none).
 * Warm-up, then alternating runs of 5 s (zest, kv, HTTP floor; then the other way round). The nats-servers' CPU is counted as
 * each system's, so CPU per put compares the whole systems; each side's messages into the
 * nats-servers per put (their `/varz` `in_msgs`) count what a put costs the cluster.
 *
 * Checks: a value put through the router reads back before the runs; after them, the bucket's
 * stream holds at least as many keys as there were acknowledged PUTs on `js/` (from the nodes'
 * monitoring endpoint `/jsz`).
 */
import { fmtInt, fmtNum } from "../lib/format.js";
import { httpGetText, httpPut } from "../lib/http.js";
import { loadNotes } from "../lib/load.js";
import { loadavg } from "node:os";
import { type NatsCluster, natsMessagesIn, natsPids, spawnRouter, startNatsCluster } from "../lib/nats.js";
import { storagesCfg } from "../lib/storages.js";
import { TEXT_100 } from "../lib/payloads.js";
import {
  interferenceNotes,
  processCpuSeconds,
  runWorker,
  type ServerProcess,
  spawnBaseline,
  spawnZest,
} from "../lib/proc.js";
import { combineSystem, fireSystem, type SystemFigures, systemFigures, type SystemTarget } from "../lib/system-load.js";
import type { BenchResult } from "../lib/types.js";

/** Issue 38 (issue 12 asked 0.7x): a PUT to a jetstream storage at least this fraction of a bare `@nats-io/kv` put. */
const TARGET = 0.9;
const CONNECTIONS = 32;
const ROUND_SECONDS = 5;
const ROUNDS = 2;
/** The baseline writes the jetstream storage's own bucket (see the top of this file). */
const KV_BUCKET = "zest_js";

/** What one run of the `@nats-io/kv` script measured. */
interface KvRun {
  puts: number;
  seconds: number;
  p50Ms: number;
  p99Ms: number;
  /** The script's CPU while measuring. */
  cpuSeconds: number;
  /** The nats-servers' CPU over the whole run of the script (its 1 s warm-up included). */
  natsSeconds: number;
  /** Every put the script made (its warm-up's included), and the messages the servers took in meanwhile. */
  total: number;
  natsMessages: number;
  wallSeconds: number;
  otherCpuPct: number;
  stealPct: number;
}

/** One run of the baseline script, with the nats-servers' CPU meanwhile. */
async function kvRun(cluster: NatsCluster, seconds: number): Promise<KvRun> {
  const pids = natsPids(cluster);
  const m0 = await natsMessagesIn(cluster);
  const n0 = pids.map(processCpuSeconds);
  const t0 = performance.now();
  // The nats-servers are part of the system, not interference.
  const { out, otherCpuPct, stealPct } = await runWorker<
    Omit<KvRun, "natsSeconds" | "wallSeconds" | "natsMessages" | "otherCpuPct" | "stealPct">
  >("kv-put.mjs", [], [cluster.urls[0]!, KV_BUCKET, "3", String(CONNECTIONS), String(seconds)], {
    measuredPids: pids,
  });
  const natsSeconds = pids.reduce((s, p, i) => s + processCpuSeconds(p) - n0[i]!, 0);
  const wallSeconds = (performance.now() - t0) / 1000;
  const natsMessages = (await natsMessagesIn(cluster)) - m0;
  return { ...out, natsSeconds, wallSeconds, natsMessages, otherCpuPct, stealPct };
}

const STREAM = "KV_zest_js";

/** Messages in the bucket's stream, as its leader reports them (undefined if no node answered). */
async function streamMessages(cluster: NatsCluster): Promise<number | undefined> {
  let best: number | undefined;
  for (const node of cluster.nodes) {
    try {
      const res = await fetch(`http://127.0.0.1:${node.monitorPort}/jsz?streams=true`);
      const jsz = (await res.json()) as {
        account_details?: Array<{ stream_detail?: Array<{ name: string; state: { messages: number } }> }>;
      };
      for (const acc of jsz.account_details ?? []) {
        for (const s of acc.stream_detail ?? []) if (s.name === STREAM) best = Math.max(best ?? 0, s.state.messages);
      }
    } catch {
      // that node did not answer: the others may
    }
  }
  return best;
}

/** The node (1 to 3) that leads the bucket's stream, from the nodes' `/jsz`; 0 if none said. */
async function streamLeaderNode(cluster: NatsCluster): Promise<number> {
  for (const node of cluster.nodes) {
    try {
      const res = await fetch(`http://127.0.0.1:${node.monitorPort}/jsz?streams=true`);
      const jsz = (await res.json()) as {
        account_details?: Array<{ stream_detail?: Array<{ name: string; cluster?: { leader?: string } }> }>;
      };
      for (const acc of jsz.account_details ?? [])
        for (const s of acc.stream_detail ?? [])
          if (s.name === STREAM && s.cluster?.leader)
            return cluster.nodes.findIndex((n) => n.name === s.cluster!.leader) + 1;
    } catch {
      // that node did not answer: the others may
    }
  }
  return 0;
}

/** One run of the same PUTs on a router joined to the cluster's fabric, its volume on the fabric's connection. */
async function fabricRun(cluster: NatsCluster): Promise<SystemFigures> {
  const router = await spawnRouter(
    "zest-jetstream-fabric",
    "F1",
    cluster.urls[0]!,
    storagesCfg({ js: `{key_expr:"fjs/**",volume:{id:"jetstream",replicas:3}}` }),
  );
  try {
    const target = putTarget(router, "/fjs/k", cluster);
    await fireSystem(target, { connections: CONNECTIONS, seconds: 1 });
    return await fireSystem(target, { connections: CONNECTIONS, seconds: ROUND_SECONDS });
  } finally {
    await router.stop();
  }
}

function putTarget(server: ServerProcess, path: string, cluster: NatsCluster): SystemTarget {
  return {
    server,
    spec: { path, method: "PUT", headers: { "content-type": "text/plain" }, body: TEXT_100 },
    distinctKeys: true,
    helperPids: natsPids(cluster),
  };
}

export async function run(): Promise<BenchResult> {
  let cluster: NatsCluster | undefined;
  let zest: ServerProcess | undefined;
  let floor: ServerProcess | undefined;
  try {
    cluster = await startNatsCluster();
    zest = await spawnZest("zest-jetstream", [
      "--cfg",
      `plugins/storage_manager/volumes/jsv:{backend:"jetstream",servers:${JSON.stringify(cluster.urls[0]!)}}`,
      ...storagesCfg({ js: `{key_expr:"js/**",volume:{id:"jsv",replicas:3}}` }),
    ]);
    // The storage works before it is measured: a value put through the router reads back.
    await httpPut(zest.url, "/js/check", TEXT_100, "text/plain");
    const check = await httpGetText(zest.url, "/js/check");
    if (!check.includes(TEXT_100))
      throw new Error(`the jetstream storage does not return the PUT value: ${check.slice(0, 200)}`);
    const target = putTarget(zest, "/js/k", cluster);
    const warmup = await fireSystem(target, { connections: CONNECTIONS, seconds: 2 });
    floor = await spawnBaseline("kv-http.mjs", [cluster.urls[0]!, KV_BUCKET, "3"], "kv-http");
    const floorTarget = putTarget(floor, "/hf/k", cluster);
    const floorWarmup = await fireSystem(floorTarget, { connections: CONNECTIONS, seconds: 2 });
    const floorRuns: SystemFigures[] = [];
    const floorRun = async (): Promise<void> => {
      floorRuns.push(await fireSystem(floorTarget, { connections: CONNECTIONS, seconds: ROUND_SECONDS }));
    };
    const zestRuns: SystemFigures[] = [];
    const kvRuns: KvRun[] = [];
    let zestMessages = 0;
    const load0 = loadavg()[0]!;
    const zestRun = async (): Promise<void> => {
      const m0 = await natsMessagesIn(cluster!);
      zestRuns.push(await fireSystem(target, { connections: CONNECTIONS, seconds: ROUND_SECONDS }));
      zestMessages += (await natsMessagesIn(cluster!)) - m0;
    };
    for (let i = 0; i < ROUNDS; i++) {
      if (i % 2 === 0) {
        await zestRun();
        kvRuns.push(await kvRun(cluster, ROUND_SECONDS));
        await floorRun();
      } else {
        await floorRun();
        kvRuns.push(await kvRun(cluster, ROUND_SECONDS));
        await zestRun();
      }
    }
    const load1 = loadavg()[0]!;
    const j = combineSystem(zestRuns);
    const hf = combineSystem(floorRuns);
    const fabric = await fabricRun(cluster);
    const kvPuts = kvRuns.reduce((s, r) => s + r.puts, 0);
    const kvSeconds = kvRuns.reduce((s, r) => s + r.seconds, 0);
    const kvPerSec = kvPuts / kvSeconds;
    // CPU per put of the baseline system: the script while measuring, the nats-servers over the
    // whole run (pro rata of the measured part, so the warm-up's puts do not count against it).
    const kvUsPerPut =
      (1e6 * kvRuns.reduce((s, r) => s + r.cpuSeconds + (r.natsSeconds * r.seconds) / r.wallSeconds, 0)) / kvPuts;
    const kvOther = Math.max(...kvRuns.map((r) => Math.max(r.otherCpuPct, r.stealPct)));
    // The stream holds zest's keys and the baseline's (every put of each on a new key).
    const kvTotal = kvRuns.reduce((s, r) => s + r.total, 0);
    const acked = j.requests + warmup.requests + 1 + kvTotal + hf.requests + floorWarmup.requests;
    const kvNatsUsPerPut = (1e6 * kvRuns.reduce((s, r) => s + r.natsSeconds, 0)) / kvTotal;
    const kvMsgsPerPut = kvRuns.reduce((s, r) => s + r.natsMessages, 0) / kvTotal;
    const zestMsgsPerPut = zestMessages / j.requests;
    const leader = await streamLeaderNode(cluster);
    const messages = await streamMessages(cluster);
    const notes = [
      ...loadNotes("zest", j),
      ...loadNotes("fabric", fabric),
      ...loadNotes("HTTP floor", hf),
      ...kvRuns.flatMap((r, i) => interferenceNotes(`@nats-io/kv run ${i + 1}`, r)),
    ];
    if (messages === undefined) notes.push(`could not read the size of stream ${STREAM}`);
    else if (messages < acked)
      notes.push(`stream ${STREAM} holds ${fmtInt(messages)} keys for ${fmtInt(acked)} acknowledged PUTs and puts`);

    const ratio = j.reqPerSec / kvPerSec;
    return {
      name: "jetstream-put",
      figures: {
        ...systemFigures("zest", j),
        zestNatsUsPerReq: j.helperUsPerReq.reduce((x, y) => x + y, 0),
        zestNatsMsgsPerPut: zestMsgsPerPut,
        kvPutsPerSec: kvPerSec,
        kvP50Ms: kvRuns.reduce((s, r) => s + r.p50Ms * r.puts, 0) / kvPuts,
        kvP99Ms: Math.max(...kvRuns.map((r) => r.p99Ms)),
        kvSystemUsPerPut: kvUsPerPut,
        kvNatsUsPerPut,
        kvNatsMsgsPerPut: kvMsgsPerPut,
        // 1: the stream leader is on the node both clients use; 2 or 3: across a route.
        streamLeaderNode: leader,
        loadAvgStart: load0,
        loadAvgEnd: load1,
        ...systemFigures("httpFloor", hf),
        httpFloorRatio: hf.reqPerSec / kvPerSec,
        zestOverHttpFloor: j.reqPerSec / hf.reqPerSec,
        ...systemFigures("fabric", fabric),
        fabricNatsUsPerReq: fabric.helperUsPerReq.reduce((x, y) => x + y, 0),
        streamMessages: messages ?? Number.NaN,
        cpuPerReqRatio: kvUsPerPut / j.systemUsPerReq,
      },
      ratio,
      target: `>= ${TARGET}x`,
      pass: ratio >= TARGET,
      summary:
        `zest HTTP PUT to a jetstream storage (R3) ${fmtInt(j.reqPerSec)} req/s / @nats-io/kv put ${fmtInt(kvPerSec)} puts/s (the floor) ` +
        `(CPU per put, client side and nats-servers: ${fmtNum(j.systemUsPerReq, 0)} µs (NATS ${fmtNum(
          j.helperUsPerReq.reduce((x, y) => x + y, 0),
          0,
        )}) / ${fmtNum(kvUsPerPut, 0)} µs = ${fmtNum(j.systemUsPerReq / kvUsPerPut, 2)}x; p99 ${fmtNum(j.p99Ms, 1)} ms / ${fmtNum(Math.max(...kvRuns.map((r) => r.p99Ms)), 1)} ms); ` +
        `HTTP floor (bare node:http + kv put) ${fmtInt(hf.reqPerSec)} req/s = ${fmtNum(hf.reqPerSec / kvPerSec, 2)}x kv, ` +
        `zest ${fmtNum(j.reqPerSec / hf.reqPerSec, 2)}x it (server CPU per PUT ${fmtNum(j.serverUserUsPerReq + j.serverSysUsPerReq, 0)} / ${fmtNum(hf.serverUserUsPerReq + hf.serverSysUsPerReq, 0)} µs); ` +
        `on a router joined to the fabric: ${fmtInt(fabric.reqPerSec)} req/s, ${fmtNum(fabric.systemUsPerReq, 0)} µs per PUT; ` +
        `messages into the nats-servers per put ${fmtNum(zestMsgsPerPut, 2)} / ${fmtNum(kvMsgsPerPut, 2)}, NATS CPU per put ` +
        `${fmtNum(
          j.helperUsPerReq.reduce((x, y) => x + y, 0),
          0,
        )} / ${fmtNum(kvNatsUsPerPut, 0)} µs; stream leader n${leader} (clients on n1); ` +
        `load average ${fmtNum(load0, 1)} to ${fmtNum(load1, 1)}`,
      interferencePct: Math.max(j.otherCpuPct, j.stealPct, kvOther, hf.otherCpuPct, hf.stealPct),
      notes,
    };
  } finally {
    await zest?.stop();
    await floor?.stop();
    await cluster?.stop();
  }
}
