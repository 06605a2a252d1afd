/**
 * Load and latency measurements on systems of several processes (a router and its NATS cluster,
 * its InfluxDB...), for the storage and fabric benchmarks (issues 3 and 4).
 *
 * `fireSystem`/`compareSystems` are `fire`/`compare` (lib/load.ts) with two additions:
 * - `helperPids`: the other processes of the system under test. Their CPU is counted as the
 *   system's (`systemCpuPct`, `systemUsPerReq`), not as interference from neighbours.
 * - `distinctKeys`: every request gets its own key (`spec.path` + a counter), through
 *   autocannon's `requests[].setupRequest`, so a PUT benchmark writes new rows, not one row.
 *
 * `compareLatency` sends sequential GETs (one keep-alive connection per target) and times each
 * one here, with sub-millisecond resolution, alternating targets in blocks.
 */
import http from "node:http";
import { readdirSync, readFileSync } from "node:fs";
import autocannon from "autocannon";
import { combine, fire, type LoadFigures, loadFigures, type RequestSpec } from "./load.js";
import { processCpuSeconds, selfCpuSeconds, type ServerProcess, startInterference } from "./proc.js";

/** One side of a comparison: the server that gets the requests, and the rest of its system. */
export interface SystemTarget {
  server: ServerProcess;
  spec: RequestSpec;
  /** Other processes of the system under test (routers, nats-server, influxd). */
  helperPids?: number[];
  /** Append a counter to `spec.path`, so every request has its own key. */
  distinctKeys?: boolean;
}

/** `LoadFigures` plus the CPU of the whole system (server and helpers). */
export interface SystemFigures extends LoadFigures {
  /** CPU the server and its helpers used, in % of one core. */
  systemCpuPct: number;
  /** CPU microseconds the server and its helpers used per 2xx response. */
  systemUsPerReq: number;
  /** CPU microseconds per 2xx response of each helper, in `helperPids` order. */
  helperUsPerReq: number[];
}

/** autocannon's `requests` option, which bench/types/autocannon.d.ts leaves out. */
interface RequestsOptions extends autocannon.Options {
  requests: Array<{ setupRequest: (req: { path: string }) => { path: string } }>;
}

/** Keys of `distinctKeys` requests: one counter for the whole run, so no key is ever reused. */
let keySeq = 0;

/** One autocannon run against `target`, with the CPU of its server and helpers. */
export async function fireSystem(
  target: SystemTarget,
  opts: { connections: number; seconds: number },
): Promise<SystemFigures> {
  const { server, spec } = target;
  const helpers = target.helperPids ?? [];
  const cpu0 = server.cpuSplit();
  const helpers0 = helpers.map((p) => processCpuSeconds(p));
  const self0 = selfCpuSeconds();
  const interference = startInterference([server.pid, ...helpers]);
  const t0 = performance.now();
  const base: autocannon.Options = {
    url: server.url + spec.path,
    method: spec.method ?? "GET",
    headers: spec.headers ?? {},
    body: spec.body,
    connections: opts.connections,
    duration: opts.seconds,
    timeout: 10,
  };
  const options: autocannon.Options | RequestsOptions = target.distinctKeys
    ? { ...base, requests: [{ setupRequest: (req) => ({ ...req, path: `${spec.path}${keySeq++}` }) }] }
    : base;
  const res = await new Promise<autocannon.Result>((resolve, reject) => {
    autocannon(options, (err, result) => (err ? reject(err) : resolve(result)));
  });
  const wall = (performance.now() - t0) / 1000;
  const cpu1 = server.cpuSplit();
  const user = cpu1.user - cpu0.user;
  const sys = cpu1.sys - cpu0.sys;
  const helperCpus = helpers.map((p, i) => processCpuSeconds(p) - helpers0[i]!);
  const helperCpu = helperCpus.reduce((a, c) => a + c, 0);
  const self = selfCpuSeconds() - self0;
  const { otherCpuPct, stealPct } = interference();
  const ok = res["2xx"];
  return {
    reqPerSec: ok / res.duration,
    p50Ms: res.latency.p50,
    p99Ms: res.latency.p99,
    requests: ok,
    seconds: res.duration,
    errors: res.errors,
    non2xx: res.non2xx,
    serverCpuPct: (100 * (user + sys)) / wall,
    serverUserUsPerReq: (1e6 * user) / ok,
    serverSysUsPerReq: (1e6 * sys) / ok,
    loadgenCpuPct: (100 * self) / wall,
    otherCpuPct,
    stealPct,
    systemCpuPct: (100 * (user + sys + helperCpu)) / wall,
    systemUsPerReq: (1e6 * (user + sys + helperCpu)) / ok,
    helperUsPerReq: helperCpus.map((c) => (1e6 * c) / ok),
  };
}

/** Sums runs of one target. */
export function combineSystem(runs: SystemFigures[]): SystemFigures {
  const seconds = runs.reduce((s, r) => s + r.seconds, 0);
  const requests = runs.reduce((s, r) => s + r.requests, 0);
  return {
    ...combine(runs),
    systemCpuPct: runs.reduce((s, r) => s + r.systemCpuPct * r.seconds, 0) / seconds,
    systemUsPerReq: runs.reduce((s, r) => s + r.systemUsPerReq * r.requests, 0) / requests,
    helperUsPerReq: runs[0]!.helperUsPerReq.map(
      (_, i) => runs.reduce((s, r) => s + r.helperUsPerReq[i]! * r.requests, 0) / requests,
    ),
  };
}

/**
 * `compare` for systems: warm-up per target (its 2xx count is returned apart, for checks that
 * need every acknowledged write), then runs in alternation A B, B A...
 */
export async function compareSystems(
  targets: SystemTarget[],
  opts: { connections: number; warmupSeconds: number; roundSeconds: number; rounds: number },
): Promise<{ figures: SystemFigures[]; warmupRequests: number[] }> {
  const warmupRequests = targets.map(() => 0);
  if (opts.warmupSeconds > 0) {
    for (const [k, t] of targets.entries())
      warmupRequests[k] = (
        await fireSystem(t, { connections: opts.connections, seconds: opts.warmupSeconds })
      ).requests;
  }
  const runs: SystemFigures[][] = targets.map(() => []);
  for (let i = 0; i < opts.rounds; i++) {
    const order = targets.map((_, k) => k);
    if (i % 2 === 1) order.reverse();
    for (const k of order)
      runs[k]!.push(await fireSystem(targets[k]!, { connections: opts.connections, seconds: opts.roundSeconds }));
  }
  return { figures: runs.map(combineSystem), warmupRequests };
}

/** `loadFigures` plus the system CPU figures. */
export function systemFigures(prefix: string, f: SystemFigures): Record<string, number> {
  return {
    ...loadFigures(prefix, f),
    [`${prefix}SystemCpuPct`]: f.systemCpuPct,
    [`${prefix}SystemUsPerReq`]: f.systemUsPerReq,
  };
}

/** A target of `compareLatency`: sequential GETs of `path`. */
export interface LatencyTarget {
  server: ServerProcess;
  path: string;
  helperPids?: number[];
}

/** What sequential GETs of one target measured. */
export interface LatencyFigures {
  p50Ms: number;
  p90Ms: number;
  p99Ms: number;
  meanMs: number;
  maxMs: number;
  requests: number;
  non2xx: number;
  /** CPU microseconds per request: the server alone, and with its helpers. */
  serverUsPerReq: number;
  systemUsPerReq: number;
  /** CPU microseconds per request of each helper, in `helperPids` order. */
  helperUsPerReq: number[];
  otherCpuPct: number;
  stealPct: number;
}

/** One GET on a keep-alive agent; resolves with its time in ms and its status. */
function timedGet(agent: http.Agent, url: URL, path: string): Promise<{ ms: number; status: number }> {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const req = http.get({ hostname: url.hostname, port: url.port, path, agent }, (res) => {
      res.resume();
      res.once("end", () => resolve({ ms: performance.now() - t0, status: res.statusCode ?? 0 }));
      res.once("error", reject);
    });
    req.once("error", reject);
  });
}

/** The `q` quantile of sorted samples (nearest rank below). */
export function quantile(sorted: Float64Array, q: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
}

/**
 * Sequential GETs against each target: `warmup` requests each, then `blocks` blocks of
 * `perBlock` requests, targets taken in alternating order (A B C, C B A...) so drift hits all
 * alike. Interference is measured over each block, excluding every target's processes, and
 * summed over the target's blocks.
 */
export async function compareLatency(
  targets: LatencyTarget[],
  opts: { warmup: number; perBlock: number; blocks: number },
): Promise<LatencyFigures[]> {
  const agents = targets.map(() => new http.Agent({ keepAlive: true, maxSockets: 1 }));
  const urls = targets.map((t) => new URL(t.server.url));
  const allPids = [...new Set(targets.flatMap((t) => [t.server.pid, ...(t.helperPids ?? [])]))];
  const samples = targets.map(() => new Float64Array(opts.perBlock * opts.blocks));
  // Other and stolen CPU are summed in core-seconds over a target's blocks, then divided by its
  // time: a block lasts a fraction of a second, shorter than /proc/stat's tick makes reliable.
  const state = targets.map((t) => ({
    n: 0,
    non2xx: 0,
    serverCpu: 0,
    helperCpu: (t.helperPids ?? []).map(() => 0),
    wall: 0,
    other: 0,
    steal: 0,
  }));
  try {
    for (const [k, t] of targets.entries())
      for (let i = 0; i < opts.warmup; i++) await timedGet(agents[k]!, urls[k]!, t.path);
    for (let b = 0; b < opts.blocks; b++) {
      const order = targets.map((_, k) => k);
      if (b % 2 === 1) order.reverse();
      for (const k of order) {
        const t = targets[k]!;
        const s = state[k]!;
        const helpers = t.helperPids ?? [];
        const server0 = t.server.cpuSeconds();
        const helpers0 = helpers.map((p) => processCpuSeconds(p));
        const interference = startInterference(allPids);
        const t0 = performance.now();
        for (let i = 0; i < opts.perBlock; i++) {
          const r = await timedGet(agents[k]!, urls[k]!, t.path);
          if (r.status < 200 || r.status >= 300) s.non2xx++;
          samples[k]![s.n++] = r.ms;
        }
        s.serverCpu += t.server.cpuSeconds() - server0;
        for (const [i, p] of helpers.entries()) s.helperCpu[i]! += processCpuSeconds(p) - helpers0[i]!;
        const { otherCpuPct, stealPct } = interference();
        const wall = (performance.now() - t0) / 1000;
        s.wall += wall;
        s.other += (otherCpuPct / 100) * wall;
        s.steal += (stealPct / 100) * wall;
      }
    }
  } finally {
    for (const a of agents) a.destroy();
  }
  return targets.map((_, k) => {
    const s = state[k]!;
    const sorted = samples[k]!.sort();
    return {
      p50Ms: quantile(sorted, 0.5),
      p90Ms: quantile(sorted, 0.9),
      p99Ms: quantile(sorted, 0.99),
      meanMs: sorted.reduce((a, v) => a + v, 0) / sorted.length,
      maxMs: sorted[sorted.length - 1]!,
      requests: s.n,
      non2xx: s.non2xx,
      serverUsPerReq: (1e6 * s.serverCpu) / s.n,
      systemUsPerReq: (1e6 * (s.serverCpu + s.helperCpu.reduce((a, c) => a + c, 0))) / s.n,
      helperUsPerReq: s.helperCpu.map((c) => (1e6 * c) / s.n),
      otherCpuPct: (100 * s.other) / s.wall,
      stealPct: (100 * s.steal) / s.wall,
    };
  });
}

/** `LatencyFigures` as prefixed figures. */
export function latencyFigures(prefix: string, f: LatencyFigures): Record<string, number> {
  return {
    [`${prefix}P50Ms`]: f.p50Ms,
    [`${prefix}P90Ms`]: f.p90Ms,
    [`${prefix}P99Ms`]: f.p99Ms,
    [`${prefix}MeanMs`]: f.meanMs,
    [`${prefix}MaxMs`]: f.maxMs,
    [`${prefix}Requests`]: f.requests,
    [`${prefix}UsPerReq`]: f.serverUsPerReq,
    [`${prefix}SystemUsPerReq`]: f.systemUsPerReq,
    [`${prefix}OtherCpuPct`]: f.otherCpuPct,
  };
}

/**
 * Pids of this process's children whose command name is `comm` (for servers started by helpers
 * that keep their ChildProcess to themselves, like `startInfluxd`). Linux only; [] elsewhere.
 */
export function childPidsNamed(comm: string): number[] {
  const out: number[] = [];
  let entries: string[];
  try {
    entries = readdirSync("/proc");
  } catch {
    return out;
  }
  for (const e of entries) {
    if (!/^\d+$/.test(e)) continue;
    try {
      const stat = readFileSync(`/proc/${e}/stat`, "utf8");
      const name = stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")"));
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      if (name === comm && ppid === process.pid) out.push(Number(e));
    } catch {
      // gone meanwhile
    }
  }
  return out;
}

/** Polls `check` every 100 ms until it returns true; throws `what` after `timeoutMs`. */
export async function waitUntil(check: () => Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    try {
      if (await check()) return;
    } catch {
      // not yet
    }
    if (performance.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** What a load spread over several servers at once measured, as one system. */
export interface SpreadFigures {
  /** 2xx responses per second, summed over the servers. */
  reqPerSec: number;
  requests: number;
  /** Each server's 2xx per second, in target order (how even the spread was). */
  perServerReqPerSec: number[];
  /** Request-weighted mean of the servers' p50, and the worst server's p99. */
  p50Ms: number;
  p99Ms: number;
  errors: number;
  non2xx: number;
  /** CPU of the servers and helpers together, in % of one core, and in µs per 2xx response. */
  systemCpuPct: number;
  systemUsPerReq: number;
  /** The helpers' part of `systemUsPerReq` (the nats-servers, for the fabric). */
  helpersUsPerReq: number;
  loadgenCpuPct: number;
  otherCpuPct: number;
  stealPct: number;
}

/**
 * One autocannon per target, all at once, `connections` split between them: a load spread over
 * several routers of one system. CPU and interference are measured for the whole system (every
 * target's server and `helperPids`), over the same window.
 */
export async function fireSpread(
  targets: Array<{ server: ServerProcess; spec: RequestSpec }>,
  helperPids: number[],
  opts: { connections: number; seconds: number },
): Promise<SpreadFigures> {
  const pids = [...targets.map((t) => t.server.pid), ...helperPids];
  const cpuOf = (ps: number[]): number => ps.reduce((s, p) => s + processCpuSeconds(p), 0);
  const cpu0 = cpuOf(pids);
  const helpers0 = cpuOf(helperPids);
  const self0 = selfCpuSeconds();
  const interference = startInterference(pids);
  const t0 = performance.now();
  const share = (k: number): number =>
    Math.floor(opts.connections / targets.length) + (k < opts.connections % targets.length ? 1 : 0);
  const runs = await Promise.all(
    targets.map((t, k) => fire(t.server, t.spec, { connections: Math.max(1, share(k)), seconds: opts.seconds })),
  );
  const wall = (performance.now() - t0) / 1000;
  const cpu = cpuOf(pids) - cpu0;
  const helpersCpu = cpuOf(helperPids) - helpers0;
  const { otherCpuPct, stealPct } = interference();
  const requests = runs.reduce((s, r) => s + r.requests, 0);
  return {
    reqPerSec: runs.reduce((s, r) => s + r.reqPerSec, 0),
    requests,
    perServerReqPerSec: runs.map((r) => r.reqPerSec),
    p50Ms: runs.reduce((s, r) => s + r.p50Ms * r.requests, 0) / requests,
    p99Ms: Math.max(...runs.map((r) => r.p99Ms)),
    errors: runs.reduce((s, r) => s + r.errors, 0),
    non2xx: runs.reduce((s, r) => s + r.non2xx, 0),
    systemCpuPct: (100 * cpu) / wall,
    systemUsPerReq: (1e6 * cpu) / requests,
    helpersUsPerReq: (1e6 * helpersCpu) / requests,
    loadgenCpuPct: (100 * (selfCpuSeconds() - self0)) / wall,
    otherCpuPct,
    stealPct,
  };
}
