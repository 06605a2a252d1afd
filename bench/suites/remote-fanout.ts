/**
 * Remote API fan-out (issue 10): 1,000 samples/s for 10 s from one zenoh-ts publisher to 100
 * zenoh-ts subscriber connections (bench/workers/remote-client.mjs), latency of every delivery and
 * losses; then the same fan-out through SSE (100 SSE streams, 1,000 HTTP PUTs/s), for comparison,
 * against a fresh router. Latencies are measured in the process that sends and receives.
 */
import http from "node:http";
import net from "node:net";
import { setTimeout as sleep } from "node:timers/promises";
import { fmtInt, fmtMs } from "../lib/format.js";
import { interferenceNotes, spawnZest } from "../lib/proc.js";
import { connectRawWs, type RawWs } from "../lib/raw-ws.js";
import type { BenchResult } from "../lib/types.js";
import { paced } from "../workers/paced.mjs";
import { runZenohTs, spawnRemoteZest } from "./remote-lib.js";

const SUBSCRIBERS = 100;
const RATE = 1_000;
const SECONDS = 10;
const WARMUP_SECONDS = 1;
const TARGET_P99_MS = 20;
const VALUE_MARK = '"value": "';

interface FanoutFigures {
  samples: number;
  rateAchieved: number;
  deliveries: number;
  lost: number;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
  clientCpuPct: number;
  cpuSeconds: number;
}

/**
 * `WARMUP_SECONDS` of samples numbered from `total` on (which the receivers do not count), then
 * the `total` measured ones: the router of each run is a fresh process, and its first few
 * hundred milliseconds of fan-out run while V8 is still compiling that path, as in the other
 * benchmarks' uncounted warm-up.
 */
async function warmUpThenRun(total: number, send: (seq: number) => void): Promise<void> {
  await paced(RATE * WARMUP_SECONDS, total, RATE, send);
  await sleep(200);
  await paced(total, 0, RATE, send);
}

/** SSE fan-out: raw-socket SSE readers, values `<seq>:<sent ms>`. */
async function sseFanout(url: URL): Promise<{ p50Ms: number; p99Ms: number; lost: number; delivered: number }> {
  const total = RATE * SECONDS;
  const lat: number[] = [];
  const seen: Uint8Array[] = [];
  const sockets: net.Socket[] = [];
  for (let i = 0; i < SUBSCRIBERS; i++) {
    const got = new Uint8Array(total);
    seen.push(got);
    await new Promise<void>((resolve, reject) => {
      const socket = net.connect({ host: url.hostname, port: Number(url.port) }, () => {
        socket.write(`GET /bench/fan/** HTTP/1.1\r\nHost: ${url.host}\r\nAccept: text/event-stream\r\n\r\n`);
      });
      sockets.push(socket);
      socket.setEncoding("latin1");
      socket.setNoDelay(true);
      let buf = "";
      let open = false;
      socket.on("data", (chunk: string) => {
        const now = performance.now();
        buf += chunk;
        if (!open) {
          const end = buf.indexOf("\r\n\r\n");
          if (end === -1) return;
          open = true;
          buf = buf.slice(end + 4);
          resolve();
        }
        let at: number;
        for (at = buf.indexOf(VALUE_MARK); at !== -1; at = buf.indexOf(VALUE_MARK)) {
          const start = at + VALUE_MARK.length;
          const end = buf.indexOf('"', start);
          if (end === -1) break;
          const colon = buf.indexOf(":", start);
          const seq = Number(buf.slice(start, colon));
          if (seq < total) {
            got[seq] = 1;
            lat.push(now - Number(buf.slice(colon + 1, end)));
          }
          buf = buf.slice(end + 1);
        }
        if (at === -1) buf = buf.slice(Math.max(0, buf.length - VALUE_MARK.length));
      });
      socket.on("error", reject);
    });
  }
  await sleep(300);
  const agent = new http.Agent({ keepAlive: true, maxSockets: 32 });
  const put = (body: string): Promise<void> =>
    new Promise((resolve) => {
      const req = http.request(
        {
          host: url.hostname,
          port: url.port,
          path: "/bench/fan/k",
          method: "PUT",
          agent,
          headers: { "content-type": "text/plain", "content-length": body.length },
        },
        (res) => {
          res.resume();
          res.on("end", () => resolve());
        },
      );
      req.on("error", () => resolve());
      req.end(body);
    });
  const pending: Array<Promise<void>> = [];
  await warmUpThenRun(total, (seq) => pending.push(put(`${seq}:${performance.now().toFixed(3)}`)));
  await Promise.all(pending);
  const until = performance.now() + 5000;
  while (lat.length < total * SUBSCRIBERS && performance.now() < until) await sleep(20);
  for (const s of sockets) s.destroy();
  agent.destroy();
  let lost = 0;
  for (const g of seen) for (const v of g) if (v === 0) lost++;
  const sorted = Float64Array.from(lat).sort();
  return {
    p50Ms: sorted[Math.floor(0.5 * sorted.length)] ?? Number.NaN,
    p99Ms: sorted[Math.min(sorted.length - 1, Math.floor(0.99 * sorted.length))] ?? Number.NaN,
    lost,
    delivered: lat.length,
  };
}

/**
 * The same fan-out with lean WebSocket clients in this process: 100 raw-socket connections
 * (`connectRawWs`, as the SSE comparison's readers are raw sockets) that each declare a
 * subscriber with one DeclareSubscriber frame and read only the sequence number and send time
 * out of each InSample frame, and a publisher that sends Put frames on the same fixed schedule.
 * What the router itself sustains, without a client library's own decoding (one zenoh-ts process
 * decoding 100,000 frames/s is the bottleneck of the run above).
 */
async function leanFanout(wsUrl: string): Promise<{ p50Ms: number; p99Ms: number; lost: number; delivered: number }> {
  const total = RATE * SECONDS;
  const lat = new Float64Array(total * SUBSCRIBERS);
  let n = 0;
  const seen: Uint8Array[] = [];
  const subs: RawWs[] = [];
  const key = Buffer.from("bench/fan/**");
  for (let i = 0; i < SUBSCRIBERS; i++) {
    const got = new Uint8Array(total);
    seen.push(got);
    let declared: () => void = () => {};
    const ack = new Promise<void>((r) => (declared = r));
    const ws = await connectRawWs(wsUrl, (data, now) => {
      // InSample (5): u8 id, u32 subscriber id, key (varint length < 128, bytes), payload (varint 100, bytes).
      if (data[0] !== 5) return declared();
      const payloadAt = 5 + 1 + data[5]! + 1;
      const seq = data.readUInt32LE(payloadAt);
      if (seq < total) {
        got[seq] = 1;
        if (n < lat.length) lat[n++] = now - data.readDoubleLE(payloadAt + 4);
      }
    });
    subs.push(ws);
    // DeclareSubscriber (2) with a sequence id (flag 0x80): seq 1, subscriber id 1, key, locality any (2).
    ws.send(Buffer.concat([Buffer.from([0x82, 1, 0, 0, 0, 1, 0, 0, 0, key.length]), key, Buffer.from([2])]));
    await ack;
  }
  const pub = await connectRawWs(wsUrl, () => {});
  const pubKey = Buffer.from("bench/fan/k");
  // Put (14): key, payload (100 bytes: u32 seq, f64 send time, padding), then encoding, no attachment, no timestamp, default QoS.
  const frame = Buffer.concat([
    Buffer.from([14, pubKey.length]),
    pubKey,
    Buffer.from([100]),
    Buffer.alloc(100),
    Buffer.from([0, 0, 0, 0, 0, 0xa5]),
  ]);
  const payloadAt = 2 + pubKey.length + 1;
  await sleep(200);
  await warmUpThenRun(total, (seq) => {
    frame.writeUInt32LE(seq, payloadAt);
    frame.writeDoubleLE(performance.now(), payloadAt + 4);
    pub.send(frame); // copied into the masked frame
  });
  const until = performance.now() + 5000;
  while (n < lat.length && performance.now() < until) await sleep(20);
  pub.close();
  for (const s of subs) s.close();
  let lost = 0;
  for (const g of seen) for (const v of g) if (v === 0) lost++;
  const sorted = lat.subarray(0, n).sort();
  return {
    p50Ms: sorted[Math.floor(0.5 * n)] ?? Number.NaN,
    p99Ms: sorted[Math.min(n - 1, Math.floor(0.99 * n))] ?? Number.NaN,
    lost,
    delivered: n,
  };
}

export async function run(): Promise<BenchResult> {
  const storages = ["--cfg", "plugins/storage_manager:{storages:{}}"];
  const { zest, locator } = await spawnRemoteZest("zest-remote-fanout", storages);
  let ws: Awaited<ReturnType<typeof runZenohTs<FanoutFigures>>>;
  let zestCpuPct: number;
  try {
    const cpu0 = zest.cpuSeconds();
    const t0 = performance.now();
    ws = await runZenohTs<FanoutFigures>(zest, ["fanout", locator, String(SUBSCRIBERS), String(RATE), String(SECONDS)]);
    zestCpuPct = (100 * (zest.cpuSeconds() - cpu0)) / ((performance.now() - t0) / 1000);
  } finally {
    await zest.stop();
  }
  const leanZest = await spawnRemoteZest("zest-remote-fanout-lean", storages);
  let lean: Awaited<ReturnType<typeof leanFanout>>;
  let leanZestCpuPct: number;
  try {
    const cpu0 = leanZest.zest.cpuSeconds();
    const t0 = performance.now();
    lean = await leanFanout(leanZest.wsUrl);
    leanZestCpuPct = (100 * (leanZest.zest.cpuSeconds() - cpu0)) / ((performance.now() - t0) / 1000);
  } finally {
    await leanZest.zest.stop();
  }
  const sseZest = await spawnZest("zest-sse-fanout", storages);
  let sse: Awaited<ReturnType<typeof sseFanout>>;
  try {
    sse = await sseFanout(new URL(sseZest.url));
  } finally {
    await sseZest.stop();
  }
  const w = ws.out;
  const notes = [...interferenceNotes("zenoh-ts", ws)];
  if (w.lost > 0) notes.push(`${fmtInt(w.lost)} deliveries to zenoh-ts subscribers lost`);
  if (lean.lost > 0) notes.push(`${fmtInt(lean.lost)} deliveries to lean WebSocket subscribers lost`);
  if (w.clientCpuPct > 85)
    notes.push(
      `the zenoh-ts client process used ${Math.round(w.clientCpuPct)}% of a core: the receivers, not the router, set its pace`,
    );
  if (w.rateAchieved < RATE * 0.95)
    notes.push(`the zenoh-ts publisher reached ${Math.round(w.rateAchieved)} samples/s, not ${RATE}`);
  return {
    name: "remote-fanout",
    figures: {
      subscribers: SUBSCRIBERS,
      samples: w.samples,
      wsRatePerSec: w.rateAchieved,
      wsDeliveries: w.deliveries,
      wsLost: w.lost,
      wsP50Ms: w.p50Ms,
      wsP99Ms: w.p99Ms,
      wsMaxMs: w.maxMs,
      wsClientCpuPct: w.clientCpuPct,
      wsZestCpuPct: zestCpuPct,
      leanP50Ms: lean.p50Ms,
      leanP99Ms: lean.p99Ms,
      leanLost: lean.lost,
      leanDeliveries: lean.delivered,
      leanZestCpuPct,
      sseP50Ms: sse.p50Ms,
      sseP99Ms: sse.p99Ms,
      sseLost: sse.lost,
    },
    // The router's figure: lean receivers, like the SSE comparison's raw-socket readers.
    ratio: sse.p99Ms / lean.p99Ms,
    target: `WebSocket p99 <= ${TARGET_P99_MS} ms with lean receivers, nothing lost (ratio: SSE p99 / WebSocket p99)`,
    pass: lean.p99Ms <= TARGET_P99_MS && lean.lost === 0,
    summary: `lean WebSocket receivers p50 ${fmtMs(lean.p50Ms)} p99 ${fmtMs(lean.p99Ms)}, ${fmtInt(lean.lost)} lost (router ${Math.round(leanZestCpuPct)}% of a core); zenoh-ts receivers in one process p50 ${fmtMs(w.p50Ms)} p99 ${fmtMs(w.p99Ms)}, ${fmtInt(w.lost)} lost; SSE p50 ${fmtMs(sse.p50Ms)} p99 ${fmtMs(sse.p99Ms)}, ${fmtInt(sse.lost)} lost`,
    interferencePct: Math.max(ws.otherCpuPct, ws.stealPct),
    notes,
  };
}
