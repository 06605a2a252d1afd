/**
 * 1,000 concurrent zenoh sessions (issue 25): the RSS a zest child with the zenoh door gains
 * when 1,000 lean in-bench clients (bench/lib/zenoh-client.ts) open a session each and stay
 * connected, per session; the baseline is the same router with no session, measured in the same
 * run. The heap is settled (node --expose-gc, three collections) before each reading.
 */
import { setTimeout as sleep } from "node:timers/promises";
import { fmtInt } from "../lib/format.js";
import { interferenceNotes, startInterference } from "../lib/proc.js";
import type { BenchResult } from "../lib/types.js";
import { LeanZenohClient } from "../lib/zenoh-client.js";
import { rssBytes, spawnZenohZest, type ZenohZest } from "../lib/zenoh.js";

const SESSIONS = 1_000;
/** Handshakes in flight at once. */
const OPEN_BATCH = 100;
const TARGET_KB = 30;

/** Settles the router's heap (a REST PUT the door plugin answers with gc()), then reads its RSS. */
async function settledRss(zest: ZenohZest): Promise<number> {
  const res = await fetch(`${zest.url}/bench/zenoh/gc`, { method: "PUT", body: "x" });
  await res.arrayBuffer();
  await sleep(500);
  return rssBytes(zest.pid);
}

export async function run(): Promise<BenchResult> {
  // 1,000 sessions from one address: past the per-address cap every door has by default (256).
  const zest = await spawnZenohZest(
    "zest",
    ["--cfg", "transport/unicast/max_sessions_per_address:2000"],
    ["--expose-gc"],
  );
  const clients: LeanZenohClient[] = [];
  const interference = startInterference([zest.pid]);
  try {
    // One session opened and closed first, so the door's code paths are loaded and compiled in the baseline.
    (await LeanZenohClient.connect("127.0.0.1", zest.port)).close();
    await sleep(300);
    const before = await settledRss(zest);
    const t0 = performance.now();
    for (let i = 0; i < SESSIONS; i += OPEN_BATCH) {
      const batch = await Promise.all(
        Array.from({ length: Math.min(OPEN_BATCH, SESSIONS - i) }, () =>
          LeanZenohClient.connect("127.0.0.1", zest.port),
        ),
      );
      clients.push(...batch);
    }
    const openSeconds = (performance.now() - t0) / 1000;
    await sleep(1_000);
    const after = await settledRss(zest);
    const alive = clients.filter((c) => !c.socket.destroyed).length;
    const f = interference();
    const perSessionKb = (after - before) / SESSIONS / 1024;
    const notes = interferenceNotes("sessions", f);
    if (alive < SESSIONS) notes.push(`${SESSIONS - alive} sessions were closed by the router`);
    return {
      name: "zenoh-sessions",
      figures: {
        sessions: alive,
        rssBeforeMb: before / 2 ** 20,
        rssAfterMb: after / 2 ** 20,
        perSessionKb,
        openSeconds,
        otherCpuPct: f.otherCpuPct,
      },
      ratio: after / before,
      target: `<= ${TARGET_KB} KB RSS per session`,
      pass: perSessionKb <= TARGET_KB && alive === SESSIONS,
      summary: `${fmtInt(alive)} sessions: zest RSS ${(after / 2 ** 20).toFixed(1)} MB / ${(before / 2 ** 20).toFixed(1)} MB with none = ${perSessionKb.toFixed(1)} KB per session (opened in ${openSeconds.toFixed(1)} s)`,
      notes,
      interferencePct: f.otherCpuPct,
    };
  } finally {
    for (const c of clients) c.close();
    await zest.stop();
  }
}
