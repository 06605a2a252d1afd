/**
 * Live data (issue 28) against a zest process serving TLS with HTTP/2, driven by `node:http2`
 * sessions from this process:
 * - long-poll wake: a parked `GET ?_wait` and a PUT on its key, 300 times in a row; the time from
 *   sending the PUT to the long-poll's answer. Target: p99 <= 10 ms.
 * - 10,000 parked long-polls (40 HTTP/2 connections of 250 streams): the router's RSS growth.
 *   Target: <= 50 MB.
 * - snapshot of 100,000 keys then live: an SSE `_snapshot=true` stream on them and a PUT sent as
 *   it opens; the time from opening to the first live event. Target: <= 1 s.
 */
import { readFileSync, mkdtempSync, rmSync } from "node:fs";
import { connect, type ClientHttp2Session } from "node:http2";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { makeCertificate } from "../../test/support/certificate.js";
import { fmtMs } from "../lib/format.js";
import { type ServerProcess, spawnZest } from "../lib/proc.js";
import type { BenchResult } from "../lib/types.js";

const WAKES = 300;
const PARKED = Number(process.env.BENCH_LIVE_PARKED ?? 10_000);
const STREAMS_PER_SESSION = 250;
const SNAPSHOT_KEYS = Number(process.env.BENCH_LIVE_KEYS ?? 100_000);

interface Answer {
  status: number;
  etag: string | undefined;
}

function call(s: ClientHttp2Session, method: string, path: string, body?: string, headers = {}): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = s.request({ ":method": method, ":path": path, ...headers });
    let head: Record<string, unknown> = {};
    req.on("response", (h) => {
      head = h;
    });
    req.resume();
    req.on("end", () => resolve({ status: Number(head[":status"]), etag: head.etag as string | undefined }));
    req.on("error", reject);
    req.end(body);
  });
}

async function session(url: string, ca: Buffer): Promise<ClientHttp2Session> {
  const s = connect(url, { ca, servername: "localhost" });
  await new Promise<void>((resolve, reject) => {
    s.once("connect", () => resolve());
    s.once("error", reject);
  });
  return s;
}

function rssMb(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
  return m ? Number(m[1]) / 1024 : Number.NaN;
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

const TEXT = { "content-type": "text/plain" };

export async function run(): Promise<BenchResult> {
  const dir = mkdtempSync(join(tmpdir(), "zest-bench-live-"));
  let zest: ServerProcess | undefined;
  const sessions: ClientHttp2Session[] = [];
  try {
    const { cert, key } = makeCertificate(dir);
    const ca = readFileSync(cert);
    zest = await spawnZest("zest-live", [
      "--rest-tls-cert",
      cert,
      "--rest-tls-key",
      key,
      "--cfg",
      `plugins/rest/long_poll:{max_waits:${PARKED},max_waits_per_address:${PARKED}}`,
    ]);
    const main = await session(zest.url, ca);
    sessions.push(main);

    // Long-poll wake.
    await call(main, "PUT", "/lp/wake", "0", TEXT);
    let etag = (await call(main, "GET", "/lp/wake?_wait=1s")).etag!;
    const wakes: number[] = [];
    for (let i = 1; i <= WAKES; i++) {
      const poll = call(main, "GET", "/lp/wake?_wait=30s", undefined, { "if-none-match": etag });
      await new Promise((r) => setTimeout(r, 2)); // let it park
      const t0 = performance.now();
      void call(main, "PUT", "/lp/wake", String(i), TEXT);
      const answer = await poll;
      wakes.push(performance.now() - t0);
      etag = answer.etag!;
    }
    wakes.sort((a, b) => a - b);
    const wakeP50 = percentile(wakes, 50);
    const wakeP99 = percentile(wakes, 99);

    // 10,000 parked long-polls.
    await call(main, "PUT", "/lp/parked", "0", TEXT);
    const parkedEtag = (await call(main, "GET", "/lp/parked?_wait=1s")).etag!;
    const rssBefore = rssMb(zest.pid);
    const parked: Array<Promise<Answer>> = [];
    for (let n = 0; n < PARKED / STREAMS_PER_SESSION; n++) {
      const s = await session(zest.url, ca);
      sessions.push(s);
      for (let i = 0; i < STREAMS_PER_SESSION; i++)
        parked.push(call(s, "GET", "/lp/parked?_wait=120s", undefined, { "if-none-match": parkedEtag }));
    }
    await new Promise((r) => setTimeout(r, 3000));
    const rssParked = rssMb(zest.pid);
    const t0 = performance.now();
    await call(main, "PUT", "/lp/parked", "1", TEXT);
    const woken = await Promise.all(parked);
    const wakeAllMs = performance.now() - t0;
    const answered = woken.filter((a) => a.status === 200).length;
    const parkedMb = rssParked - rssBefore;

    // Snapshot of 100,000 keys, then live.
    for (let i = 0; i < SNAPSHOT_KEYS; i += 500) {
      const batch: Array<Promise<Answer>> = [];
      for (let j = i; j < i + 500; j++) batch.push(call(main, "PUT", `/snap/k${j}`, String(j), TEXT));
      await Promise.all(batch);
    }
    const opened = performance.now();
    const firstLive = await new Promise<number>((resolve, reject) => {
      const stream = main.request({
        ":method": "GET",
        ":path": "/snap/**?_snapshot=true",
        accept: "text/event-stream",
      });
      let tail = "";
      let snapshotEvents = 0;
      stream.setEncoding("utf8");
      // A write every 10 ms from the moment the stream opens: one that the snapshot already
      // holds is (rightly) not sent again, so the first live event is the first write after it.
      let n = 0;
      const writer = setInterval(() => void call(main, "PUT", "/snap/live", String(n++), TEXT), 10);
      stream.on("close", () => clearInterval(writer));
      stream.on("data", (c: string) => {
        const text = tail + c;
        let at = 0;
        for (let i = text.indexOf("\n\n"); i !== -1; i = text.indexOf("\n\n", at)) {
          const block = text.slice(at, i);
          at = i + 2;
          if (block.includes("event: SNAPSHOT_END")) snapshotEvents = -1;
          else if (snapshotEvents === -1 && block.includes('"snap/live"')) {
            stream.close();
            resolve(performance.now() - opened);
            return;
          }
        }
        tail = text.slice(at);
      });
      stream.on("error", reject);
    });

    const pass = wakeP99 <= 10 && parkedMb <= 50 && answered === PARKED && firstLive <= 1000;
    return {
      name: "live",
      figures: {
        wakeP50Ms: wakeP50,
        wakeP99Ms: wakeP99,
        parkedRssMb: parkedMb,
        wakeAllMs,
        answered,
        firstLiveMs: firstLive,
      },
      target:
        "long-poll wake p99 <= 10 ms; 10,000 parked <= 50 MB; first live event after a 100,000-key snapshot <= 1 s",
      pass,
      summary: `wake p50 ${fmtMs(wakeP50)} p99 ${fmtMs(wakeP99)}; ${PARKED} parked: +${parkedMb.toFixed(1)} MB RSS, all woken in ${fmtMs(wakeAllMs)} (${answered} 200s); snapshot of ${SNAPSHOT_KEYS} keys then first live event in ${fmtMs(firstLive)}`,
    };
  } finally {
    for (const s of sessions) s.destroy();
    await zest?.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}
