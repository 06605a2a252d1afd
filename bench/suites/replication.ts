/**
 * Replication (issue 26), on one nats-server and two routers, A joined to it directly and B
 * through a TCP proxy the benchmark cuts and heals (`test/support/tcp-proxy.ts`); each holds a
 * memory storage on `r/**` with replication at its defaults (interval 10 s, 5 sub-intervals,
 * hot 6, warm 30). Keys are written from inside A by a plugin (`workers/repl-writer.mjs`).
 *
 * 1. **Convergence**: 100,000 keys written through A (B takes them as they come); B is cut off
 *    for 30 s, during which A changes 5,000 keys and deletes 5,000 (10%); then the link heals.
 *    Measured: from the heal until both replicas show the same log fingerprint and B no longer
 *    says it is behind (polled every 50 ms). Target ≤ 2 s.
 * 2. **Idle traffic**: then 30 s without writes. Measured: the alignment payload bytes B sent
 *    and received (its replication status), plus an estimated 120 bytes of NATS and fabric
 *    framing per message; the whole link's bytes (heartbeats included) are reported beside.
 *    Target ≤ 1 KB/s per storage pair.
 * 3. **PUT throughput**, replication on vs off: PUTs of 100 bytes through A on `r/put` (B's
 *    replica acknowledges each), against a second pair C, D whose storages on `p/**` have
 *    `replication: false` (D also behind a proxy, never cut, like B). Measured first, before
 *    the fill, so that both pairs hold one key. Alternating rounds as `nats-put`. Target ≥ 0.95×.
 */
import { join } from "node:path";
import { startTcpProxy, type TcpProxy } from "../../test/support/tcp-proxy.js";
import { fmtInt, fmtNum } from "../lib/format.js";
import { httpPut } from "../lib/http.js";
import { loadNotes, PAIRED_ROUNDS, pairedRatio, type RequestSpec, roundsNote } from "../lib/load.js";
import { type NatsCluster, natsPids, spawnRouter, startNatsCluster, waitRoutersMeet } from "../lib/nats.js";
import { BENCH_DIR, type ServerProcess } from "../lib/proc.js";
import { storagesCfg } from "../lib/storages.js";
import { compareSystems, systemFigures, waitUntil } from "../lib/system-load.js";
import type { BenchResult } from "../lib/types.js";
import { textPut } from "../lib/put-pair.js";

const KEYS = Number(process.env.BENCH_REPL_KEYS ?? 100_000);
const PARTITION_S = Number(process.env.BENCH_REPL_PARTITION_S ?? 30);
const IDLE_S = Number(process.env.BENCH_REPL_IDLE_S ?? 30);
const CONVERGE_TARGET_S = 2;
const IDLE_TARGET_BPS = 1024;
const PUT_TARGET = 0.95;
/** Estimated NATS protocol line, subjects and fabric envelope of one alignment message. */
const FRAMING_BYTES = 120;
const WRITER = join(BENCH_DIR, "workers", "repl-writer.mjs");
/** Shorter fabric timings, so that A forgets B within the partition. */
const TIMINGS = [
  "--cfg",
  "fabric/nats/peer_timeout_ms:2000",
  "--cfg",
  "fabric/nats/ack_timeout_ms:3000",
  "--cfg",
  "fabric/nats/reconnect_time_wait_ms:100",
];

interface Health {
  behind: boolean;
  keys_repaired: number;
  traffic: { messages_sent: number; bytes_sent: number; messages_received: number; bytes_received: number };
  log: { keys: number; tombstones: number; fingerprint: string };
}

async function health(server: ServerProcess, storage: string): Promise<Health> {
  const res = await fetch(`${server.url}/@/router/local/status/plugins/storage_manager/replication/${storage}`);
  const entries = (await res.json()) as Array<{ value: Health }>;
  if (!entries[0]) throw new Error(`no replication status for ${storage} at ${server.url}`);
  return entries[0].value;
}

async function routers(server: ServerProcess): Promise<string[]> {
  const res = await fetch(`${server.url}/@/router/local`);
  const entries = (await res.json()) as Array<{
    value: { fabric: { connected: boolean; detail: { routers: string[] } } };
  }>;
  return entries[0]!.value.fabric.detail.routers;
}

async function connected(server: ServerProcess): Promise<boolean> {
  const res = await fetch(`${server.url}/@/router/local`);
  const entries = (await res.json()) as Array<{ value: { fabric: { connected: boolean } } }>;
  return entries[0]!.value.fabric.connected;
}

/** Runs one writer job on A and waits for it. */
async function job(a: ServerProcess, body: Record<string, unknown>): Promise<number> {
  const state = async (): Promise<{ jobs: number; seconds: number }> => {
    const res = await fetch(`${a.url}/bench/repl/state`);
    const entries = (await res.json()) as Array<{ value: { jobs: number; seconds: number } }>;
    return entries[0]!.value;
  };
  const before = (await state()).jobs;
  await httpPut(a.url, "/bench/repl/cmd", JSON.stringify(body), "application/json");
  let seconds = 0;
  await waitUntil(
    async () => {
      const s = await state();
      seconds = s.seconds;
      return s.jobs > before;
    },
    300_000,
    `writer job ${JSON.stringify(body)}`,
  );
  return seconds;
}

async function same(a: ServerProcess, b: ServerProcess): Promise<boolean> {
  const [ha, hb] = await Promise.all([health(a, "r"), health(b, "r")]);
  return !hb.behind && !ha.behind && ha.log.fingerprint === hb.log.fingerprint;
}

export async function run(): Promise<BenchResult> {
  let cluster: NatsCluster | undefined;
  let proxy: TcpProxy | undefined;
  let proxyD: TcpProxy | undefined;
  const servers: ServerProcess[] = [];
  try {
    cluster = await startNatsCluster({ size: 1, jetstream: false });
    proxy = await startTcpProxy(Number(new URL(cluster.urls[0]!).port));
    // D reaches NATS through a proxy too (never cut), so both pairs of the PUT comparison have the same path.
    proxyD = await startTcpProxy(Number(new URL(cluster.urls[0]!).port));
    const on = storagesCfg({ r: `{key_expr:"r/**",volume:"memory"}` });
    const off = storagesCfg({ p: `{key_expr:"p/**",volume:"memory",replication:false}` });
    const [a, b, c, d] = await Promise.all([
      spawnRouter("repl-a", "A1", cluster.urls[0]!, [...TIMINGS, ...on, "-P", WRITER]),
      spawnRouter("repl-b", "B2", proxy.url, [...TIMINGS, ...on]),
      spawnRouter("repl-c", "C3", cluster.urls[0]!, [...TIMINGS, ...off]),
      spawnRouter("repl-d", "D4", proxyD.url, [...TIMINGS, ...off]),
    ]);
    servers.push(a!, b!, c!, d!);
    await waitRoutersMeet([
      { server: a!, id: "A1" },
      { server: b!, id: "B2" },
      { server: c!, id: "C3" },
      { server: d!, id: "D4" },
    ]);
    const notes: string[] = [];

    // 3. PUT throughput, replication on vs off: measured first, while both pairs hold no other keys.
    const specOn: RequestSpec = textPut("/r/put");
    const specOff: RequestSpec = { ...specOn, path: "/p/put" };
    const nats = natsPids(cluster);
    const {
      figures: [fOn, fOff],
    } = await compareSystems(
      [
        { server: a!, spec: specOn, helperPids: [b!.pid, ...nats] },
        { server: c!, spec: specOff, helperPids: [d!.pid, ...nats] },
      ],
      PAIRED_ROUNDS,
    );
    const putRatio = pairedRatio(fOn!, fOff!);
    notes.push(...loadNotes("replication on", fOn!), ...loadNotes("replication off", fOff!));

    // 1. Convergence after a partition.
    const fillSeconds = await job(a!, { op: "fill", n: KEYS });
    await waitUntil(() => same(a!, b!), 60_000, "B to hold the filled keys");
    const cutAt = performance.now();
    proxy.cut();
    await waitUntil(async () => !(await routers(a!)).includes("B2"), 10_000, "A to forget B");
    const churnSeconds = await job(a!, { op: "churn", change: KEYS / 20, delete: KEYS / 20 });
    const waitMs = PARTITION_S * 1000 - (performance.now() - cutAt);
    if (waitMs > 0) await new Promise((r) => setTimeout(r, waitMs));
    const behindDuringCut = (await health(b!, "r")).behind;
    const repairedBefore = (await health(b!, "r")).keys_repaired;
    const healAt = performance.now();
    proxy.heal();
    let reconnectMs = 0;
    await waitUntil(
      async () => {
        if (reconnectMs === 0 && (await connected(b!))) reconnectMs = performance.now() - healAt;
        return same(a!, b!);
      },
      60_000,
      "the replicas to converge",
    );
    const convergeS = (performance.now() - healAt) / 1000;
    const repaired = (await health(b!, "r")).keys_repaired - repairedBefore;
    if (!behindDuringCut) notes.push("B did not say it was behind during the partition");

    // 2. Idle traffic.
    const t0 = await health(b!, "r");
    const link0 = proxy.bytes;
    const idleStart = performance.now();
    await new Promise((r) => setTimeout(r, IDLE_S * 1000));
    const idleSeconds = (performance.now() - idleStart) / 1000;
    const t1 = await health(b!, "r");
    const payload =
      t1.traffic.bytes_sent + t1.traffic.bytes_received - t0.traffic.bytes_sent - t0.traffic.bytes_received;
    const messages =
      t1.traffic.messages_sent + t1.traffic.messages_received - t0.traffic.messages_sent - t0.traffic.messages_received;
    const idleBps = (payload + messages * FRAMING_BYTES) / idleSeconds;
    const linkBps = (proxy.bytes - link0) / idleSeconds;

    const pass = convergeS <= CONVERGE_TARGET_S && idleBps <= IDLE_TARGET_BPS && putRatio >= PUT_TARGET;
    return {
      name: "replication",
      figures: {
        keys: KEYS,
        fillSeconds,
        churnSeconds,
        partitionSeconds: PARTITION_S,
        reconnectMs,
        convergeSeconds: convergeS,
        keysRepaired: repaired,
        idleSeconds,
        idlePayloadBytes: payload,
        idleMessages: messages,
        idleBytesPerSec: idleBps,
        idleLinkBytesPerSec: linkBps,
        putRatio,
        ...systemFigures("replOn", fOn!),
        ...systemFigures("replOff", fOff!),
      },
      ratio: putRatio,
      target: `converge <= ${CONVERGE_TARGET_S} s, idle <= ${IDLE_TARGET_BPS} B/s, PUT >= ${PUT_TARGET}x`,
      pass,
      summary:
        `converged ${fmtNum(convergeS, 2)} s after a ${PARTITION_S} s partition (${fmtInt(KEYS)} keys, ${fmtInt(repaired)} repaired, reconnect ${fmtInt(reconnectMs)} ms); ` +
        `idle ${fmtNum(idleBps, 0)} B/s per pair (${fmtInt(messages)} messages, ${fmtInt(payload)} payload bytes in ${fmtNum(idleSeconds, 0)} s; whole link with heartbeats ${fmtNum(linkBps, 0)} B/s); ` +
        `PUT replication on ${fmtInt(fOn!.reqPerSec)} req/s / off ${fmtInt(fOff!.reqPerSec)} req/s = ${fmtNum(putRatio, 2)}x (${roundsNote(fOn!, fOff!)})`,
      interferencePct: Math.max(fOn!.otherCpuPct, fOn!.stealPct, fOff!.otherCpuPct, fOff!.stealPct),
      notes,
    };
  } finally {
    await Promise.all(servers.map((z) => z.stop()));
    await proxy?.close();
    await proxyD?.close();
    await cluster?.stop();
  }
}
