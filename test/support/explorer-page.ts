/** The explorer page in headless Chromium: shared by the explorer's end-to-end tests. */
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { type Browser, type ConsoleMessage, chromium, type Page } from "playwright-core";
import { http } from "./http.js";

/** Debian's Chromium, driven by playwright-core. */
export const CHROMIUM = "/usr/bin/chromium";
export const CHROMIUM_ARGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];
/** Starts Debian's Chromium headless, with `extraArgs` after the shared flags. */
export function launchChromium(extraArgs: readonly string[] = []): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM, args: [...CHROMIUM_ARGS, ...extraArgs] });
}

/** What a browser navigation sends. */
export const HTML = { accept: "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8" };
/**
 * Requests expected to fail (the browser logs every fetch answered >= 400 as a console error):
 * the admin write probe (404 or 403), and the refusals the tests ask for.
 */
const EXPECTED_FAILURES = new Set([
  "/@/explorer/write-probe",
  "/@/router/0E0F/config/plugins/storage_manager/storages/bad",
  "/demo/**/",
]);

/** A page that records every script error and console error (the expected failures excepted). */
export async function watchedPage(
  browser: Browser,
  errors: string[],
  options: Parameters<Browser["newPage"]>[0] = {},
): Promise<Page> {
  const page = await browser.newPage(options);
  page.on("pageerror", (e) => errors.push(`pageerror: ${e.message}`));
  page.on("console", (m: ConsoleMessage) => {
    if (m.type() !== "error") return;
    if (m.text().startsWith("Failed to load resource") && EXPECTED_FAILURES.has(new URL(m.location().url).pathname))
      return;
    errors.push(`console: ${m.text()} (${m.location().url})`);
  });
  return page;
}

/** PUTs a value over HTTP and asserts the 200. */
export async function put(base: string, key: string, body: string, type = "text/plain"): Promise<void> {
  const r = await http(base, "PUT", `/${key}`, { body, headers: { "content-type": type } });
  assert.equal(r.status, 200, r.text);
}

/** Opens the explorer and waits for the tree and the live stream. */
export async function openExplorer(page: Page, url: string): Promise<void> {
  await page.goto(`${url}/`);
  await page.waitForSelector("body[data-ready][data-live='true']", { timeout: 20_000 });
}

/** The tree row of a key or prefix. */
export const treeRow = (page: Page, path: string) => page.locator(`#tree li[data-path="${path}"]`);

/** Fills and sends the page's "Create a storage" form. */
export async function createStorage(page: Page, name: string, keyExpr: string, volume: string): Promise<void> {
  await page.fill("#s-name", name);
  await page.fill("#s-ke", keyExpr);
  await page.fill("#s-volume", volume);
  await page.click("#storage-form button[type=submit]");
}

/** Why a browser test cannot run here, or false. */
export const NO_CHROMIUM: string | false =
  !existsSync(CHROMIUM) && process.env.CI !== "true" ? "chromium not installed" : false;
