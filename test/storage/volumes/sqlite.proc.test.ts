import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { after, before, describe, it } from "node:test";
import Database from "better-sqlite3";
import { rejectsWith } from "../../support/assert.js";
import { silentLogger } from "../../../src/core/log.js";
import { Timestamp } from "../../../src/core/timestamp.js";
import type { StorageBackend, StoredEntry, Volume } from "../../../src/storage/backend.js";
import { literalPrefix } from "../../../src/keyexpr/index.js";
import { isSqliteFileOpen, sqliteDriver } from "../../../src/storage/volumes/sqlite.js";
import { runStorageContract } from "../contract.js";
import { repoPath } from "../../support/repo.js";

const ctx = { logger: silentLogger };
const ts = (t: number, id = "AB"): Timestamp => new Timestamp(BigInt(t), id);
const entry = (key: string, value: string | Buffer, t: number, encoding = "text/plain"): StoredEntry => ({
  key,
  payload: typeof value === "string" ? Buffer.from(value) : value,
  encoding,
  timestamp: ts(t),
});
const keysOf = (entries: StoredEntry[]): string[] => entries.map((e) => e.key).sort();

describe("sqlite volume: the storage contract", () => {
  let dir: string;
  let volume: Volume;
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), "zest-sqlite-contract-"));
    volume = await sqliteDriver.open("contract", {}, ctx);
  });
  after(async () => {
    await volume.close();
    rmSync(dir, { recursive: true, force: true });
  });
  runStorageContract({
    name: "sqlite",
    // One file per storage name, so reopening a name reopens its data.
    open: (name, options = {}) => volume.createStorage(name, "**", { path: join(dir, `${name}.sqlite`), ...options }),
    badOptions: [
      { options: { table: "bad-name" }, message: /`table` of sqlite storage \S+ "bad-name" is invalid/ },
      { options: { on_dispose: "explode" }, message: /`on_dispose`/ },
      { options: { path: 42 }, message: /`path`/ },
    ],
  });
});

describe("sqlite volume", () => {
  let dir: string;
  let n = 0;
  /** A fresh database file path for one test. */
  const freshPath = (): string => join(dir, `t${n++}`, "db.sqlite");

  before(() => {
    dir = mkdtempSync(join(tmpdir(), "zest-sqlite-"));
  });
  after(() => {
    rmSync(dir, { recursive: true, force: true });
  });

  async function openStorage(
    path: string,
    options: Record<string, unknown> = {},
    name = "s",
  ): Promise<{ volume: Volume; storage: StorageBackend }> {
    const volume = await sqliteDriver.open("vol", { path }, ctx);
    return { volume, storage: await volume.createStorage(name, "**", options) };
  }

  it("the literal prefix stops at the first wildcard chunk", () => {
    assert.equal(literalPrefix("a/b/*/c"), "a/b");
    assert.equal(literalPrefix("a/**"), "a");
    assert.equal(literalPrefix("a/b$*/c"), "a");
    assert.equal(literalPrefix("**/a"), undefined);
    assert.equal(literalPrefix("/zenoh/sql/**"), "/zenoh/sql");
    assert.equal(literalPrefix("/**"), undefined);
  });

  it("two storages on one file keep separate tables and share one connection", async () => {
    const path = freshPath();
    const volume = await sqliteDriver.open("shared", { url: `sqlite3://${path}` }, ctx);
    const s1 = await volume.createStorage("one", "x/**", {});
    const s2 = await volume.createStorage("two", "x/**", { table: "second" });
    await s1.put(entry("x/a", "from one", 1));
    await s2.put(entry("x/a", "from two", 2));
    assert.equal((await s1.query("x/a"))[0]?.payload.toString(), "from one");
    assert.equal((await s2.query("x/a"))[0]?.payload.toString(), "from two");
    await s1.close(false);
    assert.equal(isSqliteFileOpen(path), true, "still used by storage two");
    await s2.put(entry("x/b", "after", 3));
    assert.deepEqual(keysOf(await s2.query("x/**")), ["x/a", "x/b"]);
    await s2.close(false);
    assert.equal(isSqliteFileOpen(path), false);
    const db = new Database(path, { readonly: true });
    const tables = db
      .prepare<[], { name: string }>("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
      .all();
    db.close();
    assert.deepEqual(
      tables.map((t) => t.name),
      ["one", "second"],
    );
    await volume.close();
  });

  it("a table made before deadlines existed gets the deadline column on open, its rows kept", async () => {
    const path = freshPath();
    mkdirSync(dirname(path), { recursive: true });
    const db = new Database(path);
    db.exec(
      "CREATE TABLE s (key TEXT PRIMARY KEY, payload BLOB, encoding TEXT NOT NULL, ts TEXT NOT NULL, deleted INTEGER NOT NULL DEFAULT 0) WITHOUT ROWID",
    );
    db.prepare("INSERT INTO s VALUES (?, ?, ?, ?, 0)").run("old/a", Buffer.from("A"), "text/plain", ts(1).encode());
    db.close();
    const { volume, storage } = await openStorage(path, { adopt_existing: true });
    try {
      assert.deepEqual(
        (await storage.query("old/**")).map((e) => [e.key, e.payload.toString(), e.deadline]),
        [["old/a", "A", undefined]],
      );
      await storage.put({ ...entry("old/b", "B", 2), deadline: 1_900_000_000_000 });
      assert.equal((await storage.query("old/b"))[0]?.deadline, 1_900_000_000_000);
    } finally {
      await storage.close(false);
      await volume.close();
    }
    const check = new Database(path, { readonly: true });
    const cols = check.prepare<[], { name: string }>("PRAGMA table_info(s)").all();
    check.close();
    assert.deepEqual(
      cols.map((c) => c.name),
      ["key", "payload", "encoding", "ts", "deleted", "deadline"],
    );
  });

  it("puts started together are each durable for another connection when they resolve", async () => {
    const path = freshPath();
    const volume = await sqliteDriver.open("gc", { path }, ctx);
    const s1 = await volume.createStorage("one", "x/**", {});
    const s2 = await volume.createStorage("two", "x/**", { table: "second" });
    const reader = new Database(path, { readonly: true });
    try {
      const count = (table: string, key: string): number =>
        reader
          .prepare<[string], { n: number }>(`SELECT count(*) AS n FROM ${table} WHERE key = ? AND deleted = 0`)
          .get(key)!.n;
      const seen: string[] = [];
      await Promise.all(
        Array.from({ length: 50 }, (_, i) => [
          Promise.resolve(s1.put(entry(`x/${i}`, `v${i}`, i + 1))).then(() =>
            seen.push(`one ${count("one", `x/${i}`)}`),
          ),
          Promise.resolve(s2.put(entry(`x/${i}`, `w${i}`, i + 1))).then(() =>
            seen.push(`second ${count("second", `x/${i}`)}`),
          ),
        ]).flat(),
      );
      assert.equal(seen.length, 100);
      assert.deepEqual(
        seen.filter((s) => !s.endsWith(" 1")),
        [],
        "every resolved put is committed",
      );
    } finally {
      reader.close();
    }
    await s1.close(false);
    await s2.close(false);
    await volume.close();
  });

  it("keys beyond the cache's bound are read back from the file, values and tombstones", async () => {
    const path = freshPath();
    const { volume, storage } = await openStorage(path);
    const n = 20_000; // more than the cache holds
    await Promise.all(Array.from({ length: n }, (_, i) => storage.put(entry(`k/${i}`, `value ${i}`, 100))));
    await storage.delete("k/5", ts(300));
    for (let i = 0; i < n; i++) await storage.put(entry(`j/${i}`, "filler", 1)); // evicts k/* from the cache
    // Last-writer-wins still sees the evicted values and tombstones, read back from the file.
    for (const i of [1, 2, 999, 10_000, n - 1]) {
      assert.equal(await storage.put(entry(`k/${i}`, "older", 50)), "outdated");
      assert.equal((await storage.query(`k/${i}`))[0]?.payload.toString(), `value ${i}`);
    }
    assert.equal(await storage.put(entry("k/5", "older", 200)), "outdated");
    const gone = await storage.lookup("k/5");
    assert.equal(gone?.deleted, true);
    assert.equal(gone?.timestamp.compare(ts(300)), 0);
    assert.deepEqual(await storage.query("k/5"), []);
    await storage.close(false);
    await volume.close();
  });

  /** Fills `storage` with `n` keys `<root>/<i % 100>/<i>`, each holding its own key as value. */
  async function fill(storage: StorageBackend, root: string, n: number): Promise<void> {
    const writes: Array<Promise<unknown>> = [];
    for (let i = 0; i < n; i++) {
      const key = `${root}/${i % 100}/${i}`;
      writes.push(Promise.resolve(storage.put(entry(key, key, 100))));
    }
    await Promise.all(writes);
  }

  it("a wide query over 100,000 rows gives the event loop back: a one-key query finishes first", async () => {
    const { volume, storage } = await openStorage(freshPath());
    const n = 100_000;
    await fill(storage, "w", n);
    await storage.put(entry("one/key", "1", 100));
    const order: string[] = [];
    // No literal prefix: the whole table is scanned and matched in JS.
    const wide = storage.query("**/$*9$*").then((r) => {
      order.push("wide");
      return r;
    });
    // Queued after the wide query started: it must not wait for the whole scan.
    const tick = new Promise<void>((resolve) => setImmediate(resolve)).then(async () => {
      assert.equal((await storage.query("one/key"))[0]?.payload.toString(), "1");
      order.push("one");
    });
    const [found] = await Promise.all([wide, tick]);
    assert.deepEqual(order, ["one", "wide"]);
    const expected = [...Array(n).keys()]
      .filter((i) => String(i).includes("9") || String(i % 100).includes("9"))
      .map((i) => `w/${i % 100}/${i}`)
      .sort();
    assert.deepEqual(keysOf(found), expected);
    for (const e of found) assert.equal(e.payload.toString(), e.key);
    await storage.close(false);
    await volume.close();
  });

  it("a wide query under a prefix answers each key once, in key order, while writes land between its pages", async () => {
    const { volume, storage } = await openStorage(freshPath());
    const n = 100_000;
    await fill(storage, "r", n);
    await storage.put(entry("other/key", "other/key", 100)); // outside the prefix's range
    const wide = storage.query("r/**");
    await new Promise<void>((resolve) => setImmediate(resolve));
    // Meanwhile: keys sorting first and last are added, some keys are deleted, some overwritten.
    const deleted = new Set<string>();
    const writes: Array<Promise<unknown>> = [];
    for (let i = 0; i < n; i += 7) {
      const key = `r/${i % 100}/${i}`;
      deleted.add(key);
      writes.push(Promise.resolve(storage.delete(key, ts(200))));
    }
    for (let i = 3; i < n; i += 7)
      writes.push(Promise.resolve(storage.put(entry(`r/${i % 100}/${i}`, `r/${i % 100}/${i}`, 200))));
    writes.push(Promise.resolve(storage.put(entry("r/0/0/first", "r/0/0/first", 200))));
    writes.push(Promise.resolve(storage.put(entry("r/~last", "r/~last", 200))));
    await Promise.all(writes);
    const found = await wide;
    const keys = found.map((e) => e.key);
    // In key order, each at most once (the page cursor only moves forward).
    for (let i = 1; i < keys.length; i++) assert.ok(keys[i - 1]! < keys[i]!, `${keys[i - 1]} before ${keys[i]}`);
    const got = new Set(keys);
    // Every key left alone is answered, with its own value.
    for (let i = 0; i < n; i++) {
      const key = `r/${i % 100}/${i}`;
      if (!deleted.has(key)) assert.ok(got.has(key), `${key} missing`);
    }
    for (const e of found) assert.equal(e.payload.toString(), e.key);
    assert.ok(!got.has("other/key"));
    // The scan was still running when the writes landed: it reached the key added last.
    assert.ok(got.has("r/~last"), "the key written during the query, past the cursor, is answered");
    assert.ok(
      [...deleted].some((k) => !got.has(k)),
      "keys deleted past the cursor are not answered",
    );
    await storage.close(false);
    await volume.close();
  });

  it("a storage closed during a wide query ends the query with an unavailable error", async () => {
    const { volume, storage } = await openStorage(freshPath(), { on_dispose: "Drop" });
    await fill(storage, "c", 100_000);
    const wide = storage.query("c/**");
    await new Promise<void>((resolve) => setImmediate(resolve));
    await storage.close(true);
    await rejectsWith(wide, "unavailable", /closed during a query/);
    await volume.close();
  });

  it("bad volume options are 400s that name the option", async () => {
    await rejectsWith(sqliteDriver.open("v", { url: "postgres://x/y" }, ctx), "bad_input", /`url` of volume v/);
    await rejectsWith(sqliteDriver.open("v", { url: "sqlite3://somehost/x.db" }, ctx), "bad_input", /`url`/);
    await rejectsWith(
      sqliteDriver.open("v", { url: "sqlite3:///a", path: "/b" }, ctx),
      "bad_input",
      /either `url` or `path`/,
    );
    const path = freshPath();
    const volume = await sqliteDriver.open("v", { path }, ctx);
    await rejectsWith(volume.createStorage("s", "**", { table: "1abc" }), "bad_input", /`table`/);
    await rejectsWith(volume.createStorage("s", "**", { table: 'x"; DROP TABLE y' }), "bad_input", /`table`/);
    await rejectsWith(volume.createStorage("s", "**", { table: "sqlite_master" }), "bad_input", /`table`/);
    assert.equal(isSqliteFileOpen(path), false, "failed creations release the file");
    await volume.close();
  });

  it("a storage's own path overrides the volume's", async () => {
    const volPath = freshPath();
    const own = freshPath();
    const volume = await sqliteDriver.open("v", { url: `sqlite3://${volPath}`, lib: "sqlite3" }, ctx);
    const s = await volume.createStorage("s", "**", { path: own });
    await s.put(entry("k", "v", 1));
    await s.close(false);
    assert.equal(existsSync(own), true);
    assert.equal(existsSync(volPath), false);
  });

  it("without a path the file goes to <data dir>/<storage name>.sqlite, or it is a 400", async () => {
    const dataDir = join(dir, "data-dir", "nested");
    const volume = await sqliteDriver.open("sqlite", {}, { logger: silentLogger, dataDir });
    const s = await volume.createStorage("my-store", "**", {});
    await s.put(entry("k", "v", 1));
    await s.close(false);
    assert.equal(existsSync(join(dataDir, "my-store.sqlite")), true);
    const bare = await sqliteDriver.open("sqlite", {}, ctx);
    await rejectsWith(
      bare.createStorage("nowhere", "**", {}),
      "bad_input",
      /sqlite storage nowhere needs a `path` \(or run with --data-dir\)/,
    );
  });

  it("on_dispose Truncate empties the table, Drop drops it, unset keeps the data", async () => {
    const path = freshPath();
    const volume = await sqliteDriver.open("v", { path }, ctx);
    const make = async (name: string, on_dispose?: string): Promise<StorageBackend> => {
      const s = await volume.createStorage(name, "**", on_dispose ? { on_dispose } : {});
      await s.put(entry("k", "v", 1));
      return s;
    };
    const trunc = await make("trunc", "Truncate");
    const trunc2 = await make("trunc2", "TRUNC");
    const drop = await make("drop", "drop");
    const keep = await make("keep");
    await volume.createStorage("witness", "**", {}); // keeps the file open and inspectable
    for (const s of [trunc, trunc2, drop, keep]) await s.close(true);
    const db = new Database(path, { readonly: true });
    const count = (t: string): number => db.prepare<[], { n: number }>(`SELECT count(*) AS n FROM "${t}"`).get()!.n;
    const tables = db
      .prepare<[], { name: string }>("SELECT name FROM sqlite_master WHERE type = 'table'")
      .all()
      .map((r) => r.name);
    assert.equal(count("trunc"), 0);
    assert.equal(count("trunc2"), 0);
    assert.equal(tables.includes("drop"), false);
    assert.equal(count("keep"), 1);
    db.close();
    await volume.close();
  });

  it("on_dispose DropDB deletes the file once it holds no table", async () => {
    const path = freshPath();
    const volume = await sqliteDriver.open("v", { path }, ctx);
    const a = await volume.createStorage("a", "**", { on_dispose: "DropDB" });
    const b = await volume.createStorage("b", "**", { on_dispose: "DropDB" });
    await a.put(entry("k", "v", 1));
    await b.put(entry("k", "v", 1));
    await a.close(true);
    assert.equal(existsSync(path), true, "b still uses the file");
    await b.close(true);
    assert.equal(existsSync(path), false);
    assert.equal(existsSync(`${path}-wal`), false);
    assert.equal(isSqliteFileOpen(path), false);
  });

  it("the default table is a sanitized storage name", async () => {
    const path = freshPath();
    const volume = await sqliteDriver.open("v", { path }, ctx);
    const s = await volume.createStorage("my-store.v2", "**", {});
    const s2 = await volume.createStorage("9lives", "**", {});
    const db = new Database(path, { readonly: true });
    const tables = db
      .prepare<[], { name: string }>("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
      .all()
      .map((r) => r.name);
    db.close();
    assert.deepEqual(tables, ["_9lives", "my_store_v2"]);
    await s.close(false);
    await s2.close(false);
  });

  it("an existing table with another schema is a 400", async () => {
    const path = freshPath();
    mkdirSync(dirname(path), { recursive: true });
    const db = new Database(path);
    db.exec("CREATE TABLE example (k VARCHAR(3072) PRIMARY KEY, v TEXT, e VARCHAR(10), t VARCHAR(60))");
    db.close();
    // Another application's file: opened only when adopted (see test/config/sqlite-files.test.ts).
    const volume = await sqliteDriver.open("v", { path, adopt_existing: true }, ctx);
    await rejectsWith(
      volume.createStorage("s", "**", { table: "example" }),
      "bad_input",
      /table "example" exists with another schema/,
    );
    assert.equal(isSqliteFileOpen(path), false);
  });

  it("the database file is in WAL mode", async () => {
    const path = freshPath();
    const { volume, storage } = await openStorage(path);
    await storage.put(entry("wal/k", "v", 1));
    // journal_mode is stored in the file: a separate connection sees it.
    const db = new Database(path, { readonly: true, fileMustExist: true });
    try {
      assert.equal(db.pragma("journal_mode", { simple: true }), "wal");
    } finally {
      db.close();
    }
    await storage.close(false);
    await volume.close();
  });

  it("a file that cannot be opened is a 503 naming the storage and the path", async () => {
    const path = join(dir, "a-directory");
    mkdirSync(path, { recursive: true });
    const volume = await sqliteDriver.open("v", { path }, ctx);
    await rejectsWith(
      volume.createStorage("s", "**", {}),
      "unavailable",
      new RegExp(`^sqlite storage s \\(${path}\\): `),
    );
  });

  it("every acknowledged put survives a kill -9 of the writing process", async () => {
    const path = freshPath();
    const script = repoPath("test", "support", "sqlite-writer.ts");
    const child = spawn(process.execPath, ["--import", "tsx", script, path, "1000000"], {
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stderr = "";
    child.stderr.setEncoding("utf8").on("data", (c: string) => (stderr += c));
    const acked: string[] = [];
    let partial = "";
    const exited = new Promise<NodeJS.Signals | null>((resolve) =>
      child.on("exit", (_code, signal) => resolve(signal)),
    );
    await new Promise<void>((resolve, reject) => {
      child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
        const lines = (partial + chunk).split("\n");
        partial = lines.pop() ?? "";
        acked.push(...lines);
        if (acked.length >= 500) resolve();
      });
      void exited.then(() => reject(new Error(`writer exited early; stderr:\n${stderr}`)));
    });
    child.kill("SIGKILL");
    assert.equal(await exited, "SIGKILL");
    // The kill came mid-stream: the writer had a million puts to make and was far from done.
    assert.ok(acked.length < 1_000_000, `${acked.length} puts acknowledged before the kill`);
    assert.equal(new Set(acked).size, acked.length, "each acknowledged key once");
    const { storage } = await openStorage(path, {}, "durability");
    const stored = new Set(keysOf(await storage.query("durable/**")));
    const missing = acked.filter((k) => !stored.has(k));
    assert.deepEqual(missing, [], `${missing.length} of ${acked.length} acknowledged keys lost`);
    await storage.close(false);
  });
});
