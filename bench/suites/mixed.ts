/**
 * 90% GET / 10% PUT over 1,000 keys of 100 bytes (issue 12): zest (memory storage on `**`, the
 * keys put beforehand) against a bare node:http server answering a GET with a fixed 60-byte JSON
 * body and a PUT by reading the body then 200 (`baselines/mixed.mjs`). Every tenth request is a
 * PUT; keys are visited in a fixed scattered order, so a write lands on a key other connections
 * read. Also measured, and reported: the same mix on a zest with the read cache off
 * (`uncached…`), i.e. what the query path alone gives.
 */
import { compareCacheSides, startCacheSides } from "../lib/cache-sides.js";
import { httpGetText, httpPut } from "../lib/http.js";
import type { OutgoingRequest, RequestSpec } from "../lib/load.js";
import { JSON_60, TEXT_100 } from "../lib/payloads.js";
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
  const sides = await startCacheSides("zest-mixed", "mixed.mjs", [JSON_60]);
  try {
    for (const z of [sides.zest, sides.uncached]) {
      for (let k = 0; k < KEYS; k++) await httpPut(z.url, `/bench/mix/${k}`, TEXT_100, "text/plain");
    }
    const c = await compareCacheSides(sides, mixSpec);
    const check = await httpGetText(sides.zest.url, "/bench/mix/999");
    if (!check.includes(TEXT_100)) throw new Error(`unexpected GET answer: ${check}`);
    return {
      name: "mixed",
      figures: c.figures,
      ratio: c.ratio,
      target: `>= ${TARGET}x`,
      pass: c.ratio >= TARGET,
      summary: c.summary,
      interferencePct: c.interferencePct,
      notes: c.notes,
    };
  } finally {
    await sides.stop();
  }
}
