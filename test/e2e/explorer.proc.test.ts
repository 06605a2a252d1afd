import assert from "node:assert/strict";
import { mkdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import type { Browser, Page } from "playwright-core";
import {
  createStorage,
  HTML,
  NO_CHROMIUM,
  openExplorer,
  put,
  treeRow,
  watchedPage,
  launchChromium,
} from "../support/explorer-page.js";
import { getJson, http } from "../support/http.js";
import { startZest, type ZestProcess } from "../support/zest-process.js";
import { repoPath } from "../support/repo.js";

/**
 * Screenshots go to docs/img (the README and docs/explorer.md show them) with UPDATE_SCREENSHOTS=1, else to a
 * temporary directory, so an ordinary test run leaves the checkout as it was.
 */
const SHOTS =
  process.env.UPDATE_SCREENSHOTS === "1" ? `${repoPath("docs", "img")}/` : join(tmpdir(), "zest-explorer-shots");
describe("the explorer page", { skip: NO_CHROMIUM }, () => {
  let z: ZestProcess;
  let browser: Browser;
  let page: Page;
  const errors: string[] = [];

  before(async () => {
    z = await startZest(["--id", "0E0F"]);
    await put(z.url, "demo/example/hello", "Hello World!");
    await put(z.url, "demo/example/json", '{"temp":21.5,"tags":["a","b"]}', "application/json");
    await put(z.url, "demo/example/markup", '<img src=x onerror="window.__pwned=1"><script>window.__pwned=2</script>');
    await put(z.url, "demo/bin", "\u0000\u0001\u0002zest", "application/octet-stream");
    for (let b = 1; b <= 2; b++)
      for (let r = 1; r <= 6; r++)
        await put(z.url, `sensors/building-${b}/room-${r}/temp`, String(20 + r / 10), "application/float");
    browser = await launchChromium();
    page = await watchedPage(browser, errors, { viewport: { width: 1280, height: 900 } });
    await openExplorer(page, z.url);
  });

  after(async () => {
    await browser?.close();
    await z?.stop();
  });

  test("a browser GET on / gets the page with a strict CSP; other clients get what they got before", async () => {
    const pageRes = await http(z.url, "GET", "/", { headers: HTML });
    assert.equal(pageRes.status, 200);
    assert.match(pageRes.headers.get("content-type") ?? "", /^text\/html/);
    const csp = pageRes.headers.get("content-security-policy") ?? "";
    assert.match(csp, /script-src 'self'/);
    assert.match(csp, /default-src 'none'/);
    assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval/);
    assert.doesNotMatch(pageRes.text, /<script>|<style>| on\w+=/, "no inline script, style or handler");
    assert.match(pageRes.text, /src="\/\?_explorer=app\.js"/);
    // Not a browser: the empty key expression is still refused, as before.
    assert.equal((await http(z.url, "GET", "/")).status, 400);
    assert.equal((await http(z.url, "GET", "/", { headers: { accept: "application/json" } })).status, 400);
    // Assets, by name under the empty path; unknown names are a 404.
    let total = Buffer.byteLength(pageRes.text);
    for (const [name, type] of [
      ["app.js", /^text\/javascript/],
      ["app.css", /^text\/css/],
    ] as const) {
      const r = await http(z.url, "GET", `/?_explorer=${name}`);
      assert.equal(r.status, 200);
      assert.match(r.headers.get("content-type") ?? "", type);
      assert.equal(r.headers.get("x-content-type-options"), "nosniff");
      const again = await http(z.url, "GET", `/?_explorer=${name}`, {
        headers: { "if-none-match": r.headers.get("etag") ?? "" },
      });
      assert.equal(again.status, 304);
      total += Buffer.byteLength(r.text);
    }
    assert.ok(total < 50 * 1024, `the page weighs ${total} bytes, above 50 KB`);
    assert.equal((await http(z.url, "GET", "/?_explorer=nope.js")).status, 404);
    assert.equal((await http(z.url, "HEAD", "/", { headers: HTML })).status, 200);
  });

  test("the tree lists keys with counts, and the keyboard opens levels and shows a value", async () => {
    // Few keys: the first whole levels that fit in 30 rows open by themselves (not the rooms).
    await treeRow(page, "demo/example/hello").waitFor();
    assert.equal(await treeRow(page, "sensors").locator(".count").textContent(), "12");
    assert.equal(await treeRow(page, "demo").locator(".count").textContent(), "4");
    assert.equal(await treeRow(page, "sensors/building-2").getAttribute("aria-expanded"), "true");
    assert.equal(await treeRow(page, "sensors/building-2/room-1").getAttribute("aria-expanded"), "false");
    assert.match((await page.locator("#summary").textContent()) ?? "", /^16 keys match \*\*/);
    // Collapse sensors with the keyboard, reopen it, walk down into it, show a key with Enter.
    await treeRow(page, "sensors").click();
    assert.equal(await treeRow(page, "sensors").getAttribute("aria-expanded"), "false");
    await page.keyboard.press("ArrowRight");
    assert.equal(await treeRow(page, "sensors").getAttribute("aria-expanded"), "true");
    await page.keyboard.press("ArrowDown");
    assert.equal(await page.evaluate(() => document.activeElement?.getAttribute("data-path")), "sensors/building-1");
    await page.keyboard.press("ArrowRight"); // open: to the first room
    assert.equal(
      await page.evaluate(() => document.activeElement?.getAttribute("data-path")),
      "sensors/building-1/room-1",
    );
    assert.equal(await treeRow(page, "sensors/building-1/room-1").getAttribute("aria-expanded"), "false");
    await page.keyboard.press("ArrowRight"); // closed: opens it
    assert.equal(await treeRow(page, "sensors/building-1/room-1").getAttribute("aria-expanded"), "true");
    await page.keyboard.press("ArrowRight");
    assert.equal(
      await page.evaluate(() => document.activeElement?.getAttribute("data-path")),
      "sensors/building-1/room-1/temp",
    );
    await page.keyboard.press("Enter");
    assert.equal(await page.locator("#detail-title").textContent(), "sensors/building-1/room-1/temp");
    assert.equal(await page.locator("#detail-body pre.value").textContent(), "20.1");
    assert.match((await page.locator("#detail-body dl").textContent()) ?? "", /application\/float.*UTC.*router 0E0F/);
    await page.keyboard.press("ArrowLeft");
    assert.equal(
      await page.evaluate(() => document.activeElement?.getAttribute("data-path")),
      "sensors/building-1/room-1",
    );
  });

  test("values show by encoding: JSON pretty-printed, binary as hex and base64 with its size", async () => {
    await treeRow(page, "demo/example/json").click();
    assert.equal(
      await page.locator("#detail-body pre.value").textContent(),
      '{\n  "temp": 21.5,\n  "tags": [\n    "a",\n    "b"\n  ]\n}',
    );
    await treeRow(page, "demo/bin").click();
    const pres = await page.locator("#detail-body pre.value").allTextContents();
    assert.equal(pres[0], `00000000  ${"00 01 02 7a 65 73 74".padEnd(47)}  ...zest`);
    assert.equal(pres[1], "AAECemVzdA==");
    assert.match((await page.locator("#detail-body dl").textContent()) ?? "", /7 bytes/);
  });

  test("a value with markup is shown as text, and none of it runs", async () => {
    await treeRow(page, "demo/example/markup").click();
    assert.equal(
      await page.locator("#detail-body pre.value").textContent(),
      '<img src=x onerror="window.__pwned=1"><script>window.__pwned=2</script>',
    );
    assert.equal(await page.locator("img").count(), 0);
    assert.equal(await page.locator("body script").count(), 0);
    assert.equal(await page.evaluate(() => (window as unknown as { __pwned?: number }).__pwned), undefined);
  });

  test("a PUT and a DELETE made over HTTP after the page loaded show up live", async () => {
    await put(z.url, "demo/live/new", "arrived");
    await treeRow(page, "demo/live").waitFor({ timeout: 5000 });
    assert.equal(await treeRow(page, "demo").locator(".count").textContent(), "5");
    await treeRow(page, "demo/live").click();
    await treeRow(page, "demo/live/new").click();
    assert.equal(await page.locator("#detail-body pre.value").textContent(), "arrived");
    await put(z.url, "demo/live/new", "changed");
    await page.locator("#detail-body pre.value", { hasText: "changed" }).waitFor({ timeout: 5000 });
    assert.equal((await http(z.url, "DELETE", "/demo/live/new")).status, 200);
    await treeRow(page, "demo/live").waitFor({ state: "detached", timeout: 5000 });
    assert.equal(await treeRow(page, "demo").locator(".count").textContent(), "4");
  });

  test("the write form puts and deletes a key", async () => {
    await page.fill("#w-key", "demo/form/k");
    await page.fill("#w-enc", "application/json");
    await page.fill("#w-value", '{"from":"form"}');
    await page.click("#write-form button[type=submit]");
    await page.locator("#w-status", { hasText: "Put demo/form/k" }).waitFor({ timeout: 5000 });
    const { entries } = await getJson(z.url, "/demo/form/k");
    assert.deepEqual(
      entries.map((e) => [e.value, e.encoding]),
      [[{ from: "form" }, "application/json"]],
    );
    await treeRow(page, "demo/form").waitFor({ timeout: 5000 });
    // Delete asks for a second press.
    await page.click("#w-delete");
    assert.equal(await page.locator("#w-delete").textContent(), "Confirm delete");
    assert.equal((await getJson(z.url, "/demo/form/k")).entries.length, 1);
    await page.click("#w-delete");
    await page.locator("#w-status", { hasText: "Deleted demo/form/k" }).waitFor({ timeout: 5000 });
    assert.deepEqual((await getJson(z.url, "/demo/form/k")).entries, []);
    await treeRow(page, "demo/form").waitFor({ state: "detached", timeout: 5000 });
  });

  test("the selector box runs any key expression, admin keys included", async () => {
    await page.fill("#selector", "sensors/*/room-2/**");
    await page.press("#selector", "Enter");
    await page.locator("#summary", { hasText: "2 keys match sensors/*/room-2/**" }).waitFor({ timeout: 5000 });
    assert.equal(await treeRow(page, "sensors/building-1/room-1").count(), 0);
    await page.fill("#selector", "@/router/local/health");
    await page.press("#selector", "Enter");
    await page.locator("#summary", { hasText: "1 key matches" }).waitFor({ timeout: 5000 });
    await treeRow(page, "@/router/0E0F/health").click();
    assert.match((await page.locator("#detail-body pre.value").textContent()) ?? "", /"status": "ok"/);
    await page.fill("#selector", "demo/**/");
    await page.press("#selector", "Enter");
    await page.locator("#summary.error", { hasText: "400" }).waitFor({ timeout: 5000 });
    await page.fill("#selector", "**");
    await page.press("#selector", "Enter");
    await page.locator("#summary", { hasText: "16 keys match **" }).waitFor({ timeout: 5000 });
  });

  test("creating and removing a storage from the page", async () => {
    await page.locator("#routers td", { hasText: "0E0F (this router)" }).waitFor({ timeout: 5000 });
    assert.equal(await page.locator("#storage-form").isVisible(), true);
    await createStorage(page, "from-page", "page/**", "memory");
    const row = page.locator("#storages tr", { hasText: "from-page" });
    await row.waitFor({ timeout: 5000 });
    assert.match((await row.textContent()) ?? "", /page\/\*\*.*memory/);
    const { entries } = await getJson(z.url, "/@/router/local/status/plugins/storage_manager/storages/from-page");
    assert.deepEqual(entries[0]?.value, { key_expr: "page/**", volume: "memory" });
    await row.getByRole("button", { name: "Remove storage from-page" }).click();
    await row.getByRole("button", { name: "Remove storage from-page" }).click();
    await row.waitFor({ state: "detached", timeout: 5000 });
    assert.deepEqual(
      (await getJson(z.url, "/@/router/local/status/plugins/storage_manager/storages/from-page")).entries,
      [],
    );
    // A refused config shows the router's reason.
    await createStorage(page, "bad", "bad/**", "no-such-volume");
    await page.locator("#admin-status.error", { hasText: "400" }).waitFor({ timeout: 5000 });
  });

  test("screenshots, desktop and phone; the phone layout has no sideways scrolling", async () => {
    mkdirSync(SHOTS, { recursive: true });
    // Fresh pages: what a visitor sees first, with one key shown.
    const desktop = await watchedPage(browser, errors, { viewport: { width: 1280, height: 820 } });
    try {
      await openExplorer(desktop, z.url);
      await desktop.locator('#tree li[data-path="demo/example/json"]').click();
      await desktop.locator("#routers td", { hasText: "0E0F" }).waitFor({ timeout: 5000 });
      await desktop.screenshot({ path: join(SHOTS, "explorer.png") });
    } finally {
      await desktop.close();
    }
    const phone = await watchedPage(browser, errors, {
      viewport: { width: 390, height: 844 },
      isMobile: true,
      hasTouch: true,
      deviceScaleFactor: 2,
    });
    try {
      await openExplorer(phone, z.url);
      await phone.locator('#tree li[data-path="demo/example/hello"]').click();
      await phone.locator("#routers td", { hasText: "0E0F" }).waitFor({ timeout: 5000 });
      const widths = await phone.evaluate(() => ({
        doc: document.documentElement.scrollWidth,
        view: window.innerWidth,
      }));
      assert.ok(widths.doc <= widths.view, `the page is ${widths.doc} px wide on a ${widths.view} px screen`);
      await phone.evaluate(() => window.scrollTo(0, 0));
      await phone.screenshot({ path: join(SHOTS, "explorer-phone.png") });
    } finally {
      await phone.close();
    }
  });

  test("no script errors on the page", () => {
    assert.deepEqual(errors, []);
  });
});
