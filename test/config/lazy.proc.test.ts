import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { test } from "node:test";
import { REPO_ROOT } from "../support/repo.js";

const ROOT = REPO_ROOT;

/**
 * Runs `body` as an ES module in a fresh node (from the repository root, against dist/) and
 * returns the heavy dependencies it had loaded by the end: better-sqlite3 and @nats-io/* are
 * CommonJS, so every module of theirs that was loaded is in the CommonJS cache.
 */
function heavyModulesAfter(body: string): string[] {
  const script = `
    import { createRequire } from "node:module";
    ${body}
    const loaded = Object.keys(createRequire(import.meta.url).cache);
    const heavy = new Set(loaded.flatMap((p) => /node_modules[\\\\/](better-sqlite3|@nats-io[\\\\/][^\\\\/]+)/.exec(p)?.[1] ?? []));
    console.log(JSON.stringify([...heavy].sort()));
    process.exit(0);
  `;
  const r = spawnSync(process.execPath, ["--input-type=module", "-e", script], {
    cwd: ROOT,
    encoding: "utf8",
    timeout: 30_000,
  });
  assert.equal(r.status, 0, r.stderr);
  return JSON.parse(r.stdout.trim().split("\n").pop()!) as string[];
}

test('import "zest" loads neither better-sqlite3 nor NATS', () => {
  assert.deepEqual(heavyModulesAfter('await import("./dist/index.js");'), []);
});

test("a router with memory storages only loads neither; its first SQLite storage loads better-sqlite3 alone", () => {
  const start = `
    const { startZest, defaultStartOptions } = await import("./dist/index.js");
    const { silentLogger } = await import("./dist/core/log.js");
    const { mkdtempSync } = await import("node:fs");
    const { join } = await import("node:path");
    const { tmpdir } = await import("node:os");
    const dir = mkdtempSync(join(tmpdir(), "zest-lazy-"));
    const z = await startZest({ data_dir: dir, plugins: { rest: { http_port: "none" } } }, { ...defaultStartOptions(), logger: silentLogger });
    await z.session.put("a/b", "memory only");
  `;
  assert.deepEqual(heavyModulesAfter(`${start} await z.close();`), []);
  const sqlite = `${start}
    await z.manager.putStorage("s", { key_expr: "s/**", volume: { id: "sqlite", path: join(dir, "s.db") } });
    await z.close();`;
  assert.deepEqual(heavyModulesAfter(sqlite), ["better-sqlite3"]);
});

test("options of sqlite and jetstream volumes and storages are checked without loading their modules", () => {
  const script = `
    const { startZest, defaultStartOptions } = await import("./dist/index.js");
    const { silentLogger } = await import("./dist/core/log.js");
    const z = await startZest({ plugins: { rest: { http_port: "none" } } }, { ...defaultStartOptions(), logger: silentLogger });
    const refused = [];
    for (const put of [
      () => z.manager.putVolume("db", { backend: "sqlite", pth: "/tmp/never.db" }),
      () => z.manager.putVolume("js", { backend: "jetstream", server: "nats://127.0.0.1:1" }),
      () => z.manager.putStorage("s", { key_expr: "s/**", volume: { id: "sqlite", tabel: "t" } }),
      () => z.manager.putStorage("j", { key_expr: "j/**", volume: { id: "jetstream", buckt: "b" } }),
    ])
      await put().catch((e) => refused.push(e.kind));
    if (refused.join() !== "bad_input,bad_input,bad_input,bad_input") throw new Error("not refused: " + refused);
    await z.close();
  `;
  assert.deepEqual(heavyModulesAfter(script), []);
});

test("the zest/sqlite and zest/nats entry points load their dependencies (so the checks above can fail)", () => {
  assert.deepEqual(heavyModulesAfter('await import("./dist/sqlite.js");'), ["better-sqlite3"]);
  assert.ok(heavyModulesAfter('await import("./dist/nats.js");').includes("@nats-io/transport-node"));
});
