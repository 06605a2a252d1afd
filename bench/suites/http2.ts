/**
 * HTTP/2 against HTTP/1.1 on the same zest process (TLS, issue 28): GET of one key and PUT of a
 * small value, closed loops of 32 requests in flight, 3 s each, in three rounds of h1, h2, h2, h1
 * (the ratio is the median round's).
 * Each protocol is driven by a dedicated load generator outside the router: HTTP/1.1 by
 * autocannon over 32 keep-alive connections (as every HTTP/1.1 benchmark here), HTTP/2 by
 * `workers/h2-load.mjs` (node:http2's core stream API, in a child process) over 4 sessions of 8
 * streams. Target: HTTP/2 >= 0.9x HTTP/1.1 on both.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { makeCertificate } from "../../test/support/certificate.js";
import { fire, type LoadFigures } from "../lib/load.js";
import { runWorker, type ServerProcess, spawnZest } from "../lib/proc.js";
import type { BenchResult } from "../lib/types.js";

const TARGET = 0.9;
const IN_FLIGHT = 32;
const SESSIONS = 4;
const SECONDS = Number(process.env.BENCH_HTTP2_SECONDS ?? 3);
const ROUNDS = Number(process.env.BENCH_HTTP2_ROUNDS ?? 3);
const BODY = '{"temp":21.5,"unit":"C","room":"lab-1","ok":true,"n":12345}';
const JSON_TYPE = { "content-type": "application/json" };

/** What `workers/h2-load.mjs` prints. */
interface H2Load {
  ok: number;
  other: number;
  errors: number;
  seconds: number;
  p50Ms: number;
  p99Ms: number;
  cpuSeconds: number;
}

interface Run {
  reqPerSec: number;
  /** CPU of the load generator, in % of one core. */
  loadgenCpuPct: number;
  /** Answers other than 2xx, and errors. */
  failed: number;
  /** Router CPU per answered request, in microseconds. */
  serverUsPerReq: number;
  otherCpuPct: number;
}

async function h1(zest: ServerProcess, method: "GET" | "PUT"): Promise<Run> {
  const f: LoadFigures = await fire(
    zest,
    { path: "/bench/one", method, ...(method === "PUT" ? { body: BODY, headers: JSON_TYPE } : {}) },
    { connections: IN_FLIGHT, seconds: SECONDS },
  );
  return {
    reqPerSec: f.reqPerSec,
    loadgenCpuPct: f.loadgenCpuPct,
    failed: f.errors + f.non2xx,
    serverUsPerReq: f.serverUserUsPerReq + f.serverSysUsPerReq,
    otherCpuPct: f.otherCpuPct,
  };
}

async function h2(zest: ServerProcess, caFile: string, method: "GET" | "PUT"): Promise<Run> {
  const cpu0 = zest.cpuSeconds();
  const { out, otherCpuPct } = await runWorker<H2Load>(
    "h2-load.mjs",
    [],
    [
      zest.url,
      caFile,
      String(SESSIONS),
      String(IN_FLIGHT / SESSIONS),
      method,
      "/bench/one",
      method === "PUT" ? BODY : "-",
      String(SECONDS),
    ],
    { measuredPids: [zest.pid] },
  );
  return {
    reqPerSec: out.ok / out.seconds,
    loadgenCpuPct: (100 * out.cpuSeconds) / out.seconds,
    failed: out.other + out.errors,
    // Over the warm-up second too: a slight overestimate of HTTP/2's cost.
    serverUsPerReq: (1e6 * (zest.cpuSeconds() - cpu0)) / (out.ok * (1 + 1 / SECONDS)),
    otherCpuPct,
  };
}

export async function run(): Promise<BenchResult> {
  const dir = mkdtempSync(join(tmpdir(), "zest-bench-h2-"));
  let zest: ServerProcess | undefined;
  try {
    const { cert, key } = makeCertificate(dir);
    zest = await spawnZest("zest-http2", ["--rest-tls-cert", cert, "--rest-tls-key", key]);
    await h2(zest, cert, "PUT"); // the key exists before the first GET; both paths warmed
    const figures: Record<string, number> = {};
    let failed = 0;
    let other = 0;
    for (const [op, method] of [
      ["get", "GET"],
      ["put", "PUT"],
    ] as const) {
      // Rounds of h1, h2, h2, h1 back to back: the ratio is the median of the rounds' ratios,
      // so that a burst of load from other processes on the shared host skews one round only.
      const r1: Run[] = [];
      const r2: Run[] = [];
      const ratios: number[] = [];
      for (let round = 0; round < ROUNDS; round++) {
        const a = await h1(zest, method);
        const b = await h2(zest, cert, method);
        const c = await h2(zest, cert, method);
        const d = await h1(zest, method);
        r1.push(a, d);
        r2.push(b, c);
        ratios.push((b.reqPerSec + c.reqPerSec) / (a.reqPerSec + d.reqPerSec));
      }
      ratios.sort((x, y) => x - y);
      const mean = (rs: Run[], f: (r: Run) => number) => rs.reduce((s, r) => s + f(r), 0) / rs.length;
      figures[`${op}Ratio`] = ratios[Math.floor(ratios.length / 2)]!;
      figures[`${op}H1ReqPerSec`] = mean(r1, (r) => r.reqPerSec);
      figures[`${op}H2ReqPerSec`] = mean(r2, (r) => r.reqPerSec);
      figures[`${op}H1ServerUsPerReq`] = mean(r1, (r) => r.serverUsPerReq);
      figures[`${op}H2ServerUsPerReq`] = mean(r2, (r) => r.serverUsPerReq);
      figures[`${op}H1LoadgenCpuPct`] = mean(r1, (r) => r.loadgenCpuPct);
      figures[`${op}H2LoadgenCpuPct`] = mean(r2, (r) => r.loadgenCpuPct);
      for (const r of [...r1, ...r2]) {
        failed += r.failed;
        other = Math.max(other, r.otherCpuPct);
      }
    }
    const getRatio = figures.getRatio!;
    const putRatio = figures.putRatio!;
    figures.failed = failed;
    figures.otherCpuPct = other;
    const f = (n: number) => Math.round(n).toLocaleString("en-US");
    return {
      name: "http2",
      figures,
      ratio: Math.min(getRatio, putRatio),
      target: `HTTP/2 >= ${TARGET}x HTTP/1.1 (GET and PUT)`,
      pass: getRatio >= TARGET && putRatio >= TARGET && failed === 0,
      summary: `GET h2 ${f(figures.getH2ReqPerSec!)} / h1 ${f(figures.getH1ReqPerSec!)} req/s (median round ${getRatio.toFixed(2)}x); PUT h2 ${f(figures.putH2ReqPerSec!)} / h1 ${f(figures.putH1ReqPerSec!)} req/s (median round ${putRatio.toFixed(2)}x); router CPU per request h2 / h1: GET ${f(figures.getH2ServerUsPerReq!)} / ${f(figures.getH1ServerUsPerReq!)} us, PUT ${f(figures.putH2ServerUsPerReq!)} / ${f(figures.putH1ServerUsPerReq!)} us`,
      notes: [
        `load generators: autocannon (HTTP/1.1, in the bench process) used ${f(figures.getH1LoadgenCpuPct!)}% / ${f(figures.putH1LoadgenCpuPct!)}% of a core (GET / PUT), workers/h2-load.mjs (HTTP/2, a child process) ${f(figures.getH2LoadgenCpuPct!)}% / ${f(figures.putH2LoadgenCpuPct!)}%`,
        `other processes used up to ${f(other)}% of a core meanwhile`,
      ],
    };
  } finally {
    await zest?.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}
