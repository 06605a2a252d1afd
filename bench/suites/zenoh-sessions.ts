/**
 * 1,000 concurrent zenoh sessions (issues 25 and 35): the RSS a zest child with the zenoh door
 * gains when 1,000 lean in-bench clients (bench/lib/zenoh-client.ts) open a session each and
 * stay connected, per session, beside what zenoh's own router (the wheel's Rust runtime, zenohd
 * without plugins) gains for the same 1,000 sessions, in the same run; each router's baseline
 * is itself with no session. zest's heap is settled (node --expose-gc, three collections)
 * before each reading. Runs in a loopback-only namespace, as every zenoh router here
 * (bench/lib/zenoh.ts); without zenoh-python the router side is left out, with a note.
 */
import { setTimeout as sleep } from "node:timers/promises";
import { fmtInt } from "../lib/format.js";
import { interferenceNotes, startInterference } from "../lib/proc.js";
import type { BenchResult } from "../lib/types.js";
import { LeanZenohClient } from "../lib/zenoh-client.js";
import {
  inLoopbackNamespace,
  rssBytes,
  spawnZenohRouter,
  spawnZenohZest,
  type ZenohZest,
  zenohRouterSkip,
} from "../lib/zenoh.js";

const SESSIONS = 1_000;
/** Handshakes in flight at once. */
const OPEN_BATCH = 100;
const TARGET_KB = 30;
/** zest's RSS per session over zenoh's router's (issue 35). */
const TARGET_RATIO = 1.0;
/** Both routers take 1,000 sessions from one address (zenohd's own default cap is 1,000 sessions). */
const MAX_SESSIONS = 2_000;

/** Settles zest's heap (a REST PUT the door plugin answers with gc()), then reads its RSS. */
async function settledZestRss(zest: ZenohZest): Promise<number> {
  const res = await fetch(`${zest.url}/bench/zenoh/gc`, { method: "PUT", body: "x" });
  await res.arrayBuffer();
  await sleep(500);
  return rssBytes(zest.pid);
}

/** What one router gained for the sessions. */
interface SessionsFigures {
  before: number;
  after: number;
  alive: number;
  openSeconds: number;
  perSessionKb: number;
}

/**
 * Opens 1,000 sessions to `router` (after one opened and closed, so its code paths are loaded in
 * the baseline), reads its RSS before and after with `rss`, and closes them.
 */
async function sessionsOn(router: ZenohZest, rss: () => Promise<number>): Promise<SessionsFigures> {
  const clients: LeanZenohClient[] = [];
  try {
    return await openSessions(router, rss, clients);
  } catch (err) {
    throw new Error(`${router.label}, ${clients.length} sessions open: ${err instanceof Error ? err.message : err}`);
  } finally {
    for (const c of clients) c.close();
  }
}

async function openSessions(
  router: ZenohZest,
  rss: () => Promise<number>,
  clients: LeanZenohClient[],
): Promise<SessionsFigures> {
  {
    (await LeanZenohClient.connect("127.0.0.1", router.port)).close();
    await sleep(300);
    const before = await rss();
    const t0 = performance.now();
    for (let i = 0; i < SESSIONS; i += OPEN_BATCH) {
      const batch = await Promise.all(
        Array.from({ length: Math.min(OPEN_BATCH, SESSIONS - i) }, () =>
          LeanZenohClient.connect("127.0.0.1", router.port),
        ),
      );
      clients.push(...batch);
    }
    const openSeconds = (performance.now() - t0) / 1000;
    await sleep(1_000);
    const after = await rss();
    const alive = clients.filter((c) => !c.socket.destroyed).length;
    return { before, after, alive, openSeconds, perSessionKb: (after - before) / SESSIONS / 1024 };
  }
}

async function measure(): Promise<BenchResult> {
  const noRouter = zenohRouterSkip();
  const zest = await spawnZenohZest(
    "zest",
    ["--cfg", `transport/unicast/max_sessions_per_address:${MAX_SESSIONS}`],
    ["--expose-gc"],
  );
  let router: ZenohZest | undefined;
  try {
    // zenoh's router drops a handshake past 100 pending ones (accept_pending), which a batch of
    // 100 reaches now and then on a loaded host: raised, as max_sessions, so both take the same load.
    router = noRouter
      ? undefined
      : await spawnZenohRouter([
          `transport/unicast/max_sessions=${MAX_SESSIONS}`,
          `transport/unicast/accept_pending=${MAX_SESSIONS}`,
        ]);
    const interference = startInterference(router ? [zest.pid, router.pid] : [zest.pid]);
    const z = await sessionsOn(zest, () => settledZestRss(zest));
    await sleep(500);
    const r = router ? await sessionsOn(router, async () => rssBytes(router!.pid)) : undefined;
    const f = interference();
    const notes = interferenceNotes("sessions", f);
    if (z.alive < SESSIONS) notes.push(`${SESSIONS - z.alive} sessions were closed by zest`);
    if (r && r.alive < SESSIONS) notes.push(`${SESSIONS - r.alive} sessions were closed by zenoh's router`);
    if (noRouter) notes.push(`no zenoh router side: ${noRouter}`);
    const ratio = r ? z.perSessionKb / r.perSessionKb : z.after / z.before;
    const routerPart = r
      ? `; zenoh's router RSS ${(r.after / 2 ** 20).toFixed(1)} MB / ${(r.before / 2 ** 20).toFixed(1)} MB = ${r.perSessionKb.toFixed(1)} KB per session (opened in ${r.openSeconds.toFixed(1)} s)`
      : "";
    return {
      name: "zenoh-sessions",
      figures: {
        sessions: z.alive,
        rssBeforeMb: z.before / 2 ** 20,
        rssAfterMb: z.after / 2 ** 20,
        perSessionKb: z.perSessionKb,
        openSeconds: z.openSeconds,
        routerSessions: r?.alive ?? Number.NaN,
        routerRssBeforeMb: r ? r.before / 2 ** 20 : Number.NaN,
        routerRssAfterMb: r ? r.after / 2 ** 20 : Number.NaN,
        routerPerSessionKb: r?.perSessionKb ?? Number.NaN,
        routerOpenSeconds: r?.openSeconds ?? Number.NaN,
        otherCpuPct: f.otherCpuPct,
      },
      ratio,
      target: r
        ? `<= ${TARGET_RATIO.toFixed(1)}x zenoh's router's RSS per session, and <= ${TARGET_KB} KB`
        : `<= ${TARGET_KB} KB RSS per session`,
      pass:
        z.perSessionKb <= TARGET_KB &&
        z.alive === SESSIONS &&
        (r === undefined || (ratio <= TARGET_RATIO && r.alive === SESSIONS)),
      summary: `${fmtInt(z.alive)} sessions: zest RSS ${(z.after / 2 ** 20).toFixed(1)} MB / ${(z.before / 2 ** 20).toFixed(1)} MB with none = ${z.perSessionKb.toFixed(1)} KB per session (opened in ${z.openSeconds.toFixed(1)} s)${routerPart}`,
      notes,
      interferencePct: f.otherCpuPct,
    };
  } finally {
    await zest.stop();
    await router?.stop();
  }
}

export function run(): Promise<BenchResult> {
  return inLoopbackNamespace("zenoh-sessions", measure);
}
