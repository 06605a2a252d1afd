import assert from "node:assert/strict";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import type { Browser } from "playwright-core";
import { launchChromium } from "../support/explorer-page.js";
import { hashSecret } from "../../src/access/hash.js";
import { http } from "../support/http.js";
import { startZest, type ZestProcess } from "../support/zest-process.js";

const CHROMIUM = "/usr/bin/chromium";
const basic = (user: string, password: string): string =>
  `Basic ${Buffer.from(`${user}:${password}`).toString("base64")}`;

describe("access control in a real browser (headless Chromium)", {
  skip: !existsSync(CHROMIUM) && process.env.CI !== "true" ? "chromium not installed" : false,
}, () => {
  let dir: string;
  let z: ZestProcess;
  let browser: Browser;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), "zest-browser-acl-"));
    const cfg = join(dir, "acl.json5");
    writeFileSync(
      cfg,
      JSON.stringify({
        access_control: {
          enabled: true,
          default_permission: "deny",
          rules: [
            { id: "demo", messages: ["query", "declare_subscriber"], key_exprs: ["demo/**"], permission: "allow" },
            {
              id: "all",
              messages: ["put", "delete", "query", "declare_subscriber"],
              key_exprs: ["**", "@/**"],
              permission: "allow",
            },
          ],
          subjects: [
            { id: "alice", usernames: ["alice"] },
            { id: "root", usernames: ["root"] },
          ],
          policies: [
            { rules: ["demo"], subjects: ["alice"] },
            { rules: ["all"], subjects: ["root"] },
          ],
          users: [
            { name: "alice", password_hash: hashSecret("alice-pw", { ln: 8 }) },
            { name: "root", password_hash: hashSecret("root-pw", { ln: 8 }) },
          ],
        },
      }),
    );
    z = await startZest(["-c", cfg]);
    browser = await launchChromium();
  });

  after(async () => {
    await browser?.close();
    await z?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  test("an authenticated user's EventSource receives only the keys the user may read", async () => {
    const context = await browser.newContext({ httpCredentials: { username: "alice", password: "alice-pw" } });
    try {
      const page = await context.newPage();
      const nav = await page.goto(`${z.url}/demo/none`);
      assert.equal(nav?.status(), 200);
      await page.evaluate(() => {
        const w = window as unknown as { events: string[]; es: EventSource; opened: Promise<void> };
        w.events = [];
        w.es = new EventSource("/**");
        w.es.addEventListener("PUT", (e) => w.events.push((e as MessageEvent<string>).data));
        w.opened = new Promise((r) => w.es.addEventListener("open", () => r()));
      });
      await page.evaluate(() => (window as unknown as { opened: Promise<void> }).opened);
      const root = { authorization: basic("root", "root-pw"), "content-type": "text/plain" };
      assert.equal((await http(z.url, "PUT", "/secret/k", { body: "hidden", headers: root })).status, 200);
      assert.equal((await http(z.url, "PUT", "/demo/k", { body: "shown", headers: root })).status, 200);
      assert.equal((await http(z.url, "PUT", "/secret/k2", { body: "hidden", headers: root })).status, 200);
      assert.equal((await http(z.url, "PUT", "/demo/k2", { body: "shown", headers: root })).status, 200);
      await page.waitForFunction(() => (window as unknown as { events: string[] }).events.length >= 2, undefined, {
        timeout: 5000,
      });
      const keys = (await page.evaluate(() => (window as unknown as { events: string[] }).events)).map(
        (d) => (JSON.parse(d) as { key: string }).key,
      );
      assert.deepEqual(keys, ["demo/k", "demo/k2"]);
    } finally {
      await context.close();
    }
  });
});
