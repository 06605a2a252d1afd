/**
 * SSE delivery through an HTTP server, measured in alternating rounds: HTTP PUTs of
 * `<seq>:<send time>` on `demo/sse/k` at a set rate, each timed to its event on one SSE stream of
 * `demo/sse/**`. A p99 of one run of a thousand events on a 2-core host is decided by its ten
 * slowest, that is by whichever scheduling hiccup fell in it; so every side gets several rounds,
 * the sides alternate within each round (A B C, then C B A...), and a side is judged on the
 * median of its rounds' p99s, with their spread and the p99 of all its samples pooled beside it.
 */
import http from "node:http";
import type net from "node:net";
import { setTimeout as sleep } from "node:timers/promises";
import { type ServerProcess, startInterference } from "./proc.js";
import { openSseStream, paced } from "./sse-stream.js";
import { median, percentile } from "./zenoh.js";

/** How the rounds run. */
export interface SseRoundOptions {
  /** PUTs a second. */
  rate: number;
  /** Measured PUTs per side and round. */
  puts: number;
  /** Uncounted PUTs before each side's first round (JIT, connections), and before every other round. */
  warmupPuts: number;
  roundWarmupPuts: number;
  rounds: number;
  /** How long a round waits for its last events. */
  drainMs: number;
}

/** What one side measured in one round. */
export interface SseRound {
  p50: number;
  p99: number;
  lost: number;
  serverCpuPct: number;
  otherCpuPct: number;
  stealPct: number;
}

/** One side over every round. */
export interface SseRounds {
  rounds: SseRound[];
  /** The median of the rounds' p99s and p50s: what the side is judged on. */
  p99: number;
  p50: number;
  /** The lowest and highest round p99. */
  p99Min: number;
  p99Max: number;
  /** The p99 of every measured sample of every round, pooled. */
  pooledP99: number;
  lost: number;
  serverCpuPct: number;
  otherCpuPct: number;
  stealPct: number;
}

/** An open SSE stream and its PUT connections on one server, for several rounds. */
class SseSide {
  private readonly latencies: number[][] = [];
  private readonly agent = new http.Agent({ keepAlive: true, maxSockets: 32 });
  private stream: net.Socket | undefined;
  private warmedUp = false;

  constructor(
    readonly server: ServerProcess,
    private readonly opts: SseRoundOptions,
  ) {}

  async open(): Promise<void> {
    const { puts, rounds } = this.opts;
    const seen = new Uint8Array(puts * rounds);
    this.stream = await openSseStream(new URL(this.server.url), "/demo/sse/**", (value, now) => {
      const colon = value.indexOf(":");
      const seq = Number(value.slice(0, colon));
      // Warm-up events carry -1; a sequence number is global over the rounds, so an event late
      // from one round is never counted in the next.
      if (!(seq >= 0 && seq < seen.length) || seen[seq] === 1) return;
      seen[seq] = 1;
      this.latencies[Math.floor(seq / puts)]?.push(now - Number(value.slice(colon + 1)));
    });
  }

  private put(body: string): void {
    const url = new URL(this.server.url);
    const req = http.request({
      agent: this.agent,
      host: url.hostname,
      port: url.port,
      method: "PUT",
      path: "/demo/sse/k",
      headers: { "content-type": "text/plain", "content-length": Buffer.byteLength(body) },
    });
    req.on("response", (res) => res.resume());
    req.on("error", () => {});
    req.end(body);
  }

  /** Round `r`: its warm-up, then its measured PUTs, then up to `drainMs` for their events. */
  async round(r: number): Promise<SseRound> {
    const { rate, puts, drainMs } = this.opts;
    const got: number[] = [];
    this.latencies[r] = got;
    await paced(rate, this.warmedUp ? this.opts.roundWarmupPuts : this.opts.warmupPuts, () =>
      this.put(`-1:${performance.now()}`),
    );
    this.warmedUp = true;
    await sleep(200);
    const interference = startInterference([this.server.pid]);
    const cpu0 = this.server.cpuSeconds();
    const t0 = performance.now();
    const base = r * puts;
    await paced(rate, puts, (i) => this.put(`${base + i}:${performance.now()}`));
    const deadline = performance.now() + drainMs;
    while (got.length < puts && performance.now() < deadline) await sleep(50);
    const serverCpuPct = (100 * (this.server.cpuSeconds() - cpu0)) / ((performance.now() - t0) / 1000);
    return {
      p50: percentile([...got], 50),
      p99: percentile([...got], 99),
      lost: puts - got.length,
      serverCpuPct,
      ...interference(),
    };
  }

  /** The p99 of every measured sample. */
  pooledP99(): number {
    return percentile(this.latencies.flat(), 99);
  }

  close(): void {
    this.stream?.destroy();
    this.agent.destroy();
  }
}

/**
 * Measures SSE delivery on each server in `opts.rounds` rounds, the servers in the order given
 * in even rounds and reversed in odd ones. Returns one `SseRounds` per server, in that order.
 */
export async function sseRounds(servers: readonly ServerProcess[], opts: SseRoundOptions): Promise<SseRounds[]> {
  const sides = servers.map((s) => new SseSide(s, opts));
  const rounds: SseRound[][] = sides.map(() => []);
  try {
    for (const side of sides) await side.open();
    await sleep(300);
    for (let r = 0; r < opts.rounds; r++) {
      const order = sides.map((_, k) => k);
      if (r % 2 === 1) order.reverse();
      for (const k of order) rounds[k]!.push(await sides[k]!.round(r));
    }
    return sides.map((side, k) => summarize(rounds[k]!, side.pooledP99()));
  } finally {
    for (const side of sides) side.close();
  }
}

function summarize(rounds: SseRound[], pooledP99: number): SseRounds {
  const p99s = rounds.map((r) => r.p99);
  const mean = (f: (r: SseRound) => number): number => rounds.reduce((s, r) => s + f(r), 0) / rounds.length;
  return {
    rounds,
    p99: median(p99s),
    p50: median(rounds.map((r) => r.p50)),
    p99Min: Math.min(...p99s),
    p99Max: Math.max(...p99s),
    pooledP99,
    lost: rounds.reduce((s, r) => s + r.lost, 0),
    serverCpuPct: mean((r) => r.serverCpuPct),
    otherCpuPct: Math.max(...rounds.map((r) => r.otherCpuPct)),
    stealPct: Math.max(...rounds.map((r) => r.stealPct)),
  };
}
