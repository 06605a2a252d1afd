/**
 * HTTP/2 against HTTP/1.1 on the same zest process (TLS, issue 28): GET of one key and PUT of a
 * small value, closed loops of 32 requests in flight, for 5 s each, in the order h1, h2, h2, h1:
 * HTTP/1.1 over 32 keep-alive connections, HTTP/2 over 4 sessions of 8 streams. The load client
 * runs in this process. Target: HTTP/2 >= 0.9x HTTP/1.1 on both.
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { connect, type ClientHttp2Session } from "node:http2";
import { Agent, request } from "node:https";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { makeCertificate } from "../../test/support/certificate.js";
import { type ServerProcess, spawnZest } from "../lib/proc.js";
import type { BenchResult } from "../lib/types.js";

const TARGET = 0.9;
const IN_FLIGHT = 32;
const SESSIONS = 4;
const SECONDS = Number(process.env.BENCH_HTTP2_SECONDS ?? 5);
const BODY = '{"temp":21.5,"unit":"C","room":"lab-1","ok":true,"n":12345}';
const JSON_TYPE = { "content-type": "application/json" };

type Call = () => Promise<void>;

async function loop(call: Call): Promise<number> {
  let done = 0;
  const end = performance.now() + SECONDS * 1000;
  await Promise.all(
    Array.from({ length: IN_FLIGHT }, async () => {
      while (performance.now() < end) {
        await call();
        done++;
      }
    }),
  );
  return done / SECONDS;
}

function h1Call(url: string, ca: Buffer, agent: Agent, method: string, path: string, body?: string): Call {
  const u = new URL(url);
  return () =>
    new Promise((resolve, reject) => {
      const req = request(
        { host: u.hostname, port: u.port, method, path, ca, agent, headers: body ? JSON_TYPE : {} },
        (res) => {
          res.resume();
          res.on("end", () => (res.statusCode === 200 ? resolve() : reject(new Error(`${res.statusCode}`))));
        },
      );
      req.on("error", reject);
      req.end(body);
    });
}

function h2Call(sessions: ClientHttp2Session[], method: string, path: string, body?: string): Call {
  let next = 0;
  return () =>
    new Promise((resolve, reject) => {
      const s = sessions[next++ % sessions.length]!;
      const req = s.request({ ":method": method, ":path": path, ...(body ? JSON_TYPE : {}) });
      let status = 0;
      req.on("response", (h) => {
        status = Number(h[":status"]);
      });
      req.resume();
      req.on("end", () => (status === 200 ? resolve() : reject(new Error(`${status}`))));
      req.on("error", reject);
      req.end(body);
    });
}

export async function run(): Promise<BenchResult> {
  const dir = mkdtempSync(join(tmpdir(), "zest-bench-h2-"));
  let zest: ServerProcess | undefined;
  const sessions: ClientHttp2Session[] = [];
  const agent = new Agent({ keepAlive: true, maxSockets: IN_FLIGHT });
  try {
    const { cert, key } = makeCertificate(dir);
    const ca = readFileSync(cert);
    zest = await spawnZest("zest-http2", ["--rest-tls-cert", cert, "--rest-tls-key", key]);
    for (let i = 0; i < SESSIONS; i++) {
      const s = connect(zest.url, { ca, servername: "localhost" });
      await new Promise<void>((resolve, reject) => {
        s.once("connect", () => resolve());
        s.once("error", reject);
      });
      sessions.push(s);
    }
    await h1Call(zest.url, ca, agent, "PUT", "/bench/one", BODY)();
    const figures: Record<string, number> = {};
    for (const [op, method, body] of [
      ["get", "GET", undefined],
      ["put", "PUT", BODY],
    ] as const) {
      const h1 = h1Call(zest.url, ca, agent, method, "/bench/one", body);
      const h2 = h2Call(sessions, method, "/bench/one", body);
      const r1 = [await loop(h1)];
      const r2 = [await loop(h2), await loop(h2)];
      r1.push(await loop(h1));
      figures[`${op}H1ReqPerSec`] = (r1[0]! + r1[1]!) / 2;
      figures[`${op}H2ReqPerSec`] = (r2[0]! + r2[1]!) / 2;
    }
    const getRatio = figures.getH2ReqPerSec! / figures.getH1ReqPerSec!;
    const putRatio = figures.putH2ReqPerSec! / figures.putH1ReqPerSec!;
    figures.getRatio = getRatio;
    figures.putRatio = putRatio;
    const f = (n: number) => Math.round(n).toLocaleString("en-US");
    return {
      name: "http2",
      figures,
      ratio: Math.min(getRatio, putRatio),
      target: `HTTP/2 >= ${TARGET}x HTTP/1.1 (GET and PUT)`,
      pass: getRatio >= TARGET && putRatio >= TARGET,
      summary: `GET h2 ${f(figures.getH2ReqPerSec!)} / h1 ${f(figures.getH1ReqPerSec!)} req/s (${getRatio.toFixed(2)}x); PUT h2 ${f(figures.putH2ReqPerSec!)} / h1 ${f(figures.putH1ReqPerSec!)} req/s (${putRatio.toFixed(2)}x)`,
      notes: ["the load client runs in the benchmark's own process, one thread, for both protocols"],
    };
  } finally {
    for (const s of sessions) s.destroy();
    agent.destroy();
    await zest?.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}
