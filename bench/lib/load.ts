/**
 * HTTP load with autocannon (in the bench process) against servers in child processes, with the
 * CPU each side used, so a saturated load generator is visible rather than silently flattering
 * the slower server.
 */
import autocannon from "autocannon";
import { interferenceNotes, type ServerProcess, selfCpuSeconds, startInterference } from "./proc.js";

/** One kind of request to fire. */
export interface RequestSpec {
  path: string;
  method?: "GET" | "PUT";
  headers?: Record<string, string>;
  body?: string | Buffer;
  /**
   * Builds each request from the one above (autocannon's `setupRequest`): for workloads whose
   * requests differ (a mix of GETs and PUTs over many keys). `path` is then relative to `spec.path`'s server.
   */
  setupRequest?: (req: OutgoingRequest) => OutgoingRequest;
}

/** A request as `setupRequest` sees and returns it. */
export interface OutgoingRequest {
  method?: string;
  path?: string;
  headers?: Record<string, string>;
  body?: string | Buffer;
}

/** What one or more autocannon runs against one server measured. */
export interface LoadFigures {
  /** 2xx responses per second. */
  reqPerSec: number;
  /** Mean of the per-run latency percentiles, weighted by run length. */
  p50Ms: number;
  p99Ms: number;
  requests: number;
  seconds: number;
  errors: number;
  non2xx: number;
  /** CPU the server process used, in % of one core. */
  serverCpuPct: number;
  /** Server CPU per 2xx response, in microseconds: in JS and libuv (user), and in the kernel (sys). */
  serverUserUsPerReq: number;
  serverSysUsPerReq: number;
  /** CPU the bench process (autocannon) used, in % of one core. */
  loadgenCpuPct: number;
  /** CPU used meanwhile by other processes on the machine, in % of one core (combined: the worst run). */
  otherCpuPct: number;
  /** CPU stolen by the hypervisor meanwhile, in % of one core. */
  stealPct: number;
  /** The runs these figures sum, in the order `compare` made them (absent for a single run). */
  runs?: readonly LoadFigures[];
}

export interface LoadOptions {
  connections: number;
  seconds: number;
}

/** One autocannon run of `spec` against `server`. */
export async function fire(server: ServerProcess, spec: RequestSpec, opts: LoadOptions): Promise<LoadFigures> {
  const cpu0 = server.cpuSplit();
  const self0 = selfCpuSeconds();
  const interference = startInterference([server.pid]);
  const t0 = performance.now();
  const res = await new Promise<autocannon.Result>((resolve, reject) => {
    autocannon(
      {
        url: server.url + spec.path,
        method: spec.method ?? "GET",
        headers: spec.headers ?? {},
        body: spec.body,
        ...(spec.setupRequest ? { requests: [{ setupRequest: spec.setupRequest as never }] } : {}),
        connections: opts.connections,
        duration: opts.seconds,
        timeout: 10,
      },
      (err, result) => (err ? reject(err) : resolve(result)),
    );
  });
  const wall = (performance.now() - t0) / 1000;
  const cpu1 = server.cpuSplit();
  const user = cpu1.user - cpu0.user;
  const sys = cpu1.sys - cpu0.sys;
  const self = selfCpuSeconds() - self0;
  const { otherCpuPct, stealPct } = interference();
  return {
    reqPerSec: res["2xx"] / res.duration,
    p50Ms: res.latency.p50,
    p99Ms: res.latency.p99,
    requests: res["2xx"],
    seconds: res.duration,
    errors: res.errors,
    non2xx: res.non2xx,
    serverCpuPct: (100 * (user + sys)) / wall,
    serverUserUsPerReq: (1e6 * user) / res["2xx"],
    serverSysUsPerReq: (1e6 * sys) / res["2xx"],
    loadgenCpuPct: (100 * self) / wall,
    otherCpuPct,
    stealPct,
  };
}

/** Sums runs of the same target into one set of figures. */
export function combine(runs: LoadFigures[]): LoadFigures {
  const seconds = runs.reduce((s, r) => s + r.seconds, 0);
  const w = (f: (r: LoadFigures) => number): number => runs.reduce((s, r) => s + f(r) * r.seconds, 0) / seconds;
  const requests = runs.reduce((s, r) => s + r.requests, 0);
  return {
    reqPerSec: requests / seconds,
    p50Ms: w((r) => r.p50Ms),
    p99Ms: w((r) => r.p99Ms),
    requests,
    seconds,
    errors: runs.reduce((s, r) => s + r.errors, 0),
    non2xx: runs.reduce((s, r) => s + r.non2xx, 0),
    serverCpuPct: w((r) => r.serverCpuPct),
    serverUserUsPerReq: runs.reduce((s, r) => s + r.serverUserUsPerReq * r.requests, 0) / requests,
    serverSysUsPerReq: runs.reduce((s, r) => s + r.serverSysUsPerReq * r.requests, 0) / requests,
    loadgenCpuPct: w((r) => r.loadgenCpuPct),
    // Interference: the worst run counts, since one disturbed run is enough to skew a sum.
    otherCpuPct: Math.max(...runs.map((r) => r.otherCpuPct)),
    stealPct: Math.max(...runs.map((r) => r.stealPct)),
    runs,
  };
}

/**
 * `a`'s req/s over `b`'s in each round of one `compare`, where the two ran back to back; undefined
 * when they do not pair up, or are fewer than three (too few for a median to mean more than the
 * totals).
 */
function roundRatios(a: LoadFigures, b: LoadFigures): number[] | undefined {
  const ra = a.runs;
  const rb = b.runs;
  if (ra === undefined || rb === undefined || ra.length !== rb.length || ra.length < 3) return undefined;
  return ra.map((r, i) => r.reqPerSec / rb[i]!.reqPerSec);
}

/**
 * `a`'s req/s over `b`'s, for two targets of one `compare`: the median of the ratios of each
 * round. This host has phases that slow every process for a few seconds; a phase that falls on
 * one side of one round moves the ratio of the totals, but not this median. Falls back to the
 * totals when the rounds do not pair up (`roundRatios`).
 */
export function pairedRatio(a: LoadFigures, b: LoadFigures): number {
  const ratios = roundRatios(a, b)?.sort((x, y) => x - y);
  if (ratios === undefined) return a.reqPerSec / b.reqPerSec;
  const m = ratios.length >> 1;
  return ratios.length % 2 === 1 ? ratios[m]! : (ratios[m - 1]! + ratios[m]!) / 2;
}

/** A server and the request to send it, for `compare`. */
export interface Target {
  server: ServerProcess;
  spec: RequestSpec;
}

export interface CompareOptions {
  connections: number;
  /** Warm-up per target, not counted. */
  warmupSeconds: number;
  /** Length of each measured run. */
  roundSeconds: number;
  /** Measured runs per target. */
  rounds: number;
}

/**
 * The comparison `pairedRatio` is made for (bench/README.md): 32 connections, 2 s of warm-up per
 * target, then five back-to-back rounds of 2 s each.
 */
export const PAIRED_ROUNDS: Readonly<CompareOptions> = {
  connections: 32,
  warmupSeconds: 2,
  roundSeconds: 2,
  rounds: 5,
};

/** How a `pairedRatio` was taken, for a summary: the number of rounds and their spread. */
export function roundsNote(a: LoadFigures, b: LoadFigures): string {
  const ratios = roundRatios(a, b);
  if (ratios === undefined) return "totals";
  return `median of ${ratios.length} back-to-back rounds, ${Math.min(...ratios).toFixed(2)}-${Math.max(...ratios).toFixed(2)}x`;
}

/**
 * Measures targets in alternation after warming each up: runs go A B C, C B A, A B C..., so slow
 * drift (thermal, neighbours) hits every target alike. Returns the figures in target order
 * (`pairedRatio` compares two of them round by round).
 */
export async function compare(targets: Target[], opts: CompareOptions): Promise<LoadFigures[]> {
  if (opts.warmupSeconds > 0) {
    for (const t of targets)
      await fire(t.server, t.spec, { connections: opts.connections, seconds: opts.warmupSeconds });
  }
  const runs: LoadFigures[][] = targets.map(() => []);
  const measured = { connections: opts.connections, seconds: opts.roundSeconds };
  for (let i = 0; i < opts.rounds; i++) {
    const order = targets.map((_, k) => k);
    if (i % 2 === 1) order.reverse();
    for (const k of order) runs[k]!.push(await fire(targets[k]!.server, targets[k]!.spec, measured));
  }
  return runs.map(combine);
}

/** Caveats on load figures: failed requests, and a load generator that was the bottleneck. */
export function loadNotes(label: string, f: LoadFigures): string[] {
  const notes: string[] = [];
  if (f.errors > 0 || f.non2xx > 0)
    notes.push(`${label}: ${f.errors} connection errors and ${f.non2xx} non-2xx responses (only 2xx are counted)`);
  if (f.loadgenCpuPct > 90 && f.serverCpuPct < 90) {
    notes.push(
      `${label}: the load generator used ${Math.round(f.loadgenCpuPct)}% of a core and the server ${Math.round(f.serverCpuPct)}%: the figure is bounded by the client, not the server`,
    );
  }
  notes.push(...interferenceNotes(label, f));
  return notes;
}

/** Server CPU microseconds per 2xx response. */
export function cpuPerReq(f: LoadFigures): number {
  return f.serverUserUsPerReq + f.serverSysUsPerReq;
}

/** The standard per-target figures, prefixed: `zestReqPerSec`, `zestP99Ms`, `zestCpuPct`... */
export function loadFigures(prefix: string, f: LoadFigures): Record<string, number> {
  return {
    [`${prefix}ReqPerSec`]: f.reqPerSec,
    [`${prefix}P99Ms`]: f.p99Ms,
    [`${prefix}Requests`]: f.requests,
    [`${prefix}CpuPct`]: f.serverCpuPct,
    [`${prefix}UserUsPerReq`]: f.serverUserUsPerReq,
    [`${prefix}SysUsPerReq`]: f.serverSysUsPerReq,
    [`${prefix}LoadgenCpuPct`]: f.loadgenCpuPct,
    [`${prefix}OtherCpuPct`]: f.otherCpuPct,
  };
}
