import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import Database from "better-sqlite3";
import { getJson, http } from "../support/http.js";
import { startZest, type ZestProcess } from "../support/zest-process.js";

const CONFIG = "/@/router/local/config/plugins/storage_manager";
const STATUS = "/@/router/local/status/plugins/storage_manager";
const TEXT = { "content-type": "text/plain" };
const JSON_CT = { "content-type": "application/json" };

/** The keys and values in table `table` of an SQLite file, read while the router holds it (WAL allows it). */
function rows(file: string, table: string): Array<[string, string]> {
  const db = new Database(file, { readonly: true, fileMustExist: true });
  try {
    return (
      db.prepare(`SELECT key, payload FROM "${table}" ORDER BY key`).all() as Array<{ key: string; payload: Buffer }>
    ).map((r) => [r.key, Buffer.from(r.payload).toString()]);
  } finally {
    db.close();
  }
}

describe("Variant A: named volumes", () => {
  let dir: string;
  let z: ZestProcess;
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), "zest-a-volumes-"));
    z = await startZest([
      "--cfg",
      `plugins/storage_manager/volumes/mysql:{backend:"sqlite",path:${JSON.stringify(join(dir, "named.db"))}}`,
      "--cfg",
      'plugins/storage_manager/storages/named:{key_expr:"named/**",volume:"mysql"}',
      "--cfg",
      `plugins/storage_manager/allowed_paths:${JSON.stringify([dir])}`,
    ]);
  });
  after(async () => {
    await z?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  test("a sqlite volume from the config file, used by a storage by name, keeps its data in its file", async () => {
    const { entries } = await getJson(z.url, `${STATUS}/volumes/mysql`);
    assert.deepEqual(
      entries.map((e) => e.value),
      [{ backend: "sqlite", path: join(dir, "named.db") }],
    );
    assert.equal((await http(z.url, "PUT", "/named/a", { body: "in the named volume", headers: TEXT })).status, 200);
    assert.deepEqual(
      (await getJson(z.url, "/named/a")).entries.map((e) => e.value),
      ["in the named volume"],
    );
    assert.deepEqual(rows(join(dir, "named.db"), "named"), [["named/a", "in the named volume"]]);
  });

  test("a volume created by a PUT on the admin space, then a storage using it", async () => {
    const file = join(dir, "runtime.db");
    const v = await http(z.url, "PUT", `${CONFIG}/volumes/rtvol`, {
      body: JSON.stringify({ backend: "sqlite", path: file }),
      headers: JSON_CT,
    });
    assert.equal(v.status, 200, v.text);
    assert.equal((await getJson(z.url, `${STATUS}/volumes/rtvol`)).entries.length, 1);
    const s = await http(z.url, "PUT", `${CONFIG}/storages/rt`, {
      body: JSON.stringify({ key_expr: "rt/**", volume: "rtvol" }),
      headers: JSON_CT,
    });
    assert.equal(s.status, 200, s.text);
    assert.equal((await http(z.url, "PUT", "/rt/x", { body: "at run time", headers: TEXT })).status, 200);
    assert.deepEqual(
      (await getJson(z.url, "/rt/x")).entries.map((e) => e.value),
      ["at run time"],
    );
    assert.deepEqual(rows(file, "rt"), [["rt/x", "at run time"]]);
    // In use, it cannot be removed; once its storage is gone, it can.
    assert.equal((await http(z.url, "DELETE", `${CONFIG}/volumes/rtvol`)).status, 409);
    assert.equal((await http(z.url, "DELETE", `${CONFIG}/storages/rt`)).status, 200);
    assert.equal((await http(z.url, "DELETE", `${CONFIG}/volumes/rtvol`)).status, 200);
    assert.deepEqual((await getJson(z.url, `${STATUS}/volumes/rtvol`)).entries, []);
  });
});
