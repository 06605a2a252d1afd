// The explorer page with several routers, access control, narrowed admin permissions, and
// Variant B (the single-router behaviour is in explorer.test.ts).
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import type { Browser, Page } from "playwright-core";
import {
  createStorage,
  HTML,
  NO_CHROMIUM,
  openExplorer,
  treeRow,
  watchedPage,
  launchChromium,
} from "../support/explorer-page.js";
import { getJson, http } from "../support/http.js";
import { startNatsCluster, type NatsCluster } from "../support/nats-cluster.js";
import { CLI, startZest, type ZestProcess } from "../support/zest-process.js";
import { repoPath } from "../support/repo.js";

describe("the explorer on routers in a NATS cluster", { skip: NO_CHROMIUM }, () => {
  let cluster: NatsCluster;
  let a: ZestProcess;
  let b: ZestProcess;
  let browser: Browser;
  const errors: string[] = [];

  before(async () => {
    cluster = await startNatsCluster({ size: 1, jetstream: false });
    [a, b] = await Promise.all([
      startZest(["--id", "A7", "--nats", cluster.urls[0]!]),
      startZest(["--id", "B7", "--nats", cluster.urls[0]!, "--cfg", "plugins/storage_manager/storages:{}"]),
    ]);
    browser = await launchChromium();
  });
  after(async () => {
    await browser?.close();
    await Promise.all([a?.stop(), b?.stop()]);
    await cluster?.stop();
  });

  test("the admin view lists every router with its fabric peers, and creates a storage on another router", async () => {
    const page = await watchedPage(browser, errors);
    await openExplorer(page, a.url);
    // Routers started together meet within a heartbeat or two.
    for (let i = 0; i < 50 && (await page.locator("#routers tbody tr").count()) < 2; i++) {
      await page.click("#admin-refresh");
      await page.waitForTimeout(200);
    }
    const local = page.locator("#routers tr", { hasText: "A7 (this router)" });
    assert.match((await local.textContent()) ?? "", /nats.*B7/);
    assert.match((await page.locator("#routers tr", { hasText: "B7" }).last().textContent()) ?? "", /nats.*A7/);
    await page.selectOption("#s-router", "B7");
    await createStorage(page, "on-b", "onb/**", "memory");
    await page.locator("#storages tr", { hasText: "on-b" }).waitFor({ timeout: 5000 });
    const { entries } = await getJson(b.url, "/@/router/local/status/plugins/storage_manager/storages/on-b");
    assert.deepEqual(entries[0]?.value, { key_expr: "onb/**", volume: "memory" });
    assert.deepEqual(errors, []);
  });
});

/** Access control (src/access) arrived on another branch: this part runs where it is built. */
const ACCESS_BUILT = existsSync(repoPath("dist", "access"));

describe("the explorer with access control (Basic auth)", {
  skip: NO_CHROMIUM || (!ACCESS_BUILT && "access control is not built"),
}, () => {
  let z: ZestProcess;
  let browser: Browser;
  let dir: string;
  const errors: string[] = [];
  const basic = (user: string, pw: string) => ({
    authorization: `Basic ${Buffer.from(`${user}:${pw}`).toString("base64")}`,
  });

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), "zest-explorer-acl-"));
    const hash = execFileSync(process.execPath, [CLI, "passwd"], { input: "pw\n", encoding: "utf8" })
      .trim()
      .split("\n")
      .pop()!;
    const config = {
      access_control: {
        enabled: true,
        default_permission: "deny",
        rules: [
          {
            id: "demo",
            messages: ["query", "declare_subscriber", "put", "delete"],
            key_exprs: ["demo/**"],
            permission: "allow",
          },
          { id: "read admin", messages: ["query"], key_exprs: ["@/**"], permission: "allow" },
          {
            id: "all",
            messages: ["query", "declare_subscriber", "put", "delete"],
            key_exprs: ["**", "@/**"],
            permission: "allow",
          },
        ],
        subjects: [
          { id: "alice", usernames: ["alice"] },
          { id: "root", usernames: ["root"] },
        ],
        policies: [
          { rules: ["demo", "read admin"], subjects: ["alice"] },
          { rules: ["all"], subjects: ["root"] },
        ],
        users: [
          { name: "alice", password_hash: hash },
          { name: "root", password_hash: hash },
        ],
      },
    };
    writeFileSync(join(dir, "zest.json5"), JSON.stringify(config));
    z = await startZest(["-c", join(dir, "zest.json5")]);
    for (const key of ["demo/open", "secret/hidden"]) {
      const r = await http(z.url, "PUT", `/${key}`, {
        body: key,
        headers: { "content-type": "text/plain", ...basic("root", "pw") },
      });
      assert.equal(r.status, 200, r.text);
    }
    browser = await launchChromium();
  });
  after(async () => {
    await browser?.close();
    await z?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  /** Opens the explorer as `user` (the browser answers the Basic challenge), runs `check`, closes. */
  async function asUser(user: string, check: (page: Page) => Promise<void>): Promise<void> {
    const context = await browser.newContext({ httpCredentials: { username: user, password: "pw" } });
    try {
      const page = await context.newPage();
      page.on("pageerror", (e) => errors.push(`pageerror: ${e.message}`));
      await openExplorer(page, z.url);
      await check(page);
    } finally {
      await context.close();
    }
  }

  test("a user sees only the keys they may read, live, and no admin forms without admin write rights", async () => {
    await asUser("alice", async (page) => {
      assert.match((await page.locator("#summary").textContent()) ?? "", /^1 key matches \*\*/);
      assert.equal(await treeRow(page, "secret").count(), 0);
      await http(z.url, "PUT", "/secret/later", {
        body: "x",
        headers: { "content-type": "text/plain", ...basic("root", "pw") },
      });
      await http(z.url, "PUT", "/demo/later", {
        body: "y",
        headers: { "content-type": "text/plain", ...basic("root", "pw") },
      });
      await treeRow(page, "demo/later").waitFor({ timeout: 5000 });
      assert.equal(await treeRow(page, "secret").count(), 0);
      await page.locator("#admin p", { hasText: "Read-only here: 403" }).waitFor({ timeout: 5000 });
      assert.equal(await page.locator("#storage-form").isVisible(), false);
    });
  });

  test("a user with admin rights gets the admin forms", async () => {
    await asUser("root", async (page) => {
      await treeRow(page, "secret").waitFor({ timeout: 5000 });
      await page.locator("#storage-form").waitFor({ state: "visible", timeout: 5000 });
      assert.deepEqual(errors, []);
    });
  });
});

describe("the explorer without admin write rights, and in Variant B", { skip: NO_CHROMIUM }, () => {
  let browser: Browser;
  before(async () => {
    browser = await launchChromium();
  });
  after(async () => {
    await browser?.close();
  });

  test("with --adminspace-permissions r the admin forms are hidden and the page says why", async () => {
    const z = await startZest(["--adminspace-permissions", "r"]);
    const errors: string[] = [];
    try {
      const page = await watchedPage(browser, errors);
      await openExplorer(page, z.url);
      await page.locator("#admin p", { hasText: "Read-only here: 403" }).waitFor({ timeout: 5000 });
      await page.locator("#storages td", { hasText: "default" }).waitFor({ timeout: 5000 });
      assert.equal(await page.locator("#storage-form").isVisible(), false);
      assert.equal(await page.locator("#storages button").first().isVisible(), false);
      assert.equal(await page.locator("#write-form").isVisible(), true);
      assert.deepEqual(errors, []);
    } finally {
      await z.stop();
    }
  });

  test("Variant B does not serve the explorer: / answers as it did", async () => {
    const z = await startZest(["--rest-variant", "b"]);
    try {
      const r = await http(z.url, "GET", "/", { headers: HTML });
      assert.equal(r.headers.get("content-security-policy"), null);
      assert.doesNotMatch(r.text, /_explorer/);
    } finally {
      await z.stop();
    }
  });
});
