/**
 * How long the cross-router GET of `npm run bench -- nats-get` takes to reach V8's steady state,
 * on both sides of its ratio (bench/results/2026-11-29-xget2.md). Two modes:
 *
 * - `routers [blocks=12] [perBlock=500]`: the suite's setup (3-node NATS cluster, router A on node
 *   1 holding `g/one`, router B on node 2 with no storage), then sequential GETs of `/g/one`
 *   through B from the routers' first GET on, in blocks: each block's p50, the CPU per GET of B,
 *   A and the three nats-servers (from `/proc`), and NATS messages per GET (`/varz`).
 * - `floor [warmups=200,1000,2000,4000]`: the suite's bare request/reply floor (lib/nats-floor.ts,
 *   a fresh pair of processes each time) measured after each number of warm-up requests.
 *
 * `nats-get` warms every target and each floor pair past the point where these figures settle.
 * Usage: `node --import tsx bench/nats-get-warmup.ts routers 12 500` (after `npm run build`).
 */
import http from "node:http";
import { httpGetText, httpPut } from "./lib/http.js";
import { natsMessagesIn, natsPids, spawnRouter, startNatsCluster, waitRoutersMeet } from "./lib/nats.js";
import { requestReplyFloor } from "./lib/nats-floor.js";
import { JSON_60 } from "./lib/payloads.js";
import { processCpuSeconds, type ServerProcess } from "./lib/proc.js";
import { memory, storagesCfg } from "./lib/storages.js";
import { quantile, waitUntil } from "./lib/system-load.js";

const KEY = "/g/one";
const [mode = "routers", first, second] = process.argv.slice(2);

/** One GET on a keep-alive agent; resolves with its time in ms. */
function timedGet(agent: http.Agent, url: URL): Promise<number> {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    http
      .get({ hostname: url.hostname, port: url.port, path: KEY, agent }, (res) => {
        res.resume();
        res.once("end", () => resolve(performance.now() - t0));
      })
      .once("error", reject);
  });
}

async function routers(cluster: Awaited<ReturnType<typeof startNatsCluster>>): Promise<void> {
  const blocks = Number(first ?? 12);
  const perBlock = Number(second ?? 500);
  const servers: ServerProcess[] = [];
  try {
    const [a, b] = await Promise.all([
      spawnRouter("zest-nats-a", "A1", cluster.urls[0]!, storagesCfg({ g: memory("g/**") })),
      spawnRouter("zest-nats-b", "B2", cluster.urls[1]!, storagesCfg({})),
    ]);
    servers.push(a!, b!);
    await waitRoutersMeet([
      { server: a!, id: "A1" },
      { server: b!, id: "B2" },
    ]);
    await httpPut(a!.url, KEY, JSON_60, "application/json");
    await waitUntil(async () => (await httpGetText(b!.url, KEY)).includes('"sensor"'), 10_000, "B to read g/one");
    const pids = [b!.pid, a!.pid, ...natsPids(cluster)];
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    const url = new URL(b!.url);
    console.log("GETs so far | p50 ms | B µs/GET | A µs/GET | nats µs/GET | NATS messages/GET");
    try {
      for (let k = 0; k < blocks; k++) {
        const cpu0 = pids.map(processCpuSeconds);
        const msgs0 = await natsMessagesIn(cluster);
        const times = new Float64Array(perBlock);
        for (let i = 0; i < perBlock; i++) times[i] = await timedGet(agent, url);
        const msgs = (await natsMessagesIn(cluster)) - msgs0;
        const us = pids.map((p, i) => ((processCpuSeconds(p) - cpu0[i]!) * 1e6) / perBlock);
        const nats = us.slice(2).reduce((x, y) => x + y, 0);
        console.log(
          `${k * perBlock}-${(k + 1) * perBlock} | ${quantile(times.sort(), 0.5).toFixed(3)} | ${us[0]!.toFixed(0)} | ${us[1]!.toFixed(0)} | ${nats.toFixed(0)} | ${(msgs / perBlock).toFixed(2)}`,
        );
      }
    } finally {
      agent.destroy();
    }
  } finally {
    await Promise.all(servers.map((s) => s.stop()));
  }
}

async function floor(cluster: Awaited<ReturnType<typeof startNatsCluster>>): Promise<void> {
  const warmups = (first ?? "200,1000,2000,4000").split(",").map(Number);
  console.log("warm-up | p50 ms | requester µs/op | responder µs/op | nats µs/op");
  for (const warmup of warmups) {
    const f = await requestReplyFloor(cluster, natsPids(cluster), { from: 1, to: 0, warmup, count: 1000 });
    console.log(
      `${warmup} | ${f.p50Ms.toFixed(3)} | ${f.requesterUsPerOp.toFixed(0)} | ${f.responderUsPerOp.toFixed(0)} | ${f.natsUsPerOp.toFixed(0)}`,
    );
  }
}

if (mode !== "routers" && mode !== "floor") {
  console.error("usage: node --import tsx bench/nats-get-warmup.ts routers [blocks] [perBlock] | floor [warmups]");
  process.exit(2);
}
const cluster = await startNatsCluster();
try {
  await (mode === "routers" ? routers(cluster) : floor(cluster));
} finally {
  await cluster.stop();
}
