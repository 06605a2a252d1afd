/**
 * jetstream volume PUT (issue 4): a real 3-node NATS cluster and one router joined to it (node 1)
 * with exactly two storages: `js/**` on the jetstream volume (a KV bucket with 3 replicas) and
 * `mem/**` on the memory volume. PUTs of 100 bytes (text/plain, autocannon, 32 connections),
 * every request on a new key (`js/k<n>`, `mem/k<n>`), alternating (warm-up, then js mem, mem js).
 * Same router, same fabric and HTTP path: only the volume differs. The nats-servers' CPU is
 * counted as the system's.
 *
 * Checks: a value put through the router reads back before the runs; after them, the bucket's
 * stream holds at least as many keys as there were acknowledged PUTs on `js/` (from the nodes'
 * monitoring endpoint `/jsz`).
 */
import { fmtInt, fmtNum } from "../lib/format.js";
import { httpGetText, httpPut } from "../lib/http.js";
import { loadNotes, type RequestSpec } from "../lib/load.js";
import { type NatsCluster, natsPids, spawnRouter, startNatsCluster } from "../lib/nats.js";
import { memory, storagesCfg } from "../lib/storages.js";
import { TEXT_100 } from "../lib/payloads.js";
import type { ServerProcess } from "../lib/proc.js";
import { compareSystems, systemFigures } from "../lib/system-load.js";
import type { BenchResult } from "../lib/types.js";

const STREAM = "KV_zest_js";

/** Messages in the bucket's stream, as its leader reports them (undefined if no node answered). */
async function streamMessages(cluster: NatsCluster): Promise<number | undefined> {
  let best: number | undefined;
  for (const node of cluster.nodes) {
    try {
      const res = await fetch(`http://127.0.0.1:${node.monitorPort}/jsz?streams=true`);
      const jsz = (await res.json()) as { account_details?: Array<{ stream_detail?: Array<{ name: string; state: { messages: number } }> }> };
      for (const acc of jsz.account_details ?? []) {
        for (const s of acc.stream_detail ?? []) if (s.name === STREAM) best = Math.max(best ?? 0, s.state.messages);
      }
    } catch {
      // that node did not answer: the others may
    }
  }
  return best;
}

export async function run(): Promise<BenchResult> {
  let cluster: NatsCluster | undefined;
  let zest: ServerProcess | undefined;
  try {
    cluster = await startNatsCluster();
    zest = await spawnRouter(
      "zest-jetstream",
      "A1",
      cluster.urls[0]!,
      storagesCfg({ js: `{key_expr:"js/**",volume:{id:"jetstream",replicas:3}}`, mem: memory("mem/**") }),
    );
    // The storage works before it is measured: a value put through the router reads back.
    await httpPut(zest.url, "/js/check", TEXT_100, "text/plain");
    const check = await httpGetText(zest.url, "/js/check");
    if (!check.includes(TEXT_100)) throw new Error(`the jetstream storage does not return the PUT value: ${check.slice(0, 200)}`);
    const nats = natsPids(cluster);
    const put = (path: string): RequestSpec => ({ path, method: "PUT", headers: { "content-type": "text/plain" }, body: TEXT_100 });
    const {
      figures: [js, mem],
      warmupRequests,
    } = await compareSystems(
      [
        { server: zest, spec: put("/js/k"), distinctKeys: true, helperPids: nats },
        { server: zest, spec: put("/mem/k"), distinctKeys: true, helperPids: nats },
      ],
      { connections: 32, warmupSeconds: 2, roundSeconds: 5, rounds: 2 },
    );
    const j = js!;
    const m = mem!;
    const acked = j.requests + warmupRequests[0]!;
    const messages = await streamMessages(cluster);
    const notes = [...loadNotes("jetstream", j), ...loadNotes("memory", m)];
    if (messages === undefined) notes.push(`could not read the size of stream ${STREAM}`);
    else if (messages < acked) notes.push(`stream ${STREAM} holds ${fmtInt(messages)} keys for ${fmtInt(acked)} acknowledged PUTs`);

    const ratio = j.reqPerSec / m.reqPerSec;
    return {
      name: "jetstream-put",
      figures: {
        ...systemFigures("jetstream", j),
        ...systemFigures("memory", m),
        jetstreamNatsUsPerReq: j.helperUsPerReq.reduce((x, y) => x + y, 0),
        streamMessages: messages ?? Number.NaN,
        cpuPerReqRatio: m.systemUsPerReq / j.systemUsPerReq,
      },
      ratio,
      target: "report",
      summary:
        `jetstream (R3) ${fmtInt(j.reqPerSec)} req/s / memory ${fmtInt(m.reqPerSec)} req/s ` +
        `(CPU per PUT, router and nats-servers: ${fmtNum(j.systemUsPerReq, 0)} µs / ${fmtNum(m.systemUsPerReq, 0)} µs; p99 ${fmtNum(j.p99Ms, 1)} ms / ${fmtNum(m.p99Ms, 1)} ms)`,
      interferencePct: Math.max(j.otherCpuPct, j.stealPct, m.otherCpuPct, m.stealPct),
      notes,
    };
  } finally {
    await zest?.stop();
    await cluster?.stop();
  }
}
