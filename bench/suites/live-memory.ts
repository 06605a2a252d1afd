/**
 * 10,000 parked long-polls (issue 28): the RSS growth of a zest process holding them, against the
 * floor measured in the same run, a bare node server that holds as many requests open without
 * answering (bench/baselines/hold-open.mjs: Node's own sockets, parsers, request and response
 * objects). Both protocols: HTTP/2 over TLS (40 connections x 250 streams) and HTTP/1.1 on the
 * plain port (10,000 connections). Target: zest <= 50 MB over HTTP/2.
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { Agent, request } from "node:http";
import { type ClientHttp2Session, connect } from "node:http2";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { makeCertificate } from "../../test/support/certificate.js";
import { fmtMs } from "../lib/format.js";
import { BENCH_DIR, type ServerProcess, spawnServer, spawnZest } from "../lib/proc.js";
import type { BenchResult } from "../lib/types.js";

const PARKED = Number(process.env.BENCH_LIVE_PARKED ?? 10_000);
const STREAMS_PER_SESSION = 250;
const TARGET_MB = 50;
const TEXT = { "content-type": "text/plain" };
/** Node flags of the measured servers: a report of what they retain after a collection. */
const REPORTING = ["--expose-gc", "--import", join(BENCH_DIR, "workers", "heap-report.mjs")];

/** What a server retains after a full garbage collection, in bytes (bench/workers/heap-report.mjs). */
interface Retained {
  rss: number;
  heapUsed: number;
  external: number;
}

async function retained(server: ServerProcess, file: string): Promise<Retained> {
  rmSync(file, { force: true });
  process.kill(server.pid, "SIGUSR2");
  for (let i = 0; i < 100; i++) {
    await settle(100);
    try {
      return JSON.parse(readFileSync(file, "utf8")) as Retained;
    } catch {
      // not written yet
    }
  }
  throw new Error(`${server.label} wrote no memory report`);
}

const MB = 1024 * 1024;

const settle = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Opens `PARKED` GETs and leaves them waiting; `close` ends them all. */
interface Held {
  /** Resolves with the number of 200 answers once every request ended. */
  readonly answered: Promise<number>;
  close(): void;
}

async function holdH2(url: string, ca: Buffer, path: string, etag: string): Promise<Held> {
  const sessions: ClientHttp2Session[] = [];
  const done: Array<Promise<number>> = [];
  for (let n = 0; n < PARKED / STREAMS_PER_SESSION; n++) {
    const s = connect(url, { ca, servername: "localhost" });
    await new Promise<void>((resolve, reject) => {
      s.once("connect", () => resolve());
      s.once("error", reject);
    });
    sessions.push(s);
    for (let i = 0; i < STREAMS_PER_SESSION; i++) {
      const req = s.request({ ":method": "GET", ":path": path, "if-none-match": etag });
      req.on("error", () => {});
      done.push(
        new Promise((resolve) => {
          let status = 0;
          req.on("response", (h) => {
            status = Number(h[":status"]);
          });
          req.resume();
          req.on("close", () => resolve(status === 200 ? 1 : 0));
        }),
      );
      req.end();
    }
  }
  return {
    answered: Promise.all(done).then((a) => a.reduce((x, y) => x + y, 0)),
    close: () => {
      for (const s of sessions) s.destroy();
    },
  };
}

async function holdH1(url: string, path: string, etag: string): Promise<Held> {
  const u = new URL(url);
  const agent = new Agent({ keepAlive: false, maxSockets: Number.POSITIVE_INFINITY });
  const done: Array<Promise<number>> = [];
  const reqs: Array<ReturnType<typeof request>> = [];
  for (let i = 0; i < PARKED; i++) {
    done.push(
      new Promise((resolve) => {
        const req = request(
          { host: u.hostname, port: u.port, path, agent, headers: { "if-none-match": etag } },
          (res) => {
            res.resume();
            res.on("end", () => resolve(res.statusCode === 200 ? 1 : 0));
          },
        );
        req.on("error", () => resolve(0));
        req.end();
        reqs.push(req);
      }),
    );
    // Connections opened in bursts, so the listen backlog never overflows.
    if (i % 500 === 499) await settle(50);
  }
  return {
    answered: Promise.all(done).then((a) => a.reduce((x, y) => x + y, 0)),
    close: () => {
      for (const r of reqs) r.destroy();
      agent.destroy();
    },
  };
}

/** What `server` retains more while it holds `PARKED` requests: RSS and JS heap, in MB. */
async function measure(
  server: ServerProcess,
  file: string,
  hold: () => Promise<Held>,
): Promise<{ rssMb: number; heapMb: number; held: Held }> {
  await settle(500);
  const before = await retained(server, file);
  const held = await hold();
  await settle(2000);
  const after = await retained(server, file);
  return {
    rssMb: (after.rss - before.rss) / MB,
    heapMb: (after.heapUsed + after.external - before.heapUsed - before.external) / MB,
    held,
  };
}

async function put(url: string, ca: Buffer | undefined, path: string, body: string): Promise<string | undefined> {
  return call(url, ca, "PUT", path, body, {});
}

/** One request through fetch-free node clients; resolves with the ETag. */
async function call(
  url: string,
  ca: Buffer | undefined,
  method: string,
  path: string,
  body: string | undefined,
  headers: Record<string, string>,
): Promise<string | undefined> {
  if (ca === undefined) {
    const u = new URL(url);
    return new Promise((resolve, reject) => {
      const req = request({ host: u.hostname, port: u.port, method, path, headers: { ...headers, ...TEXT } }, (res) => {
        res.resume();
        res.on("end", () => resolve(res.headers.etag));
      });
      req.on("error", reject);
      req.end(body);
    });
  }
  const s = connect(url, { ca, servername: "localhost" });
  try {
    return await new Promise((resolve, reject) => {
      const req = s.request({ ":method": method, ":path": path, ...headers, ...TEXT });
      let etag: string | undefined;
      req.on("response", (h) => {
        etag = h.etag as string | undefined;
      });
      req.resume();
      req.on("end", () => resolve(etag));
      req.on("error", reject);
      req.end(body);
    });
  } finally {
    s.close();
  }
}

export async function run(): Promise<BenchResult> {
  const dir = mkdtempSync(join(tmpdir(), "zest-bench-live-mem-"));
  const servers: ServerProcess[] = [];
  const figures: Record<string, number> = {};
  const limits = [
    "--cfg",
    `plugins/rest/long_poll:{max_waits:${PARKED},max_waits_per_address:${PARKED}}`,
    "--cfg",
    `plugins/rest/max_connections:${PARKED + 1000}`,
    "--cfg",
    `plugins/rest/max_connections_per_address:${PARKED + 1000}`,
  ];
  try {
    const { cert, key } = makeCertificate(dir);
    const ca = readFileSync(cert);
    const report = join(dir, "memory.json");
    process.env.HEAP_REPORT_FILE = report;
    for (const protocol of ["h2", "h1"] as const) {
      const tls = protocol === "h2" ? ["--rest-tls-cert", cert, "--rest-tls-key", key] : [];
      const zest = await spawnZest(`zest-live-${protocol}`, [...tls, ...limits], REPORTING);
      servers.push(zest);
      const caOf = protocol === "h2" ? ca : undefined;
      await put(zest.url, caOf, "/lp/parked", "0");
      const etag = (await call(zest.url, caOf, "GET", "/lp/parked?_wait=1s", undefined, {}))!;
      const path = "/lp/parked?_wait=120s";
      const hold = () => (protocol === "h2" ? holdH2(zest.url, ca, path, etag) : holdH1(zest.url, path, etag));
      const z = await measure(zest, report, hold);
      const t0 = performance.now();
      await put(zest.url, caOf, "/lp/parked", "1");
      const answered = await z.held.answered;
      figures[`${protocol}WakeAllMs`] = performance.now() - t0;
      figures[`${protocol}Answered`] = answered;
      figures[`${protocol}ZestMb`] = z.rssMb;
      figures[`${protocol}ZestHeapMb`] = z.heapMb;
      z.held.close();
      await zest.stop();

      const floor = await spawnServer(
        "hold-open",
        join(BENCH_DIR, "baselines", "hold-open.mjs"),
        protocol === "h2" ? ["h2", cert, key] : ["h1"],
        { nodeArgs: REPORTING },
      );
      servers.push(floor);
      const f = await measure(floor, report, () =>
        protocol === "h2" ? holdH2(floor.url, ca, path, etag) : holdH1(floor.url, path, etag),
      );
      figures[`${protocol}FloorMb`] = f.rssMb;
      figures[`${protocol}FloorHeapMb`] = f.heapMb;
      f.held.close();
      await floor.stop();
    }
    const pass = figures.h2ZestMb! <= TARGET_MB && figures.h2Answered === PARKED && figures.h1Answered === PARKED;
    const mb = (n: number) => n.toFixed(1);
    return {
      name: "live-memory",
      figures,
      target: `${PARKED} parked long-polls <= ${TARGET_MB} MB (HTTP/2)`,
      pass,
      summary:
        `${PARKED} parked, RSS (JS heap) after a collection: HTTP/2 zest +${mb(figures.h2ZestMb!)} MB (${mb(figures.h2ZestHeapMb!)}), ` +
        `bare node:http2 +${mb(figures.h2FloorMb!)} MB (${mb(figures.h2FloorHeapMb!)}); ` +
        `HTTP/1.1 zest +${mb(figures.h1ZestMb!)} MB (${mb(figures.h1ZestHeapMb!)}), bare node:http +${mb(figures.h1FloorMb!)} MB (${mb(figures.h1FloorHeapMb!)}); ` +
        `all woken by one PUT in ${fmtMs(figures.h2WakeAllMs!)} (h2) / ${fmtMs(figures.h1WakeAllMs!)} (h1)`,
    };
  } finally {
    for (const s of servers) await s.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}
