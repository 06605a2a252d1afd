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
import { homedir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { executable } from "../../test/support/child-processes.js";
import { freePorts } from "../../test/support/nats-cluster.js";
import { fmtInt, fmtMs, fmtNum, fmtRatio } from "../lib/format.js";
import { httpGetText, httpPut } from "../lib/http.js";
import {
  compare,
  type LoadFigures,
  loadFigures,
  loadNotes,
  PAIRED_ROUNDS,
  type RequestSpec,
  pairedRatio,
  roundsNote,
} from "../lib/load.js";
import { type SseRoundOptions, type SseRounds, sseRounds } from "../lib/rest-sse-rounds.js";
import { JSON_60, TEXT_100 } from "../lib/payloads.js";
import { interferenceNotes, type ServerProcess, spawnBaseline, spawnReady, spawnZest } from "../lib/proc.js";
import type { BenchResult } from "../lib/types.js";
import { freeLocator, inLoopbackNamespace } from "../lib/zenoh.js";

/** Where `npm run test:rust` builds the binary (scripts/test-rust.sh). */
const ZENOHD_REST = join(
  process.env.ZEST_CARGO_TARGET || join(homedir(), ".cache", "zest-cargo"),
  "release",
  "zenohd-rest",
);
const KEYS = 1_000;
const TARGET = 1.0;
/**
 * SSE: 200 PUTs a second, 1,000 measured per side and round, five rounds alternating zest,
 * zenohd and the floor (bench/lib/rest-sse-rounds.ts).
 */
const SSE_ROUNDS: SseRoundOptions = {
  rate: 200,
  puts: 1_000,
  warmupPuts: 200,
  roundWarmupPuts: 50,
  rounds: 5,
  drainMs: 10_000,
};

/** Starts zenohd-rest on free loopback ports; its `url` is the REST plugin's. */

/** zest, zenohd and a third server under the same requests, in alternating rounds. */
async function compareThree(
  servers: readonly [ServerProcess, ServerProcess, ServerProcess],
  spec: RequestSpec,
  options: Parameters<typeof compare>[1] = PAIRED_ROUNDS,
): Promise<[LoadFigures, LoadFigures, LoadFigures]> {
  return (await compare(
    servers.map((server) => ({ server, spec })),
    options,
  )) as [LoadFigures, LoadFigures, LoadFigures];
}

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

/** `zest: a / zenohd: b req/s = r` for a summary, with the spread of the rounds' ratios. */
function pair(what: string, z: LoadFigures, d: LoadFigures, ratio: number, u?: LoadFigures): string {
  const off = u ? `; read cache off ${fmtInt(u.reqPerSec)} req/s, ${fmtRatio(pairedRatio(u, d))}` : "";
  return `${what} zest ${fmtInt(z.reqPerSec)} / zenohd ${fmtInt(d.reqPerSec)} req/s = ${fmtRatio(ratio)} (${roundsNote(z, d)})${off}`;
}

/** `p99 4.1 ms (2.9-6.0 over 5 rounds, pooled 4.4)`. */
function sseFigure(s: SseRounds): string {
  return `${fmtMs(s.p99)} (${fmtMs(s.p99Min)}-${fmtMs(s.p99Max)} over ${s.rounds.length} rounds, pooled ${fmtMs(s.pooledP99)})`;
}

/**
 * The lines to measure: `BENCH_ZENOHD_REST_LINES`, a comma-separated subset of `get`, `wild`,
 * `put`, `sse` (all by default), so that one line can be worked on without the others' minutes.
 */
function selectedLines(): Set<string> {
  const all = ["get", "wild", "put", "sse"];
  const asked = (process.env.BENCH_ZENOHD_REST_LINES ?? "").split(",").filter((l) => l !== "");
  const unknown = asked.filter((l) => !all.includes(l));
  if (unknown.length > 0) throw new Error(`BENCH_ZENOHD_REST_LINES: unknown line ${unknown.join(", ")}`);
  return new Set(asked.length > 0 ? asked : all);
}

async function measure(): Promise<BenchResult> {
  const lines = selectedLines();
  const started: ServerProcess[] = [];
  const figures: Record<string, number> = {};
  const summary: string[] = [];
  const notes: string[] = [];
  const ratios: number[] = [];
  const interference: number[] = [];
  const watch = (...fs: { otherCpuPct: number; stealPct: number }[]): void => {
    for (const f of fs) interference.push(f.otherCpuPct, f.stealPct);
  };
  let lost = 0;
  try {
    const zenohd = await spawnZenohdRest();
    started.push(zenohd);
    const zest = await spawnZest("zest-rest");
    started.push(zest);
    const uncached = await spawnZest("zest-rest-uncached", ["--cfg", "plugins/rest/cache_entries:0"]);
    started.push(uncached);
    const bytes: Record<string, number> = {};
    if (lines.has("get") || lines.has("wild")) for (const s of started) bytes[s.label] = await fill(s);

    if (lines.has("get")) {
      const one = { path: "/demo/one" };
      const [zg, dg, ug] = await compareThree([zest, zenohd, uncached], one);
      const getRatio = pairedRatio(zg, dg);
      ratios.push(getRatio);
      watch(zg, dg, ug);
      notes.push(...loadNotes("zest GET", zg), ...loadNotes("zenohd GET", dg), ...loadNotes("zest, cache off GET", ug));
      Object.assign(figures, loadFigures("zestGet", zg), loadFigures("zenohdGet", dg), loadFigures("uncachedGet", ug));
      Object.assign(figures, { getRatio, uncachedGetRatio: pairedRatio(ug, dg) });
      summary.push(pair("GET one key", zg, dg, getRatio, ug));
    }
    if (lines.has("wild")) {
      const wild = { path: "/demo/**" };
      const [zw, dw, uw] = await compareThree([zest, zenohd, uncached], wild, {
        connections: 32,
        warmupSeconds: 1,
        roundSeconds: 2,
        rounds: 3,
      });
      const wildRatio = pairedRatio(zw, dw);
      ratios.push(wildRatio);
      watch(zw, dw, uw);
      notes.push(...loadNotes("zest demo/**", zw), ...loadNotes("zenohd demo/**", dw));
      Object.assign(
        figures,
        loadFigures("zestWild", zw),
        loadFigures("zenohdWild", dw),
        loadFigures("uncachedWild", uw),
      );
      Object.assign(figures, { wildRatio, uncachedWildRatio: pairedRatio(uw, dw) });
      const kib = (label: string): string => fmtInt((bytes[label] ?? 0) / 1024);
      summary.push(
        `${pair("GET demo/** (1,000 keys)", zw, dw, wildRatio, uw)} (answers of ${kib("zest-rest")} / ${kib("zenohd")} KiB)`,
      );
    }
    if (lines.has("put")) {
      const putSpec = {
        path: "/demo/put",
        method: "PUT" as const,
        headers: { "content-type": "text/plain" },
        body: TEXT_100,
      };
      // The floor: what a bare node:http server does on this host, in the same rounds. When it
      // is under zenohd's figure, no Node gateway reaches the target here.
      const putFloor = await spawnBaseline("put-ok.mjs");
      started.push(putFloor);
      const [zp, dp, fp] = await compareThree([zest, zenohd, putFloor], putSpec);
      const putRatio = pairedRatio(zp, dp);
      const putFloorRatio = pairedRatio(fp, dp);
      ratios.push(putRatio);
      watch(zp, dp, fp);
      notes.push(...loadNotes("zest PUT", zp), ...loadNotes("zenohd PUT", dp), ...loadNotes("node:http PUT", fp));
      Object.assign(figures, loadFigures("zestPut", zp), loadFigures("zenohdPut", dp), loadFigures("floorPut", fp));
      Object.assign(figures, { putRatio, putFloorRatio, zestOverFloorPut: pairedRatio(zp, fp) });
      summary.push(
        `${pair("PUT 100 bytes", zp, dp, putRatio)} (the floor, a bare node:http PUT server: ${fmtInt(fp.reqPerSec)} req/s = ${fmtRatio(putFloorRatio)} zenohd, zest/floor ${fmtRatio(pairedRatio(zp, fp))}; server CPU per PUT zest ${fmtNum(zp.serverUserUsPerReq + zp.serverSysUsPerReq, 1)} / zenohd ${fmtNum(dp.serverUserUsPerReq + dp.serverSysUsPerReq, 1)} / floor ${fmtNum(fp.serverUserUsPerReq + fp.serverSysUsPerReq, 1)} µs)`,
      );
    }
    if (lines.has("sse")) {
      // The floor: a bare node:http PUT-to-SSE relay, in the same rounds.
      const sseFloor = await spawnBaseline("sse-relay.mjs", [], "relay");
      started.push(sseFloor);
      const [zs, ds, fs] = (await sseRounds([zest, zenohd, sseFloor], SSE_ROUNDS)) as [SseRounds, SseRounds, SseRounds];
      const sseRatio = ds.p99 / zs.p99;
      const sseFloorRatio = ds.p99 / fs.p99;
      ratios.push(sseRatio);
      watch(zs, ds, fs);
      lost = zs.lost;
      notes.push(
        ...interferenceNotes("zest SSE", zs),
        ...interferenceNotes("zenohd SSE", ds),
        ...interferenceNotes("relay SSE", fs),
      );
      const measured = SSE_ROUNDS.puts * SSE_ROUNDS.rounds;
      if (zs.lost > 0) notes.push(`zest's SSE lost ${zs.lost} of ${measured} events`);
      if (ds.lost > 0) notes.push(`zenohd's SSE lost ${ds.lost} of ${measured} events`);
      for (const [name, s] of [
        ["zest", zs],
        ["zenohd", ds],
        ["floor", fs],
      ] as const) {
        Object.assign(figures, {
          [`${name}SseP50Ms`]: s.p50,
          [`${name}SseP99Ms`]: s.p99,
          [`${name}SseP99MinMs`]: s.p99Min,
          [`${name}SseP99MaxMs`]: s.p99Max,
          [`${name}SsePooledP99Ms`]: s.pooledP99,
          [`${name}SseLost`]: s.lost,
          [`${name}SseCpuPct`]: s.serverCpuPct,
        });
      }
      Object.assign(figures, { sseRatio, sseFloorRatio, ssePooledRatio: ds.pooledP99 / zs.pooledP99 });
      summary.push(
        `SSE, ${fmtInt(SSE_ROUNDS.rate)} PUTs/s to one stream, ${fmtInt(SSE_ROUNDS.puts)} events a round, median round p99 zest ${sseFigure(zs)} / zenohd ${sseFigure(ds)} = ${fmtRatio(sseRatio)} (p50 ${fmtMs(zs.p50)} / ${fmtMs(ds.p50)}; lost ${zs.lost} / ${ds.lost}; the floor, a bare node:http PUT-to-SSE relay: p99 ${sseFigure(fs)}, p50 ${fmtMs(fs.p50)} = ${fmtRatio(sseFloorRatio)} zenohd)`,
      );
    }
    const ratio = Math.min(...ratios);
    return {
      name: "zenohd-rest",
      figures,
      ratio,
      target: `>= ${TARGET.toFixed(1)}x zenohd on each (the lowest)`,
      pass: ratio >= TARGET && lost === 0,
      summary: summary.join("; "),
      notes,
      interferencePct: Math.max(...interference),
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
