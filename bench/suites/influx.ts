/**
 * InfluxDB volume (issue 3), against a real `influxd` (InfluxDB 1.x, started by
 * `startInfluxd()` from test/support on free loopback ports, data in a temp dir):
 *
 * 1. PUT rate of one key: PUTs of 100 bytes (text/plain, autocannon, 32 connections) on
 *    `ifx/one` in an InfluxDB storage, against the same PUTs on `mem/one` in a memory storage of
 *    the same zest child process (exactly these two storages). Runs alternate. influxd's CPU is
 *    counted as the system's, not as interference.
 * 2. Range query over 10,000 points of one key: the points of `ifx/series` are written straight
 *    to InfluxDB's `/write` API, in one request of line protocol exactly as the volume writes them
 *    (measurement = key, one field `sample` = `<Timestamp.encode()> <base64 payload> <encoding>`,
 *    point time = the sample's Unix ns), 1 ms apart; then `GET /ifx/series?_time=[a..b]` covering
 *    all of them is timed (1 warm-up, then QUERY_RUNS runs: median and best). For reference, the
 *    same SELECT sent to InfluxDB's `/query` directly is timed too.
 */
import { fmtInt, fmtMs, fmtNum } from "../lib/format.js";
import { httpGetText } from "../lib/http.js";
import { loadNotes } from "../lib/load.js";
import { TEXT_100 } from "../lib/payloads.js";
import { interferenceNotes, type ServerProcess, spawnZest, startInterference } from "../lib/proc.js";
import { memory, storagesCfg } from "../lib/storages.js";
import { childPidsNamed, compareSystems, systemFigures } from "../lib/system-load.js";
import type { BenchResult } from "../lib/types.js";
import { type InfluxdHandle, startInfluxd } from "../../test/support/influxdb.js";
import { textPut } from "../lib/put-pair.js";

const POINTS = 10_000;
const QUERY_RUNS = 5;
const DB = "zest_bench";
const SERIES_KEY = "ifx/series";
/** Router id in the `timestamp` field of the points written directly. */
const WRITER_ID = "BE";

/** Unix ns → NTP64 (as `unixNanosToNtp64` in src/core/timestamp.ts: rounded up, exact round trip). */
function ntp64(ns: bigint): bigint {
  const NANOS = 1_000_000_000n;
  return ((ns / NANOS) << 32n) + (((ns % NANOS) << 32n) + NANOS - 1n) / NANOS;
}

/** Unix ns → RFC 3339 with 9 fraction digits. */
function rfc3339(ns: bigint): string {
  const iso = new Date(Number(ns / 1_000_000n)).toISOString();
  return `${iso.slice(0, 19)}.${(ns % 1_000_000_000n).toString().padStart(9, "0")}Z`;
}

/** `POINTS` line-protocol points of `key`, 1 ms apart, the last one `endNs`. */
function seriesLines(key: string, endNs: bigint): { body: string; startNs: bigint } {
  const startNs = endNs - BigInt(POINTS - 1) * 1_000_000n;
  const lines: string[] = [];
  for (let i = 0; i < POINTS; i++) {
    const ns = startNs + BigInt(i) * 1_000_000n;
    const value = Buffer.from(`reading ${i}`).toString("base64");
    const ts = `${ntp64(ns).toString(16).padStart(16, "0")}/${WRITER_ID}`;
    lines.push(`${key.replace(/[, ]/g, "\\$&")} sample="${ts} ${value} text/plain" ${ns}`);
  }
  return { body: `${lines.join("\n")}\n`, startNs };
}

async function timed(fn: () => Promise<void>): Promise<number> {
  const t0 = performance.now();
  await fn();
  return performance.now() - t0;
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

export async function run(): Promise<BenchResult> {
  let influx: InfluxdHandle | undefined;
  let zest: ServerProcess | undefined;
  try {
    influx = await startInfluxd();
    const influxPids = childPidsNamed("influxd");
    zest = await spawnZest("zest-influx", [
      "--cfg",
      `plugins/storage_manager/volumes/influx:{backend:"influxdb",url:${JSON.stringify(influx.url)}}`,
      ...storagesCfg({ mem: memory("mem/**"), ifx: `{key_expr:"ifx/**",volume:{id:"influx",db:"${DB}"}}` }),
    ]);

    // 1. PUT rate of one key.
    const {
      figures: [ifx, mem],
    } = await compareSystems(
      [
        { server: zest, spec: textPut("/ifx/one"), helperPids: influxPids },
        { server: zest, spec: textPut("/mem/one"), helperPids: influxPids },
      ],
      { connections: 32, warmupSeconds: 1, roundSeconds: 4, rounds: 2 },
    );
    const i = ifx!;
    const m = mem!;
    // The writes still queued when autocannon stopped land meanwhile. A GET during a write must
    // not see the newest point half-written (InfluxDB 1.x makes a point's fields visible one at
    // a time, which the volume's one-field points avoid): such answers are counted and reported.
    let torn = 0;
    let stored = "";
    for (const deadline = performance.now() + 5_000; ; ) {
      stored = await httpGetText(zest.url, "/ifx/one");
      if (stored.includes(TEXT_100) && stored.includes('"encoding": "text/plain"')) break;
      torn++;
      if (performance.now() > deadline)
        throw new Error(`the InfluxDB storage does not return the PUT value: ${stored.slice(0, 200)}`);
      await new Promise((r) => setTimeout(r, 100));
    }

    // 2. 10,000 points of one key, written directly, then a range query over them.
    const { body, startNs } = seriesLines(SERIES_KEY, BigInt(Date.now() - 60_000) * 1_000_000n);
    const endNs = startNs + BigInt(POINTS - 1) * 1_000_000n;
    const writeMs = await timed(async () => {
      const res = await fetch(`${influx!.url}/write?db=${DB}&precision=ns`, {
        method: "POST",
        body,
        headers: { "content-type": "text/plain; charset=utf-8" },
      });
      const text = await res.text();
      if (res.status !== 204) throw new Error(`influx /write answered ${res.status}: ${text}`);
    });
    const path = `/${SERIES_KEY}?_time=[${rfc3339(startNs)}..${rfc3339(endNs)}]`;
    let entries = 0;
    let bytes = 0;
    const query = async (): Promise<void> => {
      const text = await httpGetText(zest!.url, path);
      bytes = Buffer.byteLength(text);
      entries = (JSON.parse(text) as unknown[]).length;
    };
    const select = new URLSearchParams({
      db: DB,
      q: `SELECT "sample" FROM "${SERIES_KEY}" WHERE time >= ${startNs} AND time <= ${endNs}`,
    });
    const direct = async (): Promise<void> => {
      const res = await fetch(`${influx!.url}/query`, {
        method: "POST",
        body: select.toString(),
        headers: { "content-type": "application/x-www-form-urlencoded" },
      });
      const json = (await res.json()) as { results: Array<{ series?: Array<{ values: unknown[] }> }> };
      const n = json.results[0]?.series?.[0]?.values.length ?? 0;
      if (n !== POINTS) throw new Error(`InfluxDB returned ${n} points, not ${POINTS}`);
    };
    await query();
    await direct();
    if (entries !== POINTS) throw new Error(`the range query returned ${entries} entries, not ${POINTS}`);
    const interference = startInterference([zest.pid, ...influxPids]);
    const routerMs: number[] = [];
    const directMs: number[] = [];
    for (let r = 0; r < QUERY_RUNS; r++) {
      routerMs.push(await timed(query));
      directMs.push(await timed(direct));
    }
    const queryInterference = interference();

    const ratio = i.reqPerSec / m.reqPerSec;
    const rangeMs = median(routerMs);
    const influxMs = median(directMs);
    return {
      name: "influx",
      figures: {
        ...systemFigures("influx", i),
        ...systemFigures("memory", m),
        points: POINTS,
        writePointsMs: writeMs,
        rangeQueryMs: rangeMs,
        rangeQueryBestMs: Math.min(...routerMs),
        rangeQueryBytes: bytes,
        influxQueryMs: influxMs,
        rangeOverInfluxRatio: rangeMs / influxMs,
        queryOtherCpuPct: queryInterference.otherCpuPct,
        tornReadsAfterLoad: torn,
      },
      ratio,
      target: "report",
      summary:
        `PUT one key: influxdb ${fmtInt(i.reqPerSec)} req/s / memory ${fmtInt(m.reqPerSec)} req/s ` +
        `(CPU per PUT ${fmtNum(i.systemUsPerReq, 0)} µs with influxd / ${fmtNum(m.systemUsPerReq, 0)} µs); ` +
        `range query over ${fmtInt(POINTS)} points ${fmtMs(rangeMs)} (InfluxDB alone ${fmtMs(influxMs)}; points written directly in ${fmtMs(writeMs)})`,
      interferencePct: Math.max(
        i.otherCpuPct,
        i.stealPct,
        m.otherCpuPct,
        m.stealPct,
        queryInterference.otherCpuPct,
        queryInterference.stealPct,
      ),
      notes: [
        ...loadNotes("influxdb", i),
        ...loadNotes("memory", m),
        ...interferenceNotes("range query", queryInterference),
        ...(torn > 0
          ? [
              `${torn} GET(s) of ifx/one right after the load, while queued writes landed, answered a half-written point (no entry, or an empty encoding): the volume reads InfluxDB points non-atomically`,
            ]
          : []),
      ],
    };
  } finally {
    await zest?.stop();
    await influx?.stop();
  }
}
