/**
 * The explorer page on 10,000 keys (issue 13: ≤ 1 s in headless Chromium). Measured in the
 * browser, from the start of the navigation to `/` (the page's time origin) to the
 * `zest-tree-rendered` mark the page sets once the tree is drawn. The baseline, in the same
 * browser and run, is what no page can avoid: a same-origin page fetching the same `GET /**`
 * and parsing its JSON, without building or drawing anything. Rounds alternate the two, each in
 * a fresh browser context (no cache, no open connection).
 */
import type { Browser } from "playwright-core";
import { launchChromium } from "../../test/support/explorer-page.js";
import { fmtInt, fmtMs } from "../lib/format.js";
import { httpGetText, httpPut } from "../lib/http.js";
import { startInterference, spawnZest } from "../lib/proc.js";
import type { BenchResult } from "../lib/types.js";

const KEYS = 10_000;
const ROUNDS = 7;
const TARGET_MS = 1000;

/** `sensors/building-<b>/floor-<f>/room-<r>/<metric>`: 10 × 10 × 10 × 10 keys. */
function keyOf(i: number): string {
  const metrics = ["temp", "humidity", "co2", "pressure", "light", "noise", "voc", "pm25", "occupancy", "power"];
  return `sensors/building-${Math.floor(i / 1000)}/floor-${Math.floor(i / 100) % 10}/room-${Math.floor(i / 10) % 10}/${metrics[i % 10]}`;
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

async function explorerRound(browser: Browser, url: string): Promise<{ ms: number; keys: string }> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  try {
    const page = await context.newPage();
    await page.goto(`${url}/`);
    await page.waitForSelector("body[data-ready]", { timeout: 30_000 });
    const ms = await page.evaluate(
      () => performance.getEntriesByName("zest-tree-rendered")[0]?.startTime ?? Number.NaN,
    );
    const keys = (await page.locator("#summary").textContent()) ?? "";
    return { ms, keys };
  } finally {
    await context.close();
  }
}

async function baselineRound(browser: Browser, url: string): Promise<number> {
  const context = await browser.newContext();
  try {
    const page = await context.newPage();
    // A same-origin document with no script of its own: the stylesheet asset.
    await page.goto(`${url}/?_explorer=app.css`);
    return await page.evaluate(async () => {
      const t0 = performance.now();
      const entries = (await (await fetch("/**", { headers: { accept: "application/json" } })).json()) as unknown[];
      if (entries.length === 0) throw new Error("no entries");
      return performance.now() - t0;
    });
  } finally {
    await context.close();
  }
}

export async function run(): Promise<BenchResult> {
  const zest = await spawnZest("zest-explorer");
  let browser: Browser | undefined;
  try {
    for (let i = 0; i < KEYS; i += 100) {
      await Promise.all(
        Array.from({ length: 100 }, (_, j) =>
          httpPut(zest.url, `/${keyOf(i + j)}`, `{"value":${(i + j) % 97},"unit":"x","ok":true}`, "application/json"),
        ),
      );
    }
    const body = await httpGetText(zest.url, "/**");
    browser = await launchChromium();
    // One warm-up of each, not counted (the router's and the browser's JIT).
    await explorerRound(browser, zest.url);
    await baselineRound(browser, zest.url);
    const explorer: number[] = [];
    const baseline: number[] = [];
    const stopWatch = startInterference([zest.pid]);
    for (let r = 0; r < ROUNDS; r++) {
      const e = await explorerRound(browser, zest.url);
      if (!e.keys.startsWith(`${KEYS} keys match`))
        throw new Error(`the explorer showed "${e.keys}", expected ${KEYS} keys`);
      explorer.push(e.ms);
      baseline.push(await baselineRound(browser, zest.url));
    }
    const interference = stopWatch();
    const e = median(explorer);
    const b = median(baseline);
    return {
      name: "explorer",
      figures: {
        keys: KEYS,
        responseBytes: Buffer.byteLength(body),
        explorerMedianMs: e,
        explorerMaxMs: Math.max(...explorer),
        fetchParseMedianMs: b,
        stealPct: interference.stealPct,
      },
      ratio: e / b,
      target: `<= ${fmtInt(TARGET_MS)} ms`,
      pass: e <= TARGET_MS,
      summary: `${fmtInt(KEYS)} keys (${fmtInt(Buffer.byteLength(body) / 1024)} KiB of JSON): navigation to tree drawn ${fmtMs(e)} (max ${fmtMs(Math.max(...explorer))}) / fetch and JSON.parse alone ${fmtMs(b)}`,
      // Chromium's renderers come and go with each context, so their CPU cannot be told from
      // other processes': only the hypervisor's steal counts as interference here.
      interferencePct: interference.stealPct,
    };
  } finally {
    await browser?.close();
    await zest.stop();
  }
}
