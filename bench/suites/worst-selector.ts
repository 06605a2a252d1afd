/**
 * The worst selector (issue 9): 100,000 keys in the default memory storage, 100 of them with a
 * chunk at the maximum length, then GETs with the costliest selectors we could construct within
 * the key-expression limits (4,096 bytes, 512 chunks). Each selector runs once to warm up (its
 * latency is reported apart, not judged), then three times. Reported: each selector's latency
 * (the slowest of the three), the worst, and the latency of a one-key GET sent while the worst
 * one runs. The ratio is that concurrent one-key GET over the same GET on an idle router,
 * measured in this run.
 * Targets: worst selector ≤ 250 ms; one-key GET meanwhile ≤ 50 ms.
 */
import { Agent, request } from "node:http";
import { fmtInt, fmtMs } from "../lib/format.js";
import { spawnZest } from "../lib/proc.js";
import type { BenchResult } from "../lib/types.js";

const KEYS = 100_000;
const LONG_KEYS = 100;
const MAX_KEY = 4096;
const MAX_CHUNKS = 512;
const agent = new Agent({ keepAlive: true, maxSockets: 64 });

/** One request; resolves with the status, body length and milliseconds it took. */
function send(
  base: URL,
  method: string,
  path: string,
  body?: string,
): Promise<{ status: number; bytes: number; ms: number }> {
  const t0 = performance.now();
  return new Promise((resolve, reject) => {
    const req = request(
      {
        agent,
        host: base.hostname,
        port: base.port,
        method,
        path,
        headers: body === undefined ? {} : { "content-type": "text/plain" },
      },
      (res) => {
        let bytes = 0;
        res.on("data", (c: Buffer) => (bytes += c.length));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, bytes, ms: performance.now() - t0 }));
        res.on("error", reject);
      },
    );
    req.on("error", reject);
    req.end(body);
  });
}

/** The long chunk of long key `j`: `ab` repeated, with `j` at the end, so the key is MAX_KEY bytes. */
function longKey(j: number): string {
  const prefix = `ws/long/${j}/`;
  const tail = `x${j}`;
  return (
    prefix +
    "ab".repeat((MAX_KEY - prefix.length - tail.length) >> 1).padEnd(MAX_KEY - prefix.length - tail.length, "a") +
    tail
  );
}

/** Fits `parts` joined by "/" into the limits. */
function fit(parts: string[]): string {
  let s = parts.slice(0, MAX_CHUNKS).join("/");
  while (Buffer.byteLength(s) > MAX_KEY) s = s.slice(0, s.lastIndexOf("/"));
  return s;
}

/** Selectors that make the walk and the chunk tests work hardest, each within the limits. */
function selectors(): Array<[string, string]> {
  const longGlob = `$*${"a$*b$*".repeat(1000)}`.slice(0, MAX_KEY - 10);
  const nearMiss = `$*${"ab".repeat(2000)}$*y`;
  return [
    ["all keys (**)", "**"],
    ["a 4 KiB glob with 1,300 pieces under **", fit(["**", `${longGlob.replace(/\$\*$/, "")}$*`])],
    ["a near-miss 4 KiB glob against the long chunks", fit(["**", nearMiss])],
    [
      "** and globs alternating, 512 chunks",
      fit(Array.from({ length: MAX_CHUNKS }, (_, i) => (i % 2 === 0 ? "**" : `$*${i % 10}$*`))),
    ],
    [
      "** and * alternating, 512 chunks",
      fit(Array.from({ length: MAX_CHUNKS }, (_, i) => (i % 2 === 0 ? "**" : "*")).concat()),
    ],
    ["**/ws/** repeated, 512 chunks", fit(Array.from({ length: MAX_CHUNKS }, (_, i) => (i % 2 === 0 ? "**" : "ws")))],
    ["a glob per level", fit(["ws", "$*1$*", "$*2$*", "$*3$*"])],
  ];
}

export async function run(): Promise<BenchResult> {
  const zest = await spawnZest("zest-worst-selector");
  try {
    const base = new URL(zest.url);
    const puts: Array<Promise<unknown>> = [];
    const flush = async (): Promise<void> => {
      const rs = (await Promise.all(puts)) as Array<{ status: number }>;
      puts.length = 0;
      const bad = rs.find((r) => r.status !== 200);
      if (bad) throw new Error(`a PUT answered ${bad.status}`);
    };
    for (let i = 0; i < KEYS - LONG_KEYS; i++) {
      puts.push(send(base, "PUT", `/ws/${i % 10}/${Math.floor(i / 10) % 100}/${i}`, `v${i}`));
      if (puts.length === 64) await flush();
    }
    for (let j = 0; j < LONG_KEYS; j++) puts.push(send(base, "PUT", `/${longKey(j)}`, `long${j}`));
    await flush();

    const one = "/ws/1/2/121?fresh";
    const idle: number[] = [];
    for (let k = 0; k < 50; k++) idle.push((await send(base, "GET", one)).ms);
    idle.sort((a, b) => a - b);
    const idleMs = idle[Math.floor(idle.length / 2)]!;

    const figures: Record<string, number> = { keys: KEYS, longKeys: LONG_KEYS, oneKeyIdleMs: idleMs };
    let worst = { name: "", path: "", ms: 0, bytes: 0 };
    let coldMs = 0;
    for (const [name, ke] of selectors()) {
      const path = `/${ke.split("/").map(encodeURIComponent).join("/")}?run`;
      // One warm-up of each, not counted, as in the other benchmarks: the first wide GET of a
      // process runs while V8 is still compiling the walk and the rendering. Reported apart.
      const cold = await send(base, "GET", path);
      if (cold.status !== 200) throw new Error(`GET ${name} answered ${cold.status}`);
      figures[`${name} coldMs`] = cold.ms;
      coldMs = Math.max(coldMs, cold.ms);
      let ms = 0;
      let bytes = 0;
      for (let r = 0; r < 3; r++) {
        const res = await send(base, "GET", path);
        if (res.status !== 200) throw new Error(`GET ${name} answered ${res.status}`);
        ms = Math.max(ms, res.ms);
        bytes = res.bytes;
      }
      figures[`${name}Ms`] = ms;
      if (ms > worst.ms) worst = { name, path, ms, bytes };
    }

    // The worst one again, with one-key GETs sent one after another while it runs.
    const concurrent: number[] = [];
    let running = true;
    const wide = send(base, "GET", worst.path).finally(() => (running = false));
    while (running) concurrent.push((await send(base, "GET", one)).ms);
    const wideMs = (await wide).ms;
    const concurrentMax = Math.max(...concurrent);
    figures.worstMs = Math.max(worst.ms, wideMs);
    figures.coldMs = coldMs;
    figures.worstResponseBytes = worst.bytes;
    figures.concurrentOneKeyMaxMs = concurrentMax;
    figures.concurrentOneKeyGets = concurrent.length;
    const pass = figures.worstMs <= 250 && concurrentMax <= 50;
    return {
      name: "worst-selector",
      figures,
      ratio: concurrentMax / idleMs,
      target: "worst <= 250 ms, one-key GET meanwhile <= 50 ms",
      pass,
      summary: `worst selector (${worst.name}, ${fmtInt(worst.bytes / 1024)} KiB answer) ${fmtMs(figures.worstMs)} over ${fmtInt(KEYS)} keys (the first, cold GET of each selector, not counted: at most ${fmtMs(coldMs)}); one-key GET meanwhile max ${fmtMs(concurrentMax)} (${concurrent.length} GETs) / idle ${fmtMs(idleMs)}`,
    };
  } finally {
    agent.destroy();
    await zest.stop();
  }
}
