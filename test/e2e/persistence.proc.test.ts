import assert from "node:assert/strict";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { getJson, http } from "../support/http.js";
import { startZest, type ZestProcess } from "../support/zest-process.js";

const STORAGES = "/@/router/local/config/plugins/storage_manager/storages";
const TEXT = { "content-type": "text/plain" };

/** The values under `keyExpr`, by key. */
async function valuesUnder(base: string, keyExpr: string): Promise<Map<string, unknown>> {
  const { status, entries } = await getJson(base, `/${keyExpr}`);
  assert.equal(status, 200);
  return new Map(entries.map((e) => [e.key as string, e.value]));
}

describe("storages created at run time outlast a restart (--data-dir)", () => {
  let dir: string;
  const running: ZestProcess[] = [];
  const start = async (args: string[]): Promise<ZestProcess> => {
    const z = await startZest(["--data-dir", dir, ...args]);
    running.push(z);
    return z;
  };
  before(() => {
    dir = mkdtempSync(join(tmpdir(), "zest-persist-"));
  });
  after(async () => {
    for (const z of running) await z.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  test("Variant A: a SQLite storage made through the admin space comes back, listed and with its data", async () => {
    const db = join(dir, "p.db");
    const config = { key_expr: "p/**", volume: { id: "sqlite", path: db } };
    let z = await start([]);
    const put = await http(z.url, "PUT", `${STORAGES}/p`, {
      body: JSON.stringify(config),
      headers: { "content-type": "application/json" },
    });
    assert.equal(put.status, 200, put.text);
    for (const k of ["one", "two"])
      assert.equal((await http(z.url, "PUT", `/p/${k}`, { body: `value ${k}`, headers: TEXT })).status, 200);
    assert.equal((await http(z.url, "DELETE", "/p/two")).status, 200);
    await z.stop();
    assert.ok(existsSync(join(dir, "storage_manager.json")));

    z = await start([]);
    const { entries } = await getJson(z.url, "/@/router/local/status/plugins/storage_manager/storages/p");
    assert.deepEqual(
      entries.map((e) => e.value),
      [config],
    );
    // The default memory storage starts empty, so these values can only come from the SQLite file.
    assert.deepEqual([...(await valuesUnder(z.url, "p/**"))], [["p/one", "value one"]]);
    // It keeps working after the restart, and a removal is remembered across the next one.
    assert.equal((await http(z.url, "PUT", "/p/three", { body: "value three", headers: TEXT })).status, 200);
    assert.equal((await http(z.url, "DELETE", `${STORAGES}/p`)).status, 200);
    await z.stop();

    z = await start([]);
    assert.deepEqual((await getJson(z.url, "/@/router/local/status/plugins/storage_manager/storages/p")).entries, []);
    await z.stop();
  });

  test("a volume from the config file that was removed at run time stays removed after a restart", async () => {
    const VOLUMES = "/@/router/local/config/plugins/storage_manager/volumes";
    const listed = "/@/router/local/status/plugins/storage_manager/volumes/cfgvol";
    const args = [
      "--cfg",
      `plugins/storage_manager/volumes/cfgvol:{backend:"sqlite",path:${JSON.stringify(join(dir, "cfgvol.db"))}}`,
    ];
    let z = await start(args);
    assert.equal((await getJson(z.url, listed)).entries.length, 1);
    assert.equal((await http(z.url, "DELETE", `${VOLUMES}/cfgvol`)).status, 200);
    assert.deepEqual((await getJson(z.url, listed)).entries, []);
    await z.stop();

    z = await start(args);
    assert.deepEqual((await getJson(z.url, listed)).entries, [], "the removal was remembered");
    // Created again at run time, it is back after the next restart.
    const again = await http(z.url, "PUT", `${VOLUMES}/cfgvol`, {
      body: JSON.stringify({ backend: "sqlite", path: join(dir, "cfgvol2.db") }),
      headers: { "content-type": "application/json" },
    });
    assert.equal(again.status, 200, again.text);
    await z.stop();

    z = await start(args);
    assert.deepEqual(
      (await getJson(z.url, listed)).entries.map((e) => (e.value as { path: string }).path),
      [join(dir, "cfgvol2.db")],
    );
    await z.stop();
  });

  test("Variant B: a sqlite3 backend and its storage come back with the same properties and data", async () => {
    const url = `sqlite3://${join(dir, "b.db")}`;
    const backend = "/@/router/local/plugin/storages/backend/sqlite3";
    let z = await start(["--rest-variant", "b"]);
    assert.equal((await http(z.url, "PUT", backend, { body: JSON.stringify({ lib: "sqlite3", url }) })).status, 204);
    assert.equal(
      (
        await http(z.url, "PUT", `${backend}/storage/bs`, {
          body: JSON.stringify({ selector: "/b/**", table: "bt", on_dispose: "Truncate" }),
        })
      ).status,
      204,
    );
    assert.equal((await http(z.url, "PUT", "/b/x", { body: "from before", headers: TEXT })).status, 204);
    await z.stop();

    z = await start(["--rest-variant", "b"]);
    const listed = await getJson(z.url, "/@/router/local/**/sqlite3/**");
    // Entries that came back at startup show time None, like 0.4's startup storages.
    assert.deepEqual(
      listed.entries.map((e) => [(e.key as string).replace(/^\/@\/router\/[0-9a-f]+/, ""), e.value, e.time]),
      [
        ["/plugin/storages/backend/sqlite3/storage/bs", "on_dispose=Truncate;selector=/b/**;table=bt", "None"],
        ["/plugin/storages/backend/sqlite3", `kind=sql;lib=sqlite3;url=${url}`, "None"],
      ],
    );
    assert.deepEqual([...(await valuesUnder(z.url, "b/**"))], [["/b/x", "from before"]]);
    await z.stop();
  });
});

describe("a crash test: kill -9 in the middle of a stream of PUTs", () => {
  let dir: string;
  const running: ZestProcess[] = [];
  before(() => {
    dir = mkdtempSync(join(tmpdir(), "zest-crash-"));
  });
  after(async () => {
    for (const z of running) await z.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  test("every PUT acknowledged before the kill is readable after a restart", async (t) => {
    const config = { key_expr: "crash/**", volume: { id: "sqlite", path: join(dir, "crash.db") } };
    const z = await startZest(["--data-dir", dir]);
    running.push(z);
    const put = await http(z.url, "PUT", `${STORAGES}/crash`, {
      body: JSON.stringify(config),
      headers: { "content-type": "application/json" },
    });
    assert.equal(put.status, 200, put.text);

    // Four writers, each sending its PUTs one after the other, so several are in flight at the kill.
    const acked = new Map<string, string>();
    const KILL_AFTER = 200;
    let killed: Promise<void> | undefined;
    let failures = 0;
    const writer = async (w: number): Promise<void> => {
      for (let i = 0; ; i++) {
        const key = `crash/w${w}/k${i}`;
        const value = `value ${w}/${i} ${"x".repeat(i % 50)}`;
        try {
          const r = await fetch(`${z.url}/${key}`, { method: "PUT", body: value, headers: TEXT });
          await r.arrayBuffer();
          if (r.status !== 200) throw new Error(`status ${r.status}`);
        } catch {
          failures++;
          return; // the router is gone
        }
        acked.set(key, value);
        if (acked.size >= KILL_AFTER) killed ??= z.kill9();
      }
    };
    await Promise.all([0, 1, 2, 3].map(writer));
    await killed;
    assert.ok(acked.size >= KILL_AFTER, `only ${acked.size} PUTs were acknowledged`);
    t.diagnostic(`${acked.size} PUTs acknowledged before the kill`);
    assert.equal(failures, 4, "every writer stopped on the kill");

    const z2 = await startZest(["--data-dir", dir]);
    running.push(z2);
    const stored = await valuesUnder(z2.url, "crash/**");
    const missing = [...acked].filter(([k, v]) => stored.get(k) !== v).map(([k]) => k);
    assert.deepEqual(missing, [], `${missing.length} of ${acked.size} acknowledged PUTs were lost`);
    await z2.stop();
  });
});
