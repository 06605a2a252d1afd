/**
 * HTTP/2 against HTTP/1.1 on the same zest process (TLS, issue 28): GET of one key and PUT of a
 * small value, closed loops of 32 requests in flight, 3 s each, in three rounds. The floor is
 * measured in the same rounds: a bare `http2.createSecureServer({ allowHTTP1: true })`
 * (`baselines/h2-https.mjs`) answering the same GET and PUT, driven by the same two load
 * generators. Its h2/h1 ratio is what the clients and the host impose; zest's ratio over the
 * floor's is zest's own share of the gap, and the target is read on it (bench/README.md).
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
import { runWorker, type ServerProcess, spawnBaseline, spawnZest } from "../lib/proc.js";
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

async function h1(server: ServerProcess, method: "GET" | "PUT"): Promise<Run> {
  const f: LoadFigures = await fire(
    server,
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

async function h2(server: ServerProcess, caFile: string, method: "GET" | "PUT"): Promise<Run> {
  const cpu0 = server.cpuSeconds();
  const { out, otherCpuPct } = await runWorker<H2Load>(
    "h2-load.mjs",
    [],
    [
      server.url,
      caFile,
      String(SESSIONS),
      String(IN_FLIGHT / SESSIONS),
      method,
      "/bench/one",
      method === "PUT" ? BODY : "-",
      String(SECONDS),
    ],
    { measuredPids: [server.pid] },
  );
  return {
    reqPerSec: out.ok / out.seconds,
    loadgenCpuPct: (100 * out.cpuSeconds) / out.seconds,
    failed: out.other + out.errors,
    // Over the warm-up second too: a slight overestimate of HTTP/2's cost.
    serverUsPerReq: (1e6 * (server.cpuSeconds() - cpu0)) / (out.ok * (1 + 1 / SECONDS)),
    otherCpuPct,
  };
}

/** One protocol pair of one server in one round: h1, h2, h2, h1 back to back. */
async function pair(
  server: ServerProcess,
  caFile: string,
  method: "GET" | "PUT",
  r1: Run[],
  r2: Run[],
): Promise<number> {
  const a = await h1(server, method);
  const b = await h2(server, caFile, method);
  const c = await h2(server, caFile, method);
  const d = await h1(server, method);
  r1.push(a, d);
  r2.push(b, c);
  return (b.reqPerSec + c.reqPerSec) / (a.reqPerSec + d.reqPerSec);
}

const median = (xs: number[]): number => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)]!;
const mean = (rs: Run[], f: (r: Run) => number): number => rs.reduce((s, r) => s + f(r), 0) / rs.length;

export async function run(): Promise<BenchResult> {
  const dir = mkdtempSync(join(tmpdir(), "zest-bench-h2-"));
  let zest: ServerProcess | undefined;
  let bareGet: ServerProcess | undefined;
  let barePut: ServerProcess | undefined;
  try {
    const { cert, key } = makeCertificate(dir);
    zest = await spawnZest("zest-http2", ["--rest-tls-cert", cert, "--rest-tls-key", key]);
    // The floor: Node's HTTP/2 server with the HTTP/1.1 fallback, as zest's TLS port is, and
    // nothing else (the same 60-byte answer to GET; PUT reads the body and answers 200).
    bareGet = await spawnBaseline("h2-https.mjs", ["get", cert, key, BODY], "h2-bare-get");
    barePut = await spawnBaseline("h2-https.mjs", ["put", cert, key], "h2-bare-put");
    await h2(zest, cert, "PUT"); // the key exists before the first GET; both paths warmed
    const figures: Record<string, number> = {};
    let failed = 0;
    let other = 0;
    for (const [op, method, bare] of [
      ["get", "GET", bareGet],
      ["put", "PUT", barePut],
    ] as const) {
      // Each round runs zest's pair then the floor's (h1, h2, h2, h1 each), alternating which
      // goes first: every ratio is the median of its rounds', so a burst of load from other
      // processes on the shared host skews one round only, and the normalised ratio pairs zest
      // with the floor of the same round.
      const z1: Run[] = [];
      const z2: Run[] = [];
      const b1: Run[] = [];
      const b2: Run[] = [];
      const zr: number[] = [];
      const br: number[] = [];
      const nr: number[] = [];
      for (let round = 0; round < ROUNDS; round++) {
        let z: number;
        let b: number;
        if (round % 2 === 0) {
          z = await pair(zest, cert, method, z1, z2);
          b = await pair(bare, cert, method, b1, b2);
        } else {
          b = await pair(bare, cert, method, b1, b2);
          z = await pair(zest, cert, method, z1, z2);
        }
        zr.push(z);
        br.push(b);
        nr.push(z / b);
      }
      figures[`${op}Ratio`] = median(zr);
      figures[`${op}FloorRatio`] = median(br);
      figures[`${op}NormalisedRatio`] = median(nr);
      figures[`${op}H1ReqPerSec`] = mean(z1, (r) => r.reqPerSec);
      figures[`${op}H2ReqPerSec`] = mean(z2, (r) => r.reqPerSec);
      figures[`${op}BareH1ReqPerSec`] = mean(b1, (r) => r.reqPerSec);
      figures[`${op}BareH2ReqPerSec`] = mean(b2, (r) => r.reqPerSec);
      // The normalised ratio is (zest h2 / bare h2) / (zest h1 / bare h1): these two tell which
      // protocol's path of zest loses more to Node's bare server.
      figures[`${op}H2OverBare`] = figures[`${op}H2ReqPerSec`]! / figures[`${op}BareH2ReqPerSec`]!;
      figures[`${op}H1OverBare`] = figures[`${op}H1ReqPerSec`]! / figures[`${op}BareH1ReqPerSec`]!;
      figures[`${op}H1ServerUsPerReq`] = mean(z1, (r) => r.serverUsPerReq);
      figures[`${op}H2ServerUsPerReq`] = mean(z2, (r) => r.serverUsPerReq);
      figures[`${op}BareH1ServerUsPerReq`] = mean(b1, (r) => r.serverUsPerReq);
      figures[`${op}BareH2ServerUsPerReq`] = mean(b2, (r) => r.serverUsPerReq);
      figures[`${op}H1LoadgenCpuPct`] = mean([...z1, ...b1], (r) => r.loadgenCpuPct);
      figures[`${op}H2LoadgenCpuPct`] = mean([...z2, ...b2], (r) => r.loadgenCpuPct);
      for (const r of [...z1, ...z2, ...b1, ...b2]) {
        failed += r.failed;
        other = Math.max(other, r.otherCpuPct);
      }
    }
    const getN = figures.getNormalisedRatio!;
    const putN = figures.putNormalisedRatio!;
    figures.failed = failed;
    figures.otherCpuPct = other;
    const f = (n: number) => Math.round(n).toLocaleString("en-US");
    const x = (n: number) => `${n.toFixed(2)}x`;
    const line = (op: "get" | "put", label: string) =>
      `${label} zest h2/h1 ${f(figures[`${op}H2ReqPerSec`]!)} / ${f(figures[`${op}H1ReqPerSec`]!)} req/s = ${x(figures[`${op}Ratio`]!)}, floor ${f(figures[`${op}BareH2ReqPerSec`]!)} / ${f(figures[`${op}BareH1ReqPerSec`]!)} = ${x(figures[`${op}FloorRatio`]!)}, zest over floor ${x(figures[`${op}NormalisedRatio`]!)} (zest over bare: h2 ${x(figures[`${op}H2OverBare`]!)}, h1 ${x(figures[`${op}H1OverBare`]!)})`;
    const cpu = (op: "get" | "put", label: string) =>
      `${label} h2 / h1 zest ${f(figures[`${op}H2ServerUsPerReq`]!)} / ${f(figures[`${op}H1ServerUsPerReq`]!)} us, bare ${f(figures[`${op}BareH2ServerUsPerReq`]!)} / ${f(figures[`${op}BareH1ServerUsPerReq`]!)} us`;
    return {
      name: "http2",
      figures,
      ratio: Math.min(getN, putN),
      target: `HTTP/2 >= ${TARGET}x HTTP/1.1 (GET and PUT), zest's h2/h1 over the bare server's`,
      pass: getN >= TARGET && putN >= TARGET && failed === 0,
      summary: `${line("get", "GET")}; ${line("put", "PUT")} (medians of rounds); server CPU per request ${cpu("get", "GET")}; ${cpu("put", "PUT")}`,
      notes: [
        `load generators: autocannon (HTTP/1.1, in the bench process) used ${f(figures.getH1LoadgenCpuPct!)}% / ${f(figures.putH1LoadgenCpuPct!)}% of a core (GET / PUT), workers/h2-load.mjs (HTTP/2, a child process) ${f(figures.getH2LoadgenCpuPct!)}% / ${f(figures.putH2LoadgenCpuPct!)}%`,
        `other processes used up to ${f(other)}% of a core meanwhile`,
      ],
    };
  } finally {
    await zest?.stop();
    await bareGet?.stop();
    await barePut?.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}
