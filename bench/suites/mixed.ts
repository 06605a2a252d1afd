/**
 * 90% GET / 10% PUT over 1,000 keys of 100 bytes (issue 12): zest (memory storage on `**`, the
 * keys put beforehand) against a bare node:http server answering a GET with a fixed 60-byte JSON
 * body and a PUT by reading the body then 200 (`baselines/mixed.mjs`). Every tenth request is a
 * PUT; keys are visited in a fixed scattered order, so a write lands on a key other connections
 * read. Also measured, and reported: the same mix on a zest with the read cache off
 * (`uncached…`), i.e. what the query path alone gives.
 */
import { fmtInt, fmtRatio } from "../lib/format.js";
import { httpGetText, httpPut } from "../lib/http.js";
import {
  compare,
  cpuPerReq,
  loadFigures,
  loadNotes,
  type OutgoingRequest,
  pairedRatio,
  type RequestSpec,
  roundsNote,
  PAIRED_ROUNDS,
} from "../lib/load.js";
import { JSON_60, TEXT_100 } from "../lib/payloads.js";
import { type ServerProcess, spawnBaseline, spawnZest } from "../lib/proc.js";
import type { BenchResult } from "../lib/types.js";

const TARGET = 0.75;
const KEYS = 1000;

/** The request mix: a fresh counter per server, so every side sees the same sequence. */
function mixSpec(): RequestSpec {
  let n = 0;
  const put = { "content-type": "text/plain" };
  return {
    path: "/bench/mix/0",
    setupRequest: (req: OutgoingRequest): OutgoingRequest => {
      const i = n++;
      const path = `/bench/mix/${(i * 7919) % KEYS}`;
      return i % 10 === 0
        ? { ...req, method: "PUT", path, headers: put, body: TEXT_100 }
        : { ...req, method: "GET", path, headers: {}, body: undefined };
    },
  };
}

export async function run(): Promise<BenchResult> {
  const servers: ServerProcess[] = [];
  try {
    const zest = await spawnZest("zest-mixed");
    servers.push(zest);
    const uncached = await spawnZest("zest-mixed-uncached", ["--cfg", "plugins/rest/cache_entries:0"]);
    servers.push(uncached);
    const base = await spawnBaseline("mixed.mjs", [JSON_60]);
    servers.push(base);
    for (const z of [zest, uncached]) {
      for (let k = 0; k < KEYS; k++) await httpPut(z.url, `/bench/mix/${k}`, TEXT_100, "text/plain");
    }
    const [z, b, u] = await compare(
      [
        { server: zest, spec: mixSpec() },
        { server: base, spec: mixSpec() },
        { server: uncached, spec: mixSpec() },
      ],
      PAIRED_ROUNDS,
    );
    const check = await httpGetText(zest.url, "/bench/mix/999");
    if (!check.includes(TEXT_100)) throw new Error(`unexpected GET answer: ${check}`);
    const ratio = pairedRatio(z, b);
    const uncachedRatio = pairedRatio(u, b);
    return {
      name: "mixed",
      figures: {
        ...loadFigures("zest", z),
        ...loadFigures("baseline", b),
        ...loadFigures("uncached", u),
        uncachedRatio,
        cpuPerReqRatio: cpuPerReq(b) / cpuPerReq(z),
      },
      ratio,
      target: `>= ${TARGET}x`,
      pass: ratio >= TARGET,
      summary: `zest ${fmtInt(z.reqPerSec)} req/s / node:http ${fmtInt(b.reqPerSec)} req/s (${roundsNote(z, b)}; read cache off: ${fmtInt(u.reqPerSec)} req/s, ${fmtRatio(uncachedRatio)})`,
      interferencePct: Math.max(...[z, b, u].flatMap((f) => [f.otherCpuPct, f.stealPct])),
      notes: [...loadNotes("zest", z), ...loadNotes("node:http", b), ...loadNotes("zest, cache off", u)],
    };
  } finally {
    await Promise.all(servers.map((s) => s.stop()));
  }
}
