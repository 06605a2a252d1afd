/**
 * A zenoh put reaching an SSE client (issue 25): a lean zenoh client (bench/lib/zenoh-client.ts)
 * puts 10,000 samples a second for 5 s into a zest child with the zenoh door, each carrying its
 * sequence number and send time (`performance.now()`; the SSE client is in this process, so the
 * clocks agree); one SSE client reads `/bench/zsse/**` on a raw socket. Reports p50/p99 of put to
 * event and what was lost. The pico examples cannot put at a set rate or carry a send time,
 * hence the lean client; it speaks the same wire protocol. The baseline, in the same run, is the
 * floor of the host: the same paced stream through a bare node:http relay process
 * (baselines/sse-relay.mjs) to the same SSE reader; the ratio is zest's p99 over the relay's.
 */
import { Buffer } from "node:buffer";
import http from "node:http";
import { setTimeout as sleep } from "node:timers/promises";
import { fmtInt, fmtMs } from "../lib/format.js";
import { interferenceNotes, type ServerProcess, spawnBaseline, startInterference } from "../lib/proc.js";
import { openSseStream, paced } from "../lib/sse-stream.js";
import type { BenchResult } from "../lib/types.js";
import { LeanZenohClient } from "../lib/zenoh-client.js";
import { percentile, spawnZenohZest } from "../lib/zenoh.js";

const RATE = 10_000;
const SECONDS = 5;
/** One second of puts at the rate, not counted: the router compiles its hot paths meanwhile. */
const WARMUP_PUTS = RATE;
const TARGET_P99_MS = 5;
const KEY = "bench/zsse/k";
const DRAIN_MS = 3_000;

/** What one side measured. */
interface Side {
  /** 100 ms windows of send time with an event over the target. */
  slowWindows: number;
  p50: number;
  p99: number;
  lost: number;
  delivered: number;
  duplicates: number;
  putsPerSec: number;
  serverCpuPct: number;
  otherCpuPct: number;
  stealPct: number;
}

/**
 * Streams RATE × SECONDS values through `send` (after a warm-up) to the SSE stream at `url`,
 * paced, and measures each value's time to its event.
 */
async function measure(server: ServerProcess, send: (payload: string) => void): Promise<Side> {
  const total = RATE * SECONDS;
  const seen = new Uint8Array(total);
  const latencies: number[] = [];
  let duplicates = 0;
  /** The 100 ms windows (by send time) holding an event slower than the target: few means stalls. */
  const slowWindows = new Set<number>();
  const sub = await openSseStream(new URL(server.url), "/bench/zsse/**", (value, now) => {
    const colon = value.indexOf(":");
    const seq = Number(value.slice(0, colon));
    if (seq < 0) return; // warm-up
    if (seen[seq] === 1) duplicates++;
    seen[seq] = 1;
    const sentAt = Number(value.slice(colon + 1));
    latencies.push(now - sentAt);
    if (now - sentAt > TARGET_P99_MS) slowWindows.add(Math.floor(sentAt / 100));
  });
  try {
    await paced(RATE, WARMUP_PUTS, () => send(`-1:${performance.now()}`));
    await sleep(300);
    const interference = startInterference([server.pid]);
    const cpu0 = server.cpuSeconds();
    const t0 = performance.now();
    await paced(RATE, total, (seq) => send(`${seq}:${performance.now()}`));
    const sendSeconds = (performance.now() - t0) / 1000;
    const deadline = performance.now() + DRAIN_MS;
    while (latencies.length < total && performance.now() < deadline) await sleep(50);
    const serverCpuPct = (100 * (server.cpuSeconds() - cpu0)) / ((performance.now() - t0) / 1000);
    const f = interference();
    let lost = 0;
    for (const v of seen) if (v === 0) lost++;
    return {
      p50: percentile([...latencies], 50),
      p99: percentile(latencies, 99),
      lost,
      delivered: latencies.length,
      duplicates,
      slowWindows: slowWindows.size,
      putsPerSec: total / sendSeconds,
      serverCpuPct,
      ...f,
    };
  } finally {
    sub.destroy();
  }
}

/** The relay baseline: one chunked POST carrying a line per value. */
async function relaySide(): Promise<Side> {
  const relay = await spawnBaseline("sse-relay.mjs", [], "relay");
  try {
    const url = new URL(relay.url);
    const req = http.request({ host: url.hostname, port: url.port, method: "POST", path: "/in" });
    req.on("error", () => {});
    req.flushHeaders();
    req.setNoDelay(true);
    try {
      return await measure(relay, (payload) => req.write(`${payload}\n`));
    } finally {
      req.destroy();
    }
  } finally {
    await relay.stop();
  }
}

/** zest: a lean zenoh client's puts, read back from zest's SSE. */
async function zestSide(): Promise<Side> {
  const zest = await spawnZenohZest();
  try {
    const client = await LeanZenohClient.connect("127.0.0.1", zest.port);
    try {
      return await measure(zest, (payload) => client.put(KEY, Buffer.from(payload, "latin1")));
    } finally {
      client.close();
    }
  } finally {
    await zest.stop();
  }
}

export async function run(): Promise<BenchResult> {
  const base = await relaySide();
  const z = await zestSide();
  const notes = [
    ...interferenceNotes("zest", { otherCpuPct: z.otherCpuPct, stealPct: z.stealPct }),
    ...interferenceNotes("relay", { otherCpuPct: base.otherCpuPct, stealPct: base.stealPct }),
  ];
  if (z.duplicates > 0) notes.push(`${z.duplicates} events arrived twice through zest`);
  if (base.lost > 0) notes.push(`the relay baseline lost ${base.lost}: the host, not zest, drops them`);
  return {
    name: "zenoh-sse",
    figures: {
      putsPerSec: z.putsPerSec,
      p50Ms: z.p50,
      p99Ms: z.p99,
      lost: z.lost,
      relayP50Ms: base.p50,
      relayP99Ms: base.p99,
      relayLost: base.lost,
      slowWindows: z.slowWindows,
      relaySlowWindows: base.slowWindows,
      zestCpuPct: z.serverCpuPct,
      relayCpuPct: base.serverCpuPct,
      otherCpuPct: Math.max(z.otherCpuPct, base.otherCpuPct),
    },
    ratio: z.p99 / base.p99,
    target: `p99 <= ${TARGET_P99_MS} ms, nothing lost`,
    pass: z.p99 <= TARGET_P99_MS && z.lost === 0,
    summary: `${fmtInt(RATE * SECONDS)} zenoh puts at ${fmtInt(z.putsPerSec)}/s to one SSE client: p50 ${fmtMs(z.p50)}, p99 ${fmtMs(z.p99)}, ${fmtInt(z.lost)} lost, events over ${TARGET_P99_MS} ms in ${z.slowWindows} of ${SECONDS * 10} 100-ms windows (zest at ${Math.round(z.serverCpuPct)}% of a core) / bare node:http relay p50 ${fmtMs(base.p50)}, p99 ${fmtMs(base.p99)}, ${fmtInt(base.lost)} lost, slow in ${base.slowWindows} windows`,
    notes,
    interferencePct: Math.max(z.otherCpuPct, base.otherCpuPct),
  };
}
