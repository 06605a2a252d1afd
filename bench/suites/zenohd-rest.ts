/**
 * zest's REST gateway beside zenohd's REST plugin (issue 35): zenohd with `zenoh-plugin-rest`
 * and the storage manager (a memory storage on `demo/**`) linked statically, built from
 * crates.io by the project's own crate (interop/rust, binary `zenohd-rest`), against zest with
 * its defaults and zest with its read cache off (`plugins/rest/cache_entries: 0`), given the
 * same requests by the same load generator in alternation: GET of one key (60 bytes of JSON),
 * GET of `demo/**` over 1,000 keys, PUT of 100 bytes, and SSE delivery (one SSE client on
 * `demo/sse/**`, HTTP PUTs at 200 a second, the time from each PUT to its event). Each ratio is
 * zest's over zenohd's (for SSE, zenohd's p99 over zest's): ≥ 1.0× means zest does as well.
 *
 * The binary takes tens of minutes to build, so `npm test` does not; when it is missing this
 * benchmark says how to build it and skips. zenohd is a zenoh router: it runs in a loopback-only
 * namespace, as every zenoh program here (bench/lib/zenoh.ts).
 */
import http from "node:http";
import { homedir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { executable } from "../../test/support/child-processes.js";
import { freePorts } from "../../test/support/nats-cluster.js";
import { fmtInt, fmtMs, fmtRatio } from "../lib/format.js";
import { httpGetText, httpPut } from "../lib/http.js";
import { compare, type LoadFigures, loadFigures, loadNotes, PAIRED_ROUNDS, pairedRatio } from "../lib/load.js";
import { JSON_60, TEXT_100 } from "../lib/payloads.js";
import { openSseStream, paced } from "../lib/sse-stream.js";
import {
  interferenceNotes,
  type ServerProcess,
  spawnBaseline,
  spawnReady,
  spawnZest,
  startInterference,
} from "../lib/proc.js";
import type { BenchResult } from "../lib/types.js";
import { freeLocator, inLoopbackNamespace, percentile } from "../lib/zenoh.js";

/** Where `npm run test:rust` builds the binary (scripts/test-rust.sh). */
const ZENOHD_REST = join(
  process.env.ZEST_CARGO_TARGET || join(homedir(), ".cache", "zest-cargo"),
  "release",
  "zenohd-rest",
);
const KEYS = 1_000;
const TARGET = 1.0;
/** SSE: PUTs a second, and how many are measured (after as many again, uncounted). */
const SSE_RATE = 200;
const SSE_PUTS = 1_000;
const SSE_WARMUP_PUTS = 200;
const SSE_DRAIN_MS = 10_000;

/** Starts zenohd-rest on free loopback ports; its `url` is the REST plugin's. */
async function spawnZenohdRest(): Promise<ServerProcess> {
  const [httpPort] = await freePorts(1);
  const server = await spawnReady(
    "zenohd",
    [ZENOHD_REST, await freeLocator(), `127.0.0.1:${httpPort}`, "demo/**"],
    /^ready/,
    { stdin: "pipe", env: { RUST_LOG: "error" } },
  );
  const url = `http://127.0.0.1:${httpPort}`;
  // The REST plugin binds its port in a task of its own: wait until it answers.
  for (const until = performance.now() + 10_000; ; ) {
    try {
      await (await fetch(`${url}/demo/none`)).arrayBuffer();
      break;
    } catch (err) {
      if (performance.now() > until) {
        await server.stop();
        throw new Error(`zenohd's REST plugin never answered on ${url}: ${err}`);
      }
      await sleep(100);
    }
  }
  return { ...server, url };
}

/** Puts the keys `demo/**` reads (`demo/one` among them) and checks the answer has them all. */
async function fill(server: ServerProcess): Promise<number> {
  await httpPut(server.url, "/demo/one", JSON_60, "application/json");
  for (let i = 0; i < KEYS - 1; i += 50) {
    const n = Math.min(50, KEYS - 1 - i);
    await Promise.all(
      Array.from({ length: n }, (_, j) => httpPut(server.url, `/demo/bench/${i + j}`, JSON_60, "application/json")),
    );
  }
  const all = await httpGetText(server.url, "/demo/**");
  const entries = (all.match(/"key":\s?"/g) ?? []).length;
  if (entries !== KEYS) throw new Error(`${server.label}: GET /demo/** returned ${entries} entries, not ${KEYS}`);
  return Buffer.byteLength(all);
}

/** What SSE delivery measured on one side. */
interface SseSide {
  p50: number;
  p99: number;
  lost: number;
  serverCpuPct: number;
  otherCpuPct: number;
  stealPct: number;
}

/**
 * PUTs `<seq>:<send time>` on `demo/sse/k` at SSE_RATE a second (up to 32 keep-alive
 * connections), after SSE_WARMUP_PUTS uncounted, and times each to its event on one SSE stream of `demo/sse/**`.
 */
async function sseSide(server: ServerProcess): Promise<SseSide> {
  const seen = new Uint8Array(SSE_PUTS);
  const latencies: number[] = [];
  const sub = await openSseStream(new URL(server.url), "/demo/sse/**", (value, now) => {
    const colon = value.indexOf(":");
    const seq = Number(value.slice(0, colon));
    if (seq < 0 || seq >= SSE_PUTS || seen[seq] === 1) return;
    seen[seq] = 1;
    latencies.push(now - Number(value.slice(colon + 1)));
  });
  const agent = new http.Agent({ keepAlive: true, maxSockets: 32 });
  const url = new URL(server.url);
  const put = (body: string): void => {
    const req = http.request({
      agent,
      host: url.hostname,
      port: url.port,
      method: "PUT",
      path: "/demo/sse/k",
      headers: { "content-type": "text/plain", "content-length": Buffer.byteLength(body) },
    });
    req.on("response", (res) => res.resume());
    req.on("error", () => {});
    req.end(body);
  };
  try {
    await sleep(300);
    await paced(SSE_RATE, SSE_WARMUP_PUTS, () => put(`-1:${performance.now()}`));
    await sleep(300);
    const interference = startInterference([server.pid]);
    const cpu0 = server.cpuSeconds();
    const t0 = performance.now();
    await paced(SSE_RATE, SSE_PUTS, (seq) => put(`${seq}:${performance.now()}`));
    const deadline = performance.now() + SSE_DRAIN_MS;
    while (latencies.length < SSE_PUTS && performance.now() < deadline) await sleep(50);
    const serverCpuPct = (100 * (server.cpuSeconds() - cpu0)) / ((performance.now() - t0) / 1000);
    return {
      p50: percentile([...latencies], 50),
      p99: percentile(latencies, 99),
      lost: SSE_PUTS - latencies.length,
      serverCpuPct,
      ...interference(),
    };
  } finally {
    sub.destroy();
    agent.destroy();
  }
}

/** `zest: a / zenohd: b req/s = r` for a summary. */
function pair(what: string, z: LoadFigures, d: LoadFigures, ratio: number, u?: LoadFigures): string {
  const off = u ? `; read cache off ${fmtInt(u.reqPerSec)} req/s, ${fmtRatio(pairedRatio(u, d))}` : "";
  return `${what} zest ${fmtInt(z.reqPerSec)} / zenohd ${fmtInt(d.reqPerSec)} req/s = ${fmtRatio(ratio)}${off}`;
}

async function measure(): Promise<BenchResult> {
  const started: ServerProcess[] = [];
  try {
    const zenohd = await spawnZenohdRest();
    started.push(zenohd);
    const zest = await spawnZest("zest-rest");
    started.push(zest);
    const uncached = await spawnZest("zest-rest-uncached", ["--cfg", "plugins/rest/cache_entries:0"]);
    started.push(uncached);
    const bytes: Record<string, number> = {};
    for (const s of started) bytes[s.label] = await fill(s);

    const one = { path: "/demo/one" };
    const [zg, dg, ug] = (await compare(
      [
        { server: zest, spec: one },
        { server: zenohd, spec: one },
        { server: uncached, spec: one },
      ],
      PAIRED_ROUNDS,
    )) as [LoadFigures, LoadFigures, LoadFigures];
    const wild = { path: "/demo/**" };
    const [zw, dw, uw] = (await compare(
      [
        { server: zest, spec: wild },
        { server: zenohd, spec: wild },
        { server: uncached, spec: wild },
      ],
      { connections: 32, warmupSeconds: 1, roundSeconds: 2, rounds: 3 },
    )) as [LoadFigures, LoadFigures, LoadFigures];
    const putSpec = {
      path: "/demo/put",
      method: "PUT" as const,
      headers: { "content-type": "text/plain" },
      body: TEXT_100,
    };
    // The floors: what a bare node:http server does on this host, in the same rounds. When a
    // floor is under zenohd's figure, no Node gateway reaches the target here.
    const putFloor = await spawnBaseline("put-ok.mjs");
    started.push(putFloor);
    const [zp, dp, fp] = (await compare(
      [
        { server: zest, spec: putSpec },
        { server: zenohd, spec: putSpec },
        { server: putFloor, spec: putSpec },
      ],
      PAIRED_ROUNDS,
    )) as [LoadFigures, LoadFigures, LoadFigures];
    const sseFloor = await spawnBaseline("sse-relay.mjs", [], "relay");
    started.push(sseFloor);
    const zs = await sseSide(zest);
    const ds = await sseSide(zenohd);
    const fs = await sseSide(sseFloor);

    const getRatio = pairedRatio(zg, dg);
    const wildRatio = pairedRatio(zw, dw);
    const putRatio = pairedRatio(zp, dp);
    const sseRatio = ds.p99 / zs.p99;
    const putFloorRatio = pairedRatio(fp, dp);
    const sseFloorRatio = ds.p99 / fs.p99;
    const ratio = Math.min(getRatio, wildRatio, putRatio, sseRatio);
    const notes = [
      ...loadNotes("zest GET", zg),
      ...loadNotes("zenohd GET", dg),
      ...loadNotes("zest, cache off GET", ug),
      ...loadNotes("zest demo/**", zw),
      ...loadNotes("zenohd demo/**", dw),
      ...loadNotes("zest PUT", zp),
      ...loadNotes("zenohd PUT", dp),
      ...interferenceNotes("zest SSE", zs),
      ...interferenceNotes("zenohd SSE", ds),
      ...loadNotes("node:http PUT", fp),
      ...interferenceNotes("relay SSE", fs),
    ];
    if (zs.lost > 0) notes.push(`zest's SSE lost ${zs.lost} of ${SSE_PUTS} events`);
    if (ds.lost > 0) notes.push(`zenohd's SSE lost ${ds.lost} of ${SSE_PUTS} events`);
    const kib = (label: string): string => fmtInt((bytes[label] ?? 0) / 1024);
    return {
      name: "zenohd-rest",
      figures: {
        ...loadFigures("zestGet", zg),
        ...loadFigures("zenohdGet", dg),
        ...loadFigures("uncachedGet", ug),
        ...loadFigures("zestWild", zw),
        ...loadFigures("zenohdWild", dw),
        ...loadFigures("uncachedWild", uw),
        ...loadFigures("zestPut", zp),
        ...loadFigures("zenohdPut", dp),
        getRatio,
        wildRatio,
        putRatio,
        uncachedGetRatio: pairedRatio(ug, dg),
        uncachedWildRatio: pairedRatio(uw, dw),
        zestSseP50Ms: zs.p50,
        zestSseP99Ms: zs.p99,
        zenohdSseP50Ms: ds.p50,
        zenohdSseP99Ms: ds.p99,
        zestSseLost: zs.lost,
        zenohdSseLost: ds.lost,
        sseRatio,
        ...loadFigures("floorPut", fp),
        putFloorRatio,
        floorSseP50Ms: fs.p50,
        floorSseP99Ms: fs.p99,
        sseFloorRatio,
      },
      ratio,
      target: `>= ${TARGET.toFixed(1)}x zenohd on each (the lowest)`,
      pass: ratio >= TARGET && zs.lost === 0,
      summary: [
        pair("GET one key", zg, dg, getRatio, ug),
        `${pair("GET demo/** (1,000 keys)", zw, dw, wildRatio, uw)} (answers of ${kib("zest-rest")} / ${kib("zenohd")} KiB)`,
        `${pair("PUT 100 bytes", zp, dp, putRatio)} (the floor, a bare node:http PUT server: ${fmtInt(fp.reqPerSec)} req/s = ${fmtRatio(putFloorRatio)} zenohd, zest/floor ${fmtRatio(pairedRatio(zp, fp))})`,
        `SSE, ${fmtInt(SSE_RATE)} PUTs/s to one stream: p99 zest ${fmtMs(zs.p99)} / zenohd ${fmtMs(ds.p99)} = ${fmtRatio(sseRatio)} (p50 ${fmtMs(zs.p50)} / ${fmtMs(ds.p50)}; lost ${zs.lost} / ${ds.lost}; the floor, a bare node:http PUT-to-SSE relay: p99 ${fmtMs(fs.p99)}, p50 ${fmtMs(fs.p50)} = ${fmtRatio(sseFloorRatio)} zenohd)`,
      ].join("; "),
      notes,
      interferencePct: Math.max(
        ...[zg, dg, ug, zw, dw, uw, zp, dp, fp, zs, ds, fs].flatMap((f) => [f.otherCpuPct, f.stealPct]),
      ),
    };
  } finally {
    await Promise.all(started.map((s) => s.stop()));
  }
}

export async function run(): Promise<BenchResult> {
  if (!executable(ZENOHD_REST))
    return {
      name: "zenohd-rest",
      figures: {},
      summary: `skipped: ${ZENOHD_REST} is missing; build it with \`npm run test:rust\` (interop/rust, tens of minutes once; ZEST_CARGO_TARGET names another target directory)`,
    };
  return inLoopbackNamespace("zenohd-rest", measure);
}
