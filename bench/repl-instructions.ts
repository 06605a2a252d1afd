/**
 * The cost of replication per PUT, counted rather than timed (bench/README.md, "Replication's
 * cost per PUT"): two routers A and B joined to one nats-server, each with a memory storage on
 * `r/**`, both under valgrind (callgrind). PUTs of 100 bytes go to A; each reaches B's storage,
 * which acknowledges it before A answers. The figures are A's instructions per PUT and B's per
 * sample it applied, with replication `on` (the default) or `off` (`replication: false`): the
 * difference of the two runs is what replication costs on each router.
 *
 * Usage (valgrind installed, `npm run build` done):
 *   node --import tsx bench/repl-instructions.ts [on|off] [warm=50000] [count=10000] [keys=1]
 *
 * `keys`: the PUTs cycle over that many keys (`r/put/0` ... ), 1 by default, as
 * `npm run bench -- replication` writes one key. Counting is off on both routers while `warm`
 * PUTs bring V8 to its steady state, then counts exactly `count` PUTs on both, switched as A's
 * answers arrive (16 connections: at most 16 requests in flight at either switch, 0.2% of 10,000).
 * Optimizing compilation runs on the main thread and is shown apart, as in bench/instructions.ts.
 *
 * Under valgrind a PUT takes ~50 times as long as in a real run, so what the routers' timers do
 * by the clock (fabric heartbeats, the link watch, replication's periodic exchange) weighs ~50
 * times as much per PUT, and varies with the host's load. Both routers are then counted idle for
 * as long (at most 30 s) and that rate over the window is shown beside, not taken out: V8's
 * memory reducer often collects the heap in that idle time just after the load, so the idle
 * count is sometimes ten times the timers' own.
 * `REPL_INTERVAL_S=<s>` sets the replication interval (default 10 s: a periodic exchange or two
 * fall in the window, at valgrind's pace; 3600: none, the cost of the write path alone).
 * `INSTRUCTIONS_DUMP=<prefix>` keeps the dumps as `<prefix>.a` and `<prefix>.b`.
 *
 * Two more modes count the fabric alone (issue 38), A holding no storage: `remote` PUTs through A
 * to B's memory storage (its one remote subscriber, as `npm run bench -- nats-put` does; with
 * `keys` > 1, over that many keys, as `nats-routers` does), and `get` GETs `r/one` (60 bytes of
 * JSON, stored on B) through A, a cross-router GET, 16 at a time.
 */
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import autocannon from "autocannon";
import { callgrindControl, callgrindTotals, callgrindWrapper } from "./lib/callgrind.js";
import { type NatsCluster, startNatsCluster, waitRoutersMeet } from "./lib/nats.js";
import { CLI, type ServerProcess, spawnServer } from "./lib/proc.js";
import { storagesCfg } from "./lib/storages.js";
import { httpGetText, httpPut } from "./lib/http.js";
import { JSON_60 } from "./lib/payloads.js";
import { waitUntil } from "./lib/system-load.js";

const BODY = "x".repeat(100);
/**
 * Fabric timings for routers at valgrind's pace on a busy host: an ack or a heartbeat late by
 * seconds must not fail a PUT or drop the other router.
 */
const SLOW = [
  "--cfg",
  "fabric/nats/peer_timeout_ms:30000",
  "--cfg",
  "fabric/nats/ack_timeout_ms:60000",
  "--cfg",
  "fabric/nats/connect_timeout_ms:60000",
];
/** Longest idle window counted after the load. */
const IDLE_MAX_S = 30;

function usage(): never {
  console.error("usage: bench/repl-instructions.ts [on|off|remote|get] [warm=50000] [count=10000] [keys=1]");
  process.exit(2);
}

const [modeArg = "on", warmArg = "50000", countArg = "10000", keysArg = "1"] = process.argv.slice(2);
if (modeArg !== "on" && modeArg !== "off" && modeArg !== "remote" && modeArg !== "get") usage();
const mode = modeArg;
const warm = Number(warmArg);
const count = Number(countArg);
const keys = Number(keysArg);
for (const n of [warm, count, keys]) if (!Number.isSafeInteger(n) || n < 1) usage();

// `REPL_INTERVAL_S`: a longer interval leaves the periodic exchanges out of the window, which
// valgrind's slowness would otherwise charge to ten times fewer PUTs than a real run does.
const interval = process.env.REPL_INTERVAL_S;
if (interval !== undefined && !(Number(interval) > 0)) usage();
// Tombstones are kept over the hot and warm eras at least (36 intervals at zenoh's defaults).
const replication =
  mode !== "on"
    ? "false"
    : interval === undefined
      ? "true"
      : `{interval:${Number(interval)},tombstone_retention:${Math.max(86_400, 36 * Number(interval))}}`;
const storage = storagesCfg({ r: `{key_expr:"r/**",volume:"memory",replication:${replication}}` });

const dir = mkdtempSync(join(tmpdir(), "zest-repl-instructions-"));
let cluster: NatsCluster | undefined;
const servers: ServerProcess[] = [];
try {
  cluster = await startNatsCluster({ size: 1, jetstream: false });
  const url = cluster.urls[0]!;
  // In the fabric modes A holds no storage: every PUT and GET through it crosses to B.
  const fabricOnly = mode === "remote" || mode === "get";
  const router = (id: string): Promise<ServerProcess> => {
    const own = join(dir, id);
    mkdirSync(own);
    const storages = fabricOnly && id === "A1" ? storagesCfg({}) : storage;
    return spawnServer(id, CLI, ["--rest-http-port", "127.0.0.1:0", "--id", id, "--nats", url, ...SLOW, ...storages], {
      nodeArgs: ["--no-concurrent-recompilation"],
      wrapper: callgrindWrapper(own),
      // Node under valgrind on a loaded 2-core host takes minutes to start.
      timeoutMs: 600_000,
    });
  };
  const [a, b] = await Promise.all([router("A1"), router("B2")]);
  servers.push(a, b);
  await waitRoutersMeet(
    [
      { server: a, id: "A1" },
      { server: b, id: "B2" },
    ],
    120_000,
  );
  if (fabricOnly) await readyThroughA(a, b);
  const windowS = await load(a, b);
  const loaded = [a, b].map((s, i) => callgrindTotals(s.pid, join(dir, s.label), i === 0 ? ".a" : ".b"));
  // The same routers idle for as long (at most IDLE_MAX_S): what their timers cost meanwhile.
  const idleS = Math.min(windowS, IDLE_MAX_S);
  for (const s of [a, b]) callgrindControl(s.pid, "-i", "on");
  await new Promise((r) => setTimeout(r, idleS * 1000));
  for (const s of [a, b]) callgrindControl(s.pid, "-i", "off");
  const idle = [a, b].map((s) => callgrindTotals(s.pid, join(dir, s.label)));
  const per = (n: number): string => Math.round(n / count).toLocaleString("en-US");
  console.log(
    `${fabricOnly ? `fabric ${mode}` : `replication ${mode}`}${mode === "on" && interval !== undefined ? ` (interval ${interval} s)` : ""}, ${keys} key(s), ${count} ${mode === "get" ? "GETs" : "PUTs"} counted after ${warm} (${windowS.toFixed(1)} s; idle ${idleS.toFixed(1)} s)`,
  );
  const names =
    mode === "get" ? ["A (takes the GET)", "B (answers the query)"] : ["A (takes the PUT)", "B (applies the sample)"];
  for (const [i, name] of names.entries()) {
    const { total, compiler } = loaded[i]!;
    const own = total - compiler;
    // Idle instructions per second over the window: timers that tick by the clock, whatever the load.
    const background = ((idle[i]!.total - idle[i]!.compiler) / idleS) * windowS;
    console.log(
      `  ${name}: ${per(own)} instructions per ${mode === "get" ? "GET" : "PUT"} (V8's compiler meanwhile: ${per(compiler)}; idle rate over the window: ${per(background)})`,
    );
  }
} finally {
  await Promise.all(servers.map((s) => s.stop(1_000)));
  await cluster?.stop();
  rmSync(dir, { recursive: true, force: true });
}

/** Waits until A reaches B's storage: a PUT through A reads back from B (declarations travel asynchronously). */
async function readyThroughA(a: ServerProcess, b: ServerProcess): Promise<void> {
  await waitUntil(
    async () => {
      await httpPut(a.url, "/r/one", JSON_60, "application/json");
      return (await httpGetText(b.url, "/r/one")).includes('"sensor"');
    },
    120_000,
    "a PUT through A to reach B's storage",
  );
}

/** autocannon's `requests` option (bench/lib/system-load.ts has the same). */
interface RequestsOptions extends autocannon.Options {
  requests?: Array<{ setupRequest: (req: { path: string }) => { path: string } }>;
}

/**
 * `warm` PUTs, then `count` more counted on both routers, over the same 16 connections. Resolves
 * with the seconds counting was on.
 */
async function load(a: ServerProcess, b: ServerProcess): Promise<number> {
  let answered = 0;
  let on = 0;
  let off = 0;
  let next = 0;
  const base = a.url.replace(/\/$/, "");
  const request: autocannon.Options =
    mode === "get"
      ? { url: `${base}/r/one` }
      : { url: `${base}/r/put`, method: "PUT", body: BODY, headers: { "content-type": "text/plain" } };
  const options: RequestsOptions = {
    ...request,
    connections: 16,
    amount: warm + count,
    timeout: 120,
    // One key as the replication benchmark writes, or `keys` in turn.
    ...(keys === 1 ? {} : { requests: [{ setupRequest: (req) => ({ ...req, path: `/r/put/${next++ % keys}` }) }] }),
  };
  const r = await new Promise<autocannon.Result>((resolve, reject) => {
    const run = autocannon(options, (err, result) => (err ? reject(err) : resolve(result)));
    run.on("response", () => {
      answered++;
      if (answered === warm) {
        for (const s of [a, b]) callgrindControl(s.pid, "-i", "on");
        on = performance.now();
      } else if (answered === warm + count) {
        for (const s of [a, b]) callgrindControl(s.pid, "-i", "off");
        off = performance.now();
      }
    });
  });
  if (r.non2xx > 0 || r.errors > 0 || r.timeouts > 0)
    throw new Error(`${r.non2xx} answers other than 2xx, ${r.errors} errors, ${r.timeouts} timeouts`);
  return (off - on) / 1000;
}
