/**
 * The explorer over HTTP/2 (docs/http2.md) in real Chromium: 50 tabs on one origin all live on
 * one connection, and a PUT reaches every one. Over HTTP/1.1 the browser's six connections per
 * host are all held by the first six tabs' event streams, and the seventh tab stalls.
 */
import assert from "node:assert/strict";
import { request as httpsRequest } from "node:https";
import { after, before, describe, test } from "node:test";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { silentLogger } from "../../src/core/log.js";
import { defaultStartOptions } from "../../src/defaults.js";
import { startZest, type Zest } from "../../src/runtime.js";
import { certificateForSuite } from "../support/certificate.js";
import { http } from "../support/http.js";
import { NO_CHROMIUM, openExplorer, treeRow, launchChromium } from "../support/explorer-page.js";

const TABS = 50;
const TEXT = { "content-type": "text/plain" };

/** A PUT over HTTPS to the router's self-signed certificate. */
function putTls(url: string, path: string, body: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const req = httpsRequest(`${url}${path}`, { method: "PUT", headers: TEXT, rejectUnauthorized: false }, (res) => {
      res.resume();
      res.on("end", () => (res.statusCode === 200 ? resolve() : reject(new Error(`PUT ${path}: ${res.statusCode}`))));
    });
    req.on("error", reject);
    req.end(body);
  });
}

describe("the explorer in 50 tabs over HTTP/2", { skip: NO_CHROMIUM }, () => {
  const certificate = certificateForSuite("zest-h2-tabs-");
  let h2: Zest;
  let h1: Zest;
  let browser: Browser;
  before(async () => {
    const opts = { ...defaultStartOptions(), logger: silentLogger };
    h2 = await startZest(
      {
        plugins: {
          rest: { http_port: "127.0.0.1:0", tls: certificate.tls },
        },
      } as never,
      opts,
    );
    h1 = await startZest({ plugins: { rest: { http_port: "127.0.0.1:0" } } }, opts);
    await http(h1.restUrl!, "PUT", "/demo/example/hello", { body: "hi", headers: TEXT });
    await putTls(h2.restUrl!, "/demo/example/hello", "hi");
    browser = await launchChromium(["--ignore-certificate-errors"]);
  });
  after(async () => {
    await browser?.close();
    await h2?.close();
    await h1?.close();
  });

  async function openTabs(context: BrowserContext, url: string, n: number): Promise<Page[]> {
    const pages: Page[] = [];
    // Ten at a time: the machine is shared, and each tab is a renderer.
    for (let i = 0; i < n; i += 10) {
      const batch = await Promise.all(
        Array.from({ length: Math.min(10, n - i) }, async () => {
          const page = await context.newPage();
          await openExplorer(page, url);
          return page;
        }),
      );
      pages.push(...batch);
    }
    return pages;
  }

  test("over HTTP/2 all 50 tabs are live, and a PUT reaches every one", async () => {
    const context = await browser.newContext({ ignoreHTTPSErrors: true });
    try {
      const url = h2.restUrl!;
      assert.match(url, /^https:/);
      const pages = await openTabs(context, url, TABS);
      assert.equal(h2.rest!.status().sse_streams as number, TABS, "one event stream per tab");
      const protocol = await pages[TABS - 1]!.evaluate(
        () => (performance.getEntriesByType("navigation")[0] as PerformanceNavigationTiming).nextHopProtocol,
      );
      assert.equal(protocol, "h2");
      await putTls(url, "/demo/live/new", "arrived");
      await Promise.all(pages.map((p) => treeRow(p, "demo/live").waitFor({ timeout: 10_000 })));
    } finally {
      await context.close();
    }
  });

  test("over HTTP/1.1 the seventh tab stalls: six event streams hold the browser's six connections", async () => {
    const context = await browser.newContext();
    try {
      const url = h1.restUrl!;
      // One tab after another, each waited for until its stream is open: the explorer subscribes
      // before it reads (docs/explorer.md), so a tab briefly needs two connections, and six tabs
      // opened at once can take the six before every tab's first read, a race this test avoids.
      for (let i = 0; i < 6; i++) {
        const page = await context.newPage();
        await page.goto(`${url}/`);
        await page.waitForSelector("body[data-live='true']", { timeout: 20_000 });
      }
      assert.equal(h1.rest!.status().sse_streams as number, 6);
      const seventh = await context.newPage();
      const opened = openExplorer(seventh, url).then(
        () => "live",
        () => "stalled",
      );
      const outcome = await Promise.race([opened, new Promise((r) => setTimeout(() => r("stalled"), 4000))]);
      assert.equal(outcome, "stalled");
      assert.equal(h1.rest!.status().sse_streams as number, 6, "the seventh tab never got its stream");
    } finally {
      await context.close();
    }
  });
});
