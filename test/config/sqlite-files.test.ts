import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { describe, test } from "node:test";
import Database from "better-sqlite3";
import { ZEST_APPLICATION_ID } from "../../src/storage/volumes/sqlite.js";
import { getJson, http } from "../support/http.js";
import { A_CONFIG, JSON_CT, startRouter, tempDir } from "../support/router.js";

/** Another application's database: a table of its own, in rollback-journal mode. */
function foreignDb(path: string): void {
  const db = new Database(path);
  db.exec("CREATE TABLE people (name TEXT)");
  db.exec("INSERT INTO people VALUES ('ada')");
  db.close();
}

function inspect(path: string): { appId: number; journal: string; tables: string[] } {
  const db = new Database(path, { readonly: true, fileMustExist: true });
  try {
    return {
      appId: db.pragma("application_id", { simple: true }) as number,
      journal: db.pragma("journal_mode", { simple: true }) as string,
      tables: db
        .prepare<[], { name: string }>("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
        .all()
        .map((r) => r.name),
    };
  } finally {
    db.close();
  }
}

describe("zest marks the SQLite files it creates, and adopts no other", () => {
  const tmp = tempDir("zest-sqlite-files-");

  test("an admin write on another application's database is refused and leaves it untouched", async () => {
    const path = join(tmp(), "foreign.db");
    foreignDb(path);
    const z = await startRouter({ data_dir: tmp() });
    try {
      const body = JSON.stringify({ key_expr: "f/**", volume: { id: "sqlite", path, on_dispose: "DropDB" } });
      const r = await http(z.url, "PUT", `${A_CONFIG}/storages/f`, { body, headers: JSON_CT });
      assert.equal(r.status, 403, r.text);
      assert.match(r.text, /zest did not create; .*adopt_existing: true/);
    } finally {
      await z.close();
    }
    assert.deepEqual(inspect(path), { appId: 0, journal: "delete", tables: ["people"] });
  });

  test("a file zest creates carries its application id, and DropDB deletes it", async () => {
    const path = join(tmp(), "ours.db");
    const z = await startRouter({ data_dir: tmp() });
    try {
      const body = JSON.stringify({ key_expr: "o/**", volume: { id: "sqlite", path, on_dispose: "DropDB" } });
      assert.equal((await http(z.url, "PUT", `${A_CONFIG}/storages/o`, { body, headers: JSON_CT })).status, 200);
      assert.equal(inspect(path).appId, ZEST_APPLICATION_ID);
      assert.equal((await http(z.url, "DELETE", `${A_CONFIG}/storages/o`)).status, 200);
      assert.equal(existsSync(path), false);
    } finally {
      await z.close();
    }
  });

  test("adopt_existing in the config file opens a foreign database; DropDB then keeps the file", async () => {
    const path = join(tmp(), "adopted.db");
    foreignDb(path);
    const storage = { key_expr: "ad/**", volume: { id: "sqlite", path, adopt_existing: true, on_dispose: "DropDB" } };
    const z = await startRouter({
      data_dir: join(tmp(), "state"),
      plugins: { storage_manager: { storages: { ad: storage } } },
    });
    try {
      assert.equal((await http(z.url, "PUT", "/ad/k", { body: "v" })).status, 200);
      assert.deepEqual(
        (await getJson(z.url, "/ad/k")).entries.map((e) => e.value),
        ["v"],
      );
      assert.equal(inspect(path).appId, 0); // adopted, not claimed
      assert.equal((await http(z.url, "DELETE", `${A_CONFIG}/storages/ad`)).status, 200);
    } finally {
      await z.close();
    }
    assert.ok(existsSync(path), "DropDB must not delete a database zest did not create");
    assert.deepEqual(inspect(path).tables, ["people"]);
  });

  test("a file of an earlier zest (zest tables only, no id) is claimed", async () => {
    const path = join(tmp(), "earlier.db");
    const db = new Database(path);
    db.exec(
      "CREATE TABLE t (key TEXT PRIMARY KEY, payload BLOB, encoding TEXT NOT NULL, ts TEXT NOT NULL, deleted INTEGER NOT NULL DEFAULT 0) WITHOUT ROWID",
    );
    db.close();
    const z = await startRouter({ data_dir: tmp() });
    try {
      const body = JSON.stringify({ key_expr: "e/**", volume: { id: "sqlite", path, table: "t" } });
      const r = await http(z.url, "PUT", `${A_CONFIG}/storages/e`, { body, headers: JSON_CT });
      assert.equal(r.status, 200, r.text);
    } finally {
      await z.close();
    }
    assert.equal(inspect(path).appId, ZEST_APPLICATION_ID);
  });
});
