/**
 * The explorer's countdown (docs/explorer.md, docs/ttl-and-leases.md): a key with a lifetime
 * shows the time it has left, ticking, and its row goes when its expiry's DELETE comes through
 * the live stream; in real headless Chromium against a real router.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { chromium, type Browser, type Page } from "playwright-core";
import {
  CHROMIUM,
  CHROMIUM_ARGS,
  NO_CHROMIUM,
  openExplorer,
  put,
  treeRow,
  watchedPage,
} from "../support/explorer-page.js";
import { http } from "../support/http.js";
import { startZest, type ZestProcess } from "../support/zest-process.js";

/** Seconds a row's countdown shows (`2.9 s`, `12 s`). */
async function secondsLeft(page: Page, path: string): Promise<number> {
  const text = (await treeRow(page, path).locator(".ttl").textContent()) ?? "";
  const m = /^(\d+(?:\.\d)?) s$/.exec(text);
  assert.ok(m, `countdown text ${JSON.stringify(text)}`);
  return Number(m[1]);
}

describe("the explorer's countdown for keys with a lifetime", { skip: NO_CHROMIUM }, () => {
  let z: ZestProcess;
  let browser: Browser;
  let page: Page;
  const errors: string[] = [];

  before(async () => {
    z = await startZest([]);
    await put(z.url, "keep", "forever");
    const r = await http(z.url, "PUT", "/before?_ttl=8s", {
      body: "read at load",
      headers: { "content-type": "text/plain" },
    });
    assert.equal(r.status, 200);
    browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
    page = await watchedPage(browser, errors, { viewport: { width: 1280, height: 900 } });
    await openExplorer(page, z.url);
  });

  after(async () => {
    await browser?.close();
    await z?.stop();
  });

  test("a key written with _ttl=3s after the page loaded counts down, then its row goes; a permanent key has no countdown", async () => {
    // The key written before the page opened got its deadline with the page's GET.
    const atLoad = await secondsLeft(page, "before");
    assert.ok(atLoad > 0 && atLoad <= 8, `${atLoad} s`);
    const r = await http(z.url, "PUT", "/soon?_ttl=3s", { body: "brief", headers: { "content-type": "text/plain" } });
    assert.equal(r.status, 200);
    await treeRow(page, "soon").locator(".ttl").waitFor({ timeout: 5000 });
    const first = await secondsLeft(page, "soon");
    assert.ok(first > 0 && first <= 3, `first reading ${first} s`);
    // It ticks: a later reading is lower.
    await page.waitForFunction(
      (before) => {
        const t = document.querySelector('#tree li[data-path="soon"] .ttl')?.textContent ?? "";
        return Number.parseFloat(t) < before - 0.5;
      },
      first,
      { timeout: 3000 },
    );
    // The detail pane counts down too.
    await treeRow(page, "soon").click();
    await page.locator("#detail-body dd.expires").waitFor({ timeout: 2000 });
    assert.match((await page.locator("#detail-body dd.expires").textContent()) ?? "", /^(\d+\.\d s|expiring)$/);
    assert.equal(await treeRow(page, "keep").locator(".ttl").count(), 0);
    // Expired: the DELETE comes through the live stream and the row goes.
    await treeRow(page, "soon").waitFor({ state: "detached", timeout: 6000 });
    assert.equal(await treeRow(page, "keep").count(), 1);
  });

  test("a key with a lifetime read at load counts down and goes the same way", async () => {
    // Written before the page opened: its deadline came with the GET (`?_expires=true`).
    await treeRow(page, "before").waitFor({ state: "detached", timeout: 10_000 });
    assert.equal(await treeRow(page, "keep").count(), 1);
  });

  test("no script errors on the page", () => {
    assert.deepEqual(errors, []);
  });
});
