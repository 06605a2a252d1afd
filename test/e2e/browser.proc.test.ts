import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, describe, test } from "node:test";
import type { Browser, Page } from "playwright-core";
import { launchChromium } from "../support/explorer-page.js";
import { getJson, http } from "../support/http.js";
import { startZest, type ZestProcess } from "../support/zest-process.js";

const CHROMIUM = "/usr/bin/chromium";

describe("in a real browser (headless Chromium)", {
  skip: !existsSync(CHROMIUM) && process.env.CI !== "true" ? "chromium not installed" : false,
}, () => {
  let z: ZestProcess;
  let browser: Browser;
  let page: Page;
  let other: Server;
  let otherOrigin: string;

  let foreign: Server;
  let foreignOrigin: string;

  before(async () => {
    // A page on another origin, to exercise CORS from a browser: one origin allowed to write,
    // one not.
    const htmlServer = (title: string): Server =>
      createServer((_req, res) => {
        res.writeHead(200, { "content-type": "text/html" });
        res.end(`<!doctype html><title>${title}</title>`);
      });
    other = htmlServer("other origin");
    foreign = htmlServer("foreign origin");
    await new Promise<void>((r) => other.listen(0, "127.0.0.1", r));
    await new Promise<void>((r) => foreign.listen(0, "127.0.0.1", r));
    otherOrigin = `http://127.0.0.1:${(other.address() as AddressInfo).port}`;
    foreignOrigin = `http://127.0.0.1:${(foreign.address() as AddressInfo).port}`;
    z = await startZest(["--id", "0C0D", "--cfg", `plugins/rest/cors/allowed_origins:["${otherOrigin}"]`]);
    browser = await launchChromium();
    page = await browser.newPage();
  });

  after(async () => {
    await browser?.close();
    other?.close();
    foreign?.close();
    await z?.stop();
  });

  test("the HTML view lists keys and values, escaped so stored markup never runs", async () => {
    await http(z.url, "PUT", "/demo/html/a", {
      body: '<img src=x onerror="window.__pwned=1">',
      headers: { "content-type": "text/plain" },
    });
    await http(z.url, "PUT", "/demo/html/b", { body: "plain & simple", headers: { "content-type": "text/plain" } });
    await page.goto(`${z.url}/demo/html/**`);
    const terms = await page.locator("dt").allTextContents();
    const values = await page.locator("dd").allTextContents();
    assert.deepEqual(terms, ["demo/html/a", "demo/html/b"]);
    assert.deepEqual(values, ['<img src=x onerror="window.__pwned=1">', "plain & simple"]);
    assert.equal(await page.locator("img").count(), 0);
    assert.equal(await page.evaluate(() => (window as unknown as { __pwned?: number }).__pwned), undefined);
  });

  test("EventSource receives PUT and DELETE events as they happen", async () => {
    await page.goto(`${z.url}/demo/es/none`);
    await page.evaluate(() => {
      const w = window as unknown as { events: string[]; es: EventSource; opened: Promise<void> };
      w.events = [];
      w.es = new EventSource("/demo/es/**");
      for (const kind of ["PUT", "DELETE"])
        w.es.addEventListener(kind, (e) => w.events.push(`${kind} ${(e as MessageEvent<string>).data}`));
      w.opened = new Promise((r) => w.es.addEventListener("open", () => r()));
    });
    await page.evaluate(() => (window as unknown as { opened: Promise<void> }).opened);
    await http(z.url, "PUT", "/demo/es/one", { body: "1", headers: { "content-type": "text/plain" } });
    await http(z.url, "PUT", "/demo/es/two", { body: '{"n":2}', headers: { "content-type": "application/json" } });
    await http(z.url, "DELETE", "/demo/es/one");
    await page.waitForFunction(() => (window as unknown as { events: string[] }).events.length >= 3, undefined, {
      timeout: 5000,
    });
    const events = await page.evaluate(() => (window as unknown as { events: string[] }).events);
    const parsed = events.map(
      (e) => [e.slice(0, e.indexOf(" ")), JSON.parse(e.slice(e.indexOf(" ") + 1)) as Record<string, unknown>] as const,
    );
    assert.deepEqual(
      parsed.map(([k, v]) => [k, v.key]),
      [
        ["PUT", "demo/es/one"],
        ["PUT", "demo/es/two"],
        ["DELETE", "demo/es/one"],
      ],
    );
    assert.deepEqual(parsed[1]![1].value, { n: 2 });
    await page.evaluate(() => (window as unknown as { es: EventSource }).es.close());
  });

  test("a page on a foreign origin can read but cannot make a data write or an admin write", async () => {
    await http(z.url, "PUT", "/demo/cors/kept", { body: "kept", headers: { "content-type": "text/plain" } });
    await page.goto(foreignOrigin);
    // No named functions inside evaluate: the test transpiler would wrap them in a helper the page lacks.
    const result = await page.evaluate(async (base) => {
      const read = (await (await fetch(`${base}/demo/cors/kept`)).json()) as Array<{ value: unknown }>;
      const writes: Array<[string, string, Record<string, string>, string]> = [
        ["PUT", "/demo/cors/foreign", { "content-type": "application/json" }, '{"from":"foreign"}'],
        ["DELETE", "/demo/cors/kept", {}, ""],
        [
          "PUT",
          "/@/router/local/config/plugins/storage_manager/storages/evil",
          { "content-type": "application/json" },
          '{"key_expr":"evil/**","volume":"memory"}',
        ],
        // No custom header at all: a PUT still needs a preflight (PUT is never a simple method).
        ["PUT", "/demo/cors/plain", {}, "x"],
      ];
      const outcomes: string[] = [];
      for (const [method, path, headers, body] of writes) {
        try {
          outcomes.push(
            String(
              (await fetch(`${base}${path}`, { method, headers, body: method === "DELETE" ? undefined : body })).status,
            ),
          );
        } catch {
          outcomes.push("blocked");
        }
      }
      return { read: read[0]?.value, outcomes };
    }, z.url);
    assert.equal(result.read, "kept");
    assert.deepEqual(result.outcomes, ["blocked", "blocked", "blocked", "blocked"]);
    assert.equal((await getJson(z.url, "/demo/cors/foreign")).entries.length, 0);
    assert.equal((await getJson(z.url, "/demo/cors/plain")).entries.length, 0);
    assert.equal((await getJson(z.url, "/demo/cors/kept")).entries.length, 1);
    assert.equal(
      (await getJson(z.url, "/@/router/local/status/plugins/storage_manager/storages/evil")).entries.length,
      0,
    );
  });

  test("a page on an allowed origin can make an admin write", async () => {
    await page.goto(otherOrigin);
    const status = await page.evaluate(async (base) => {
      const r = await fetch(`${base}/@/router/local/config/plugins/storage_manager/storages/frompage`, {
        method: "PUT",
        headers: { "content-type": "application/json" },
        body: '{"key_expr":"frompage/**","volume":"memory"}',
      });
      return r.status;
    }, z.url);
    assert.equal(status, 200);
    assert.equal(
      (await getJson(z.url, "/@/router/local/status/plugins/storage_manager/storages/frompage")).entries.length,
      1,
    );
  });

  test("a page on an allowed origin can PUT JSON and read it back (CORS preflight)", async () => {
    await page.goto(otherOrigin);
    const result = await page.evaluate(async (base) => {
      const put = await fetch(`${base}/demo/cors/k`, {
        method: "PUT",
        headers: { "content-type": "application/json" },
        body: '{"from":"browser"}',
      });
      const get = await fetch(`${base}/demo/cors/k`);
      return { put: put.status, get: (await get.json()) as Array<{ value: unknown }> };
    }, z.url);
    assert.equal(result.put, 200);
    assert.deepEqual(result.get[0]?.value, { from: "browser" });
    const { entries } = await getJson(z.url, "/demo/cors/k");
    assert.equal(entries[0]?.encoding, "application/json");
  });
});
