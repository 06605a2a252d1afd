/**
 * How cost grows (issue 12), along three dimensions, each against its own smallest step:
 *
 * - **Keys**: one router (read cache off, `cache_entries: 0`) grown to 1,000, 10,000, 100,000
 *   and 1,000,000 keys of 100 B. At each step: req/s of a GET of one key, and of 100-byte PUTs
 *   overwriting keys scattered over the whole set (so the count stays put and every write
 *   touches a different part of the index), 32 connections; and the RSS after a forced GC. The
 *   keys are put from inside the router by a plugin (`workers/growth-fill.mjs`, through the
 *   `session.put` a REST PUT calls): over HTTP, 1,000,000 PUTs take minutes on this machine.
 *   Ratio: GET req/s at the largest step over 1,000 keys.
 * - **SSE subscribers**: the `sse` fan-out (suites/sse.ts: 50 PUTs/s on one key, subscribers on
 *   its key expression, latency from each put's send time to each event's arrival) with 1, 10,
 *   100 and 1,000 subscribers, 5 s each. Ratio: p99 at 1,000 over p99 at 1.
 * - **Routers**: 1, 2 and 3 routers joined over a 3-node NATS cluster (router i on node i), the
 *   key space split into one partition per router (`gr/<i>/**`, a memory storage on router i),
 *   the load spread over the routers (32 connections in all) and each router's requests spread
 *   over every partition, so (n-1)/n of them cross the fabric. PUT 100 B, then GET, over 100
 *   keys per partition. Ratio: aggregate PUT req/s with 3 routers over 1.
 *
 * Every step also reports the CPU per request (per PUT for SSE, with the kernel's share; for the
 * routers, of every router and nats-server): unlike req/s it stays comparable across steps when
 * neighbours take CPU. The suite returns three Markdown tables (`markdown`), which the runner
 * appends to latest.md for the README's "How cost grows".
 *
 * `BENCH_GROWTH_MAX_KEYS` caps the key steps (e.g. 100000 while developing).
 */
import { join } from "node:path";
import { fmtInt, fmtMs, fmtNum, fmtRatio } from "../lib/format.js";
import { httpGetText, httpPut } from "../lib/http.js";
import {
  compare,
  type LoadFigures,
  loadFigures,
  loadNotes,
  type OutgoingRequest,
  type RequestSpec,
} from "../lib/load.js";
import {
  type NatsCluster,
  natsMessagesIn,
  natsPids,
  spawnRouter,
  startNatsCluster,
  waitRoutersMeet,
} from "../lib/nats.js";
import { TEXT_100 } from "../lib/payloads.js";
import { BENCH_DIR, interferenceNotes, type ServerProcess, spawnZest } from "../lib/proc.js";
import { memory, storagesCfg } from "../lib/storages.js";
import { fireSpread, type SpreadFigures, waitUntil } from "../lib/system-load.js";
import type { BenchResult } from "../lib/types.js";
import { fanOut, RATE } from "./sse.js";

const KEY_STEPS = [1_000, 10_000, 100_000, 1_000_000].filter(
  (n) => n <= Number(process.env.BENCH_GROWTH_MAX_KEYS ?? Number.POSITIVE_INFINITY),
);
const SUBSCRIBER_STEPS = [1, 10, 100, 1_000];
const ROUTER_STEPS = [1, 2, 3];
/** Router ids (hex, as `--id` wants; upper case, as the fabric lists them), one per NATS node. */
const ROUTER_IDS = ["A1", "B2", "C3"];
const SSE_SECONDS = 5;
const KEYS_PER_PARTITION = 100;
/** Scatters a counter over a key range: prime, so it visits every key of a 10^k range. */
const STRIDE = 7919;
const PUT_HEADERS = { "content-type": "text/plain" };
const FILL_PLUGIN = join(BENCH_DIR, "workers", "growth-fill.mjs");

/** What one step of a dimension measured, for the summary and the README table. */
interface Step {
  label: string;
  cells: Record<string, string>;
}

/** The figures, notes and table rows a dimension contributes. */
interface Part {
  figures: Record<string, number>;
  notes: string[];
  interference: number;
  steps: Step[];
  table: string;
}

export async function run(): Promise<BenchResult> {
  const keys = await keysPart();
  const sse = await ssePart();
  const routers = await routersPart();
  const parts = [keys, sse, routers];
  const f = { ...keys.figures, ...sse.figures, ...routers.figures };
  const lastKeys = KEY_STEPS[KEY_STEPS.length - 1]!;
  return {
    name: "growth",
    figures: f,
    target: "report",
    summary:
      `GET (cache off) ${fmtInt(f.keys1000GetReqPerSec!)} → ${fmtInt(f[`keys${lastKeys}GetReqPerSec`]!)} req/s from 1,000 to ${fmtInt(lastKeys)} keys (${fmtRatio(f.keysGetRatio!)}, RSS ${fmtInt(f.keys1000RssMb!)} → ${fmtInt(f[`keys${lastKeys}RssMb`]!)} MB); ` +
      `SSE p99 ${fmtMs(f.sse1P99Ms!)} → ${fmtMs(f.sse1000P99Ms!)} from 1 to 1,000 subscribers (${fmtRatio(f.sseP99Ratio!)}); ` +
      `PUT ${fmtInt(f.routers1PutReqPerSec!)} → ${fmtInt(f.routers3PutReqPerSec!)} req/s from 1 to 3 routers (${fmtRatio(f.routersPutRatio!)})`,
    interferencePct: Math.max(...parts.map((p) => p.interference)),
    notes: parts.flatMap((p) => p.notes),
    markdown: parts.map((p) => p.table).join("\n"),
  };
}

/** Keys: one router grown step by step; GET one key and scattered PUTs at each step. */
async function keysPart(): Promise<Part> {
  const zest = await spawnZest(
    "zest-growth-keys",
    ["--cfg", "plugins/rest/cache_entries:0", "-P", FILL_PLUGIN],
    ["--expose-gc"],
  );
  const part = emptyPart();
  try {
    for (const n of KEY_STEPS) {
      const { rssMb, fillSeconds } = await fillTo(zest, n);
      const get: RequestSpec = { path: "/bench/growth/k/500" };
      const [g, p] = await compare(
        [
          { server: zest, spec: get },
          { server: zest, spec: scatteredPuts(n) },
        ],
        // The first step also warms the JIT up: measured cold, 1,000 keys came out 2x slower
        // per request than 10,000 on the same router, flattering every later step.
        { connections: 32, warmupSeconds: n === KEY_STEPS[0] ? 4 : 1, roundSeconds: 2, rounds: 2 },
      );
      Object.assign(part.figures, loadFigures(`keys${n}Get`, g!), loadFigures(`keys${n}Put`, p!), {
        [`keys${n}RssMb`]: rssMb,
        [`keys${n}FillSeconds`]: fillSeconds,
      });
      addLoadNotes(part, `${fmtInt(n)} keys GET`, g!);
      addLoadNotes(part, `${fmtInt(n)} keys PUT`, p!);
      part.steps.push({
        label: fmtInt(n),
        cells: {
          get: `${fmtInt(g!.reqPerSec)} req/s`,
          put: `${fmtInt(p!.reqPerSec)} req/s`,
          rss: `${fmtInt(rssMb)} MB`,
          cpu: `${fmtInt(g!.serverUserUsPerReq + g!.serverSysUsPerReq)} / ${fmtInt(p!.serverUserUsPerReq + p!.serverSysUsPerReq)} µs`,
        },
      });
    }
  } finally {
    await zest.stop();
  }
  const first = KEY_STEPS[0]!;
  const last = KEY_STEPS[KEY_STEPS.length - 1]!;
  const fig = part.figures;
  fig.keysGetRatio = fig[`keys${last}GetReqPerSec`]! / fig[`keys${first}GetReqPerSec`]!;
  fig.keysPutRatio = fig[`keys${last}PutReqPerSec`]! / fig[`keys${first}PutReqPerSec`]!;
  fig.keysRssRatio = fig[`keys${last}RssMb`]! / fig[`keys${first}RssMb`]!;
  // CPU per request holds up better than req/s when neighbours share the machine.
  const cpuPer = (n: number, kind: string): number =>
    fig[`keys${n}${kind}UserUsPerReq`]! + fig[`keys${n}${kind}SysUsPerReq`]!;
  fig.keysGetCpuPerReqRatio = cpuPer(last, "Get") / cpuPer(first, "Get");
  fig.keysPutCpuPerReqRatio = cpuPer(last, "Put") / cpuPer(first, "Put");
  part.table = table(
    "keys of 100 B in one memory storage",
    part.steps,
    [
      ["get", "GET one key, read cache off", fmtRatio(fig.keysGetRatio)],
      ["put", "PUT 100 B, scattered over the keys", fmtRatio(fig.keysPutRatio)],
      [
        "cpu",
        "router CPU per GET / per PUT",
        `${fmtRatio(fig.keysGetCpuPerReqRatio)} / ${fmtRatio(fig.keysPutCpuPerReqRatio)}`,
      ],
      ["rss", "RSS after GC", fmtRatio(fig.keysRssRatio)],
    ],
    `${fmtInt(last)} / ${fmtInt(first)}`,
  );
  return part;
}

/** Asks the fill plugin for `n` keys and waits for its report (RSS after GC, fill time). */
async function fillTo(zest: ServerProcess, n: number): Promise<{ rssMb: number; fillSeconds: number }> {
  await httpPut(zest.url, "/bench/growth/fill", String(n), "text/plain");
  let report: string[] = [];
  await waitUntil(
    async () => {
      const entries = JSON.parse(await httpGetText(zest.url, "/bench/growth/filled")) as Array<{ value: string }>;
      report = (entries[0]?.value ?? "").split(" ");
      return Number(report[0]) === n;
    },
    180_000,
    `the router to hold ${fmtInt(n)} keys`,
  );
  return { rssMb: Number(report[1]) / 2 ** 20, fillSeconds: Number(report[2]) };
}

/** 100-byte PUTs overwriting keys scattered over `k/0` .. `k/<n-1>` (one counter per spec). */
function scatteredPuts(n: number): RequestSpec {
  let i = 0;
  return {
    path: "/bench/growth/k/0",
    method: "PUT",
    headers: PUT_HEADERS,
    body: TEXT_100,
    setupRequest: (req: OutgoingRequest): OutgoingRequest => ({
      ...req,
      path: `/bench/growth/k/${(i++ * STRIDE) % n}`,
    }),
  };
}

/** SSE subscribers: the `sse` fan-out once per subscriber count, each on a fresh router. */
async function ssePart(): Promise<Part> {
  const part = emptyPart();
  for (const n of SUBSCRIBER_STEPS) {
    const r = await fanOut(`zest-growth-sse-${n}`, [], SSE_SECONDS, n);
    const s = r.figures;
    // Per PUT rather than per event: with few subscribers the PUT's own handling dominates.
    const perPut = s.delivered! / s.puts!;
    const routerUsPerPut = (s.zestUserUsPerEvent! + s.zestSysUsPerEvent!) * perPut;
    Object.assign(part.figures, {
      [`sse${n}P50Ms`]: s.p50Ms!,
      [`sse${n}P99Ms`]: s.p99Ms!,
      [`sse${n}MaxMs`]: s.maxMs!,
      [`sse${n}Lost`]: s.lost!,
      [`sse${n}ZestCpuPct`]: s.zestCpuPct!,
      [`sse${n}ZestUserUsPerEvent`]: s.zestUserUsPerEvent!,
      [`sse${n}ZestSysUsPerEvent`]: s.zestSysUsPerEvent!,
      [`sse${n}BenchCpuPct`]: s.benchCpuPct!,
      [`sse${n}BenchUsPerEvent`]: s.benchUsPerEvent!,
      [`sse${n}ZestUsPerPut`]: routerUsPerPut,
      [`sse${n}ZestSysShare`]: s.zestSysUsPerEvent! / (s.zestUserUsPerEvent! + s.zestSysUsPerEvent!),
      [`sse${n}BenchUsPerPut`]: s.benchUsPerEvent! * perPut,
      [`sse${n}BenchLoopDelayP99Ms`]: s.benchLoopDelayP99Ms!,
    });
    part.notes.push(...(r.notes ?? []).map((note) => `${fmtInt(n)} subscribers: ${note}`));
    part.interference = Math.max(part.interference, r.interferencePct ?? 0);
    part.steps.push({
      label: fmtInt(n),
      cells: {
        p50: fmtMs(s.p50Ms!),
        p99: fmtMs(s.p99Ms!),
        cpu: `${fmtNum(routerUsPerPut / 1000, 1)} / ${fmtNum((s.benchUsPerEvent! * perPut) / 1000, 1)} ms`,
        sys: `${fmtInt((100 * s.zestSysUsPerEvent!) / (s.zestUserUsPerEvent! + s.zestSysUsPerEvent!))}%`,
      },
    });
  }
  const fig = part.figures;
  fig.sseP99Ratio = fig.sse1000P99Ms! / fig.sse1P99Ms!;
  fig.sseP50Ratio = fig.sse1000P50Ms! / fig.sse1P50Ms!;
  fig.sseRouterUsPerPutRatio = fig.sse1000ZestUsPerPut! / fig.sse1ZestUsPerPut!;
  part.table = table(
    `SSE subscribers on one key expression, ${RATE} PUTs/s`,
    part.steps,
    [
      ["p50", "put-to-event p50", fmtRatio(fig.sseP50Ratio)],
      ["p99", "put-to-event p99", fmtRatio(fig.sseP99Ratio)],
      ["cpu", "CPU per PUT: router / subscribers' process", `${fmtRatio(fig.sseRouterUsPerPutRatio)} (router)`],
      ["sys", "kernel share of the router's CPU", "—"],
    ],
    "1,000 / 1",
  );
  return part;
}

/** Routers: 1, 2 and 3 routers on one NATS cluster, the load and the keys spread over them. */
async function routersPart(): Promise<Part> {
  const part = emptyPart();
  let cluster: NatsCluster | undefined;
  try {
    cluster = await startNatsCluster();
    for (const n of ROUTER_STEPS) {
      const { put, get } = await measureRouters(cluster, n);
      Object.assign(part.figures, spreadFigures(`routers${n}Put`, put), spreadFigures(`routers${n}Get`, get));
      for (const [label, f] of [
        ["PUT", put],
        ["GET", get],
      ] as const)
        addSpreadNotes(part, `${n} router(s) ${label}`, f);
      part.steps.push({
        label: String(n),
        cells: {
          put: `${fmtInt(put.reqPerSec)} req/s`,
          get: `${fmtInt(get.reqPerSec)} req/s`,
          cpu: `${fmtInt(put.systemUsPerReq)} / ${fmtInt(get.systemUsPerReq)} µs`,
          nats: `${fmtInt(put.helpersUsPerReq)} / ${fmtInt(get.helpersUsPerReq)} µs`,
        },
      });
    }
  } finally {
    await cluster?.stop();
  }
  const fig = part.figures;
  fig.routersPutRatio = fig.routers3PutReqPerSec! / fig.routers1PutReqPerSec!;
  fig.routersGetRatio = fig.routers3GetReqPerSec! / fig.routers1GetReqPerSec!;
  fig.routersPutCpuPerReqRatio = fig.routers3PutSystemUsPerReq! / fig.routers1PutSystemUsPerReq!;
  fig.routersGetCpuPerReqRatio = fig.routers3GetSystemUsPerReq! / fig.routers1GetSystemUsPerReq!;
  part.table = table(
    "routers on a 3-node NATS cluster, one partition each",
    part.steps,
    [
      ["put", "PUT 100 B, all routers together", fmtRatio(fig.routersPutRatio)],
      ["get", "GET one key, all routers together", fmtRatio(fig.routersGetRatio)],
      [
        "cpu",
        "CPU per PUT / per GET, every router and nats-server",
        `${fmtRatio(fig.routersPutCpuPerReqRatio)} / ${fmtRatio(fig.routersGetCpuPerReqRatio)}`,
      ],
      ["nats", "of which the nats-servers, per PUT / per GET", "—"],
    ],
    "3 / 1",
  );
  return part;
}

/**
 * Starts `n` routers (router i owns `gr/<i>/**`), checks each reaches every partition, measures,
 * stops them. Also used by suites/nats-routers.ts.
 */
export async function measureRouters(
  cluster: NatsCluster,
  n: number,
): Promise<{ put: SpreadFigures; get: SpreadFigures; putNatsMsgs: number; getNatsMsgs: number }> {
  const routers: ServerProcess[] = [];
  try {
    // Every router that started is stopped below, also when another failed to start.
    const started = await Promise.allSettled(
      ROUTER_IDS.slice(0, n).map((id, i) =>
        spawnRouter(`zest-growth-r${i}`, id, cluster.urls[i]!, storagesCfg({ [`p${i}`]: memory(`gr/${i}/**`) })),
      ),
    );
    for (const r of started) if (r.status === "fulfilled") routers.push(r.value);
    const failed = started.find((r) => r.status === "rejected");
    if (failed) throw failed.reason;
    if (n > 1) await waitRoutersMeet(routers.map((server, i) => ({ server, id: ROUTER_IDS[i]! })));
    await fillPartitions(routers);
    const nats = natsPids(cluster);
    const opts = { connections: 32, seconds: 1 };
    const spread = (kind: "GET" | "PUT"): Array<{ server: ServerProcess; spec: RequestSpec }> =>
      routers.map((server, i) => ({ server, spec: partitionSpec(kind, n, i) }));
    await warmUp(spread("PUT"), nats, opts);
    const m0 = await natsMessagesIn(cluster);
    const put = await fireSpread(spread("PUT"), nats, { ...opts, seconds: 4 });
    const m1 = await natsMessagesIn(cluster);
    await warmUp(spread("GET"), nats, opts);
    const m2 = await natsMessagesIn(cluster);
    const get = await fireSpread(spread("GET"), nats, { ...opts, seconds: 4 });
    const m3 = await natsMessagesIn(cluster);
    // NATS messages per request (heartbeats and the nats-servers' own traffic included).
    return { put, get, putNatsMsgs: (m1 - m0) / put.requests, getNatsMsgs: (m3 - m2) / get.requests };
  } finally {
    await Promise.all(routers.map((r) => r.stop()));
  }
}

/**
 * Requests each router serves before a measured window, about what the one router of the first
 * step serves in one second. A router's code reaches V8's optimizing tier after so many requests,
 * not after so much time: with n routers each serves 1/n of the load, so a warm-up of one second
 * left three routers measured while V8 was still compiling them (issue 38: 2-3 times the CPU per
 * PUT of the same routers a few seconds later).
 */
const WARM_REQUESTS_PER_ROUTER = 10_000;
/** The warm-up stops after this long even when a slow host has not served that many. */
const WARM_MAX_SECONDS = 30;

/** Fires `targets` one second at a time until every router served `WARM_REQUESTS_PER_ROUTER`. */
async function warmUp(
  targets: Array<{ server: ServerProcess; spec: RequestSpec }>,
  nats: number[],
  opts: { connections: number; seconds: number },
): Promise<void> {
  const served = targets.map(() => 0);
  for (let s = 0; s < WARM_MAX_SECONDS && Math.min(...served) < WARM_REQUESTS_PER_ROUTER; s += opts.seconds) {
    const f = await fireSpread(targets, nats, opts);
    for (const [i, r] of f.perServerReqPerSec.entries()) served[i]! += r * opts.seconds;
  }
}

/**
 * Puts the GET keys in every partition through every router in turn, and waits until a PUT
 * through each router lands in each partition's storage: a router forwards a write to a remote
 * storage only once the storage's declaration has reached it.
 */
export async function fillPartitions(routers: ServerProcess[]): Promise<void> {
  let probe = 0;
  for (const [i, via] of routers.entries()) {
    for (const [p, owner] of routers.entries()) {
      await waitUntil(
        async () => {
          const v = `probe-${++probe}`;
          await httpPut(via.url, `/gr/${p}/probe`, v, "text/plain");
          return (await httpGetText(owner.url, `/gr/${p}/probe`)).includes(v);
        },
        10_000,
        `a PUT through router ${i} to reach partition ${p}`,
      );
    }
  }
  for (const [p, owner] of routers.entries())
    for (let k = 0; k < KEYS_PER_PARTITION; k++) await httpPut(owner.url, `/gr/${p}/k${k}`, TEXT_100, "text/plain");
}

/** Requests of router `i` of `n`: keys taken in turn from every partition, so most cross the fabric. */
export function partitionSpec(kind: "GET" | "PUT", n: number, i: number): RequestSpec {
  let c = i; // routers start on different partitions
  const path = (): string => {
    const k = c++;
    return `/gr/${k % n}/k${Math.floor(k / n) % KEYS_PER_PARTITION}`;
  };
  const base = kind === "PUT" ? { method: "PUT" as const, headers: PUT_HEADERS, body: TEXT_100 } : {};
  return {
    path: "/gr/0/k0",
    ...base,
    setupRequest: (req: OutgoingRequest): OutgoingRequest => ({ ...req, path: path() }),
  };
}

export function spreadFigures(prefix: string, f: SpreadFigures): Record<string, number> {
  return {
    [`${prefix}ReqPerSec`]: f.reqPerSec,
    [`${prefix}P50Ms`]: f.p50Ms,
    [`${prefix}P99Ms`]: f.p99Ms,
    [`${prefix}Requests`]: f.requests,
    [`${prefix}SystemCpuPct`]: f.systemCpuPct,
    [`${prefix}SystemUsPerReq`]: f.systemUsPerReq,
    [`${prefix}NatsUsPerReq`]: f.helpersUsPerReq,
    [`${prefix}LoadgenCpuPct`]: f.loadgenCpuPct,
    [`${prefix}OtherCpuPct`]: f.otherCpuPct,
    ...Object.fromEntries(f.perServerReqPerSec.map((r, i) => [`${prefix}Router${i}ReqPerSec`, r])),
  };
}

function emptyPart(): Part {
  return { figures: {}, notes: [], interference: 0, steps: [], table: "" };
}

function addLoadNotes(part: Part, label: string, f: LoadFigures): void {
  part.notes.push(...loadNotes(label, f));
  part.interference = Math.max(part.interference, f.otherCpuPct, f.stealPct);
}

function addSpreadNotes(part: Part, label: string, f: SpreadFigures): void {
  if (f.errors > 0 || f.non2xx > 0)
    part.notes.push(`${label}: ${f.errors} connection errors and ${f.non2xx} non-2xx responses (only 2xx are counted)`);
  part.notes.push(...interferenceNotes(label, f));
  part.interference = Math.max(part.interference, f.otherCpuPct, f.stealPct);
}

/** A Markdown table: one column per step, one row per measured quantity, the ratio last. */
function table(
  head: string,
  steps: Step[],
  rows: Array<[key: string, label: string, ratio: string]>,
  ratioHead: string,
): string {
  const out = [
    `| ${head} | ${steps.map((s) => s.label).join(" | ")} | ${ratioHead} |`,
    `|---|${steps.map(() => "---|").join("")}---|`,
  ];
  for (const [key, label, ratio] of rows)
    out.push(`| ${label} | ${steps.map((s) => s.cells[key] ?? "—").join(" | ")} | ${ratio} |`);
  return `${out.join("\n")}\n`;
}
