/**
 * Remote API put → subscriber (issue 10): a zenoh-ts publisher and a zenoh-ts subscriber, each in
 * a process of its own (bench/workers/remote-client.mjs `pubsub-split`, at most 1,000 samples in
 * flight, 100-byte payloads) through one zest child, samples/s and latency; against the same
 * router's REST PUT req/s (autocannon, 32 connections, 100 bytes), measured in the same run. Also
 * reported: both sessions in one process, and the router alone, fed pre-encoded Put frames by a
 * `ws` client (what a leaner client could reach).
 */
import { WebSocket } from "ws";
import { fmtInt, fmtMs } from "../lib/format.js";
import { fire, loadFigures, loadNotes, type RequestSpec } from "../lib/load.js";
import { interferenceNotes } from "../lib/proc.js";
import type { BenchResult } from "../lib/types.js";
import { runZenohTs, spawnRemoteZest } from "./remote-lib.js";
import { textPut } from "../lib/put-pair.js";

const TARGET = 3;
const SECONDS = 5;
const WINDOW = 1_000;

interface PubSubFigures {
  samples: number;
  samplesPerSec: number;
  p50Ms: number;
  p99Ms: number;
  lost: number;
  clientCpuPct: number;
  cpuSeconds: number;
}

function open(url: string): Promise<WebSocket> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url);
    ws.once("open", () => resolve(ws));
    ws.once("error", reject);
  });
}

/** Raw frames: a subscriber on bench/raw/**, then Put frames with at most WINDOW in flight. */
async function rawFrames(url: string, seconds: number): Promise<number> {
  const pub = await open(url);
  const sub = await open(url);
  // DeclareSubscriber, sequence id 1, subscriber id 1, "bench/raw/**", locality any.
  sub.send(
    Buffer.concat([Buffer.from([0x82, 1, 0, 0, 0, 1, 0, 0, 0, 12]), Buffer.from("bench/raw/**"), Buffer.from([2])]),
  );
  await new Promise((r) => sub.once("message", r));
  let received = 0;
  let wake: (() => void) | undefined;
  sub.on("message", () => {
    received++;
    wake?.();
  });
  // Put "bench/raw/k", 100 bytes, zenoh/bytes, no attachment or timestamp, default QoS.
  const fixed = Buffer.concat([
    Buffer.from([14, 11]),
    Buffer.from("bench/raw/k"),
    Buffer.from([100]),
    Buffer.alloc(100, 0x61),
    Buffer.from([0, 0, 0, 0, 0, 0xa5]),
  ]);
  let sent = 0;
  const runFor = async (ms: number): Promise<void> => {
    const end = performance.now() + ms;
    while (performance.now() < end) {
      while (sent - received >= WINDOW) await new Promise<void>((r) => (wake = r));
      for (let i = 0; i < 100; i++, sent++) pub.send(fixed);
    }
    while (received < sent) await new Promise<void>((r) => (wake = r));
  };
  await runFor(1000);
  const r0 = received;
  const t0 = performance.now();
  await runFor(seconds * 1000);
  const rate = (received - r0) / ((performance.now() - t0) / 1000);
  pub.close();
  sub.close();
  return rate;
}

export async function run(): Promise<BenchResult> {
  const { zest, locator, wsUrl } = await spawnRemoteZest("zest-remote-pubsub");
  try {
    const spec: RequestSpec = textPut("/bench/rest/put");
    await fire(zest, spec, { connections: 32, seconds: 1 }); // warm-up
    const rest = await fire(zest, spec, { connections: 32, seconds: SECONDS });
    const cpu0 = zest.cpuSeconds();
    const t0 = performance.now();
    // The publisher and the subscriber as two applications: two processes.
    const ws = await runZenohTs<PubSubFigures & { subscriberCpuPct: number }>(zest, [
      "pubsub-split",
      locator,
      String(SECONDS),
      String(WINDOW),
    ]);
    const zestCpuPct = (100 * (zest.cpuSeconds() - cpu0)) / ((performance.now() - t0) / 1000);
    // Both sessions in one process, as this benchmark first ran: that process's core is the limit.
    const one = await runZenohTs<PubSubFigures>(zest, ["pubsub", locator, String(SECONDS), String(WINDOW)]);
    const raw = await rawFrames(wsUrl, SECONDS);
    const ratio = ws.out.samplesPerSec / rest.reqPerSec;
    const notes = [...loadNotes("REST PUT", rest), ...interferenceNotes("zenoh-ts", ws)];
    if (ws.out.lost > 0) notes.push(`${ws.out.lost} samples lost`);
    for (const [who, pct] of [
      ["publisher", ws.out.clientCpuPct],
      ["subscriber", ws.out.subscriberCpuPct],
    ] as const)
      if (pct > 85)
        notes.push(
          `the zenoh-ts ${who} process used ${Math.round(pct)}% of a core: the client, not the router, set the pace`,
        );
    return {
      name: "remote-pubsub",
      figures: {
        zenohTsSamplesPerSec: ws.out.samplesPerSec,
        zenohTsP50Ms: ws.out.p50Ms,
        zenohTsP99Ms: ws.out.p99Ms,
        zenohTsPublisherCpuPct: ws.out.clientCpuPct,
        zenohTsSubscriberCpuPct: ws.out.subscriberCpuPct,
        zenohTsZestCpuPct: zestCpuPct,
        oneProcessSamplesPerSec: one.out.samplesPerSec,
        oneProcessP99Ms: one.out.p99Ms,
        oneProcessClientCpuPct: one.out.clientCpuPct,
        rawFramesSamplesPerSec: raw,
        rawOverRestRatio: raw / rest.reqPerSec,
        ...loadFigures("restPut", rest),
      },
      ratio,
      target: `>= ${TARGET}x`,
      pass: ratio >= TARGET && ws.out.lost === 0,
      summary: `zenoh-ts publisher and subscriber processes ${fmtInt(ws.out.samplesPerSec)} samples/s (p99 ${fmtMs(ws.out.p99Ms)}) / REST PUT ${fmtInt(rest.reqPerSec)} req/s; both in one process ${fmtInt(one.out.samplesPerSec)} samples/s; raw Put frames ${fmtInt(raw)} samples/s`,
      interferencePct: Math.max(rest.otherCpuPct, rest.stealPct, ws.otherCpuPct, ws.stealPct),
      notes,
    };
  } finally {
    await zest.stop();
  }
}
