import { Buffer } from "node:buffer";
import { type SqliteDisposePolicy, sqliteAbsoluteFileOf, sqliteDescriptor, sqliteOptions } from "./descriptors.js";
import { mkdirSync, rmSync, statSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import Database from "better-sqlite3";
import { intersects, isWild, literalPrefix } from "../../keyexpr/index.js";
import { errorMessage, ZestError } from "../../core/errors.js";
import type { Logger } from "../../core/log.js";
import { Slice } from "../../core/slices.js";
import { Timestamp } from "../../core/timestamp.js";
import { decideWrite, versionOf } from "../backend.js";
import type {
  Insertion,
  StorageBackend,
  StorageCapability,
  StoredEntry,
  StoredSample,
  StoredLookup,
  Volume,
  VolumeContext,
  VolumeDriver,
  WriteCondition,
  WriteResult,
} from "../backend.js";
import { parseOptions, type RawOptions } from "../options.js";

/** What a storage does to its table when it is removed (`on_dispose`); `keep` when unset. */
type DisposePolicy = SqliteDisposePolicy;

/** One open database file, shared by every storage (of any volume) on that file. */
interface SharedDb {
  readonly db: Database.Database;
  readonly path: string;
  refs: number;
  /** The open group commit: writes of this event-loop turn, committed together. */
  batch: Batch | undefined;
  /** Called when a transaction is rolled back, so caches forget what it wrote. */
  readonly onRollback: Set<() => void>;
  /** True when zest created the file (it carries zest's application id): only then may DropDB delete it. */
  readonly ours: boolean;
}

/**
 * `PRAGMA application_id` of the files zest creates ("zest" in ASCII). A file without it is
 * another application's, and is opened only with `adopt_existing: true` from the config file.
 */
export const ZEST_APPLICATION_ID = 0x7a657374;

/**
 * Marks a new database as zest's, or checks an existing one: it must carry zest's id, hold only
 * tables of zest's schema (a file of an earlier zest, marked now), or be adopted explicitly.
 * Runs before WAL is switched on, so a refused file is left exactly as it was.
 */
function claimDb(db: Database.Database, path: string, existed: boolean, adopt: boolean): boolean {
  const id = db.pragma("application_id", { simple: true }) as number;
  if (id === ZEST_APPLICATION_ID) return true;
  const tables = db.prepare<[], { name: string }>("SELECT name FROM sqlite_master WHERE type = 'table'").all();
  const zestTables = tables.length > 0 && tables.every((t) => hasZestSchema(db, t.name));
  if (!existed || (id === 0 && zestTables)) {
    db.pragma(`application_id = ${ZEST_APPLICATION_ID}`);
    return true;
  }
  if (adopt) return false;
  throw ZestError.forbidden(
    `${path} is an SQLite database zest did not create; to use it anyway, set \`adopt_existing: true\` on its volume in the configuration file`,
  );
}

/** A transaction collecting the writes of one event-loop turn (see `writeInBatch`). */
interface Batch {
  readonly durable: Promise<void>;
  /** `durable`, resolving to "inserted": made once per batch, shared by its writes. */
  readonly inserted: Promise<Insertion>;
  resolve(): void;
  reject(err: unknown): void;
}

/** Open files by absolute path: one connection per file keeps writes serialized in-process. */
const openFiles = new Map<string, SharedDb>();

function acquireDb(path: string, adopt: boolean): SharedDb {
  const open = openFiles.get(path);
  if (open) {
    open.refs++;
    return open;
  }
  mkdirSync(dirname(path), { recursive: true });
  const existed = fileSize(path) > 0;
  const db = new Database(path);
  let ours: boolean;
  try {
    ours = claimDb(db, path, existed, adopt);
    // WAL + synchronous=NORMAL: a transaction is in the WAL file once it commits, so it survives
    // a kill -9 of this process (only a power loss or OS crash may drop the last commits).
    db.pragma("journal_mode = WAL");
    db.pragma("synchronous = NORMAL");
  } catch (err) {
    db.close();
    throw err;
  }
  const shared: SharedDb = { db, path, refs: 1, batch: undefined, onRollback: new Set(), ours };
  openFiles.set(path, shared);
  return shared;
}

function releaseDb(shared: SharedDb): void {
  if (--shared.refs > 0) return;
  openFiles.delete(shared.path);
  try {
    commitBatch(shared);
  } finally {
    shared.db.close();
  }
}

/**
 * Group commit: runs `write` inside the transaction of the current event-loop turn (opening it if
 * needed) and returns the promise of that transaction's COMMIT. Writes are visible to this
 * connection at once; the puts they carry are acknowledged once the promise resolves, so every
 * acknowledged write is in the WAL, and one commit serves all the requests of a turn.
 */
function writeInBatch(shared: SharedDb, write: () => void): Promise<Insertion> {
  let batch = shared.batch;
  if (!batch) {
    shared.db.exec("BEGIN");
    let resolve!: () => void;
    let reject!: (err: unknown) => void;
    const durable = new Promise<void>((res, rej) => {
      resolve = res;
      reject = rej;
    });
    durable.catch(() => undefined); // each writer gets the rejection; none is left unhandled
    const inserted = durable.then((): Insertion => "inserted");
    inserted.catch(() => undefined);
    batch = { durable, inserted, resolve, reject };
    shared.batch = batch;
    setImmediate(() => commitBatch(shared));
  }
  try {
    write();
  } catch (err) {
    // Most failed statements leave the transaction open; an I/O error or a full disk rolls it back,
    // and with it every write of this turn.
    if (!shared.db.inTransaction) failBatch(shared, err);
    throw err;
  }
  return batch.inserted;
}

/** Commits the open group commit, if any; its writers learn the outcome through their promise. */
function commitBatch(shared: SharedDb): void {
  const batch = shared.batch;
  if (!batch) return;
  try {
    shared.db.exec("COMMIT");
  } catch (err) {
    try {
      if (shared.db.inTransaction) shared.db.exec("ROLLBACK");
    } catch {
      // the transaction is gone either way
    }
    failBatch(shared, err);
    return;
  }
  shared.batch = undefined;
  batch.resolve();
}

function failBatch(shared: SharedDb, err: unknown): void {
  const batch = shared.batch;
  shared.batch = undefined;
  for (const forget of shared.onRollback) forget();
  batch?.reject(ZestError.unavailable(`sqlite ${shared.path}: commit failed: ${errorMessage(err)}`, err));
}

/** A cached row: a value, or a tombstone (`payload` undefined). */
interface Slot {
  readonly payload: Buffer | undefined;
  readonly encoding: string;
  readonly timestamp: Timestamp;
  /** When the value expires (Unix ms), if it has a lifetime. */
  readonly deadline?: number;
  /** The entry `peek` hands out for this row, made once: a reader may remember what it derived from it. */
  entry?: StoredSample;
}

/** Bounds of each storage's cache of decoded rows. */
const CACHE_ENTRIES = 16_384;
const CACHE_BYTES = 64 * 1024 * 1024;
/** Larger values are read from the file each time. */
const CACHE_MAX_VALUE = 1024 * 1024;

/** The columns a zest table must have, in order: name, declared type, NOT NULL, primary key. */
const SCHEMA: ReadonlyArray<readonly [string, string, number, number]> = [
  ["key", "TEXT", 0, 1],
  ["payload", "BLOB", 0, 0],
  ["encoding", "TEXT", 1, 0],
  ["ts", "TEXT", 1, 0],
  ["deleted", "INTEGER", 1, 0],
  // Added with keys with a lifetime (docs/ttl-and-leases.md): a table made before gets it on open.
  ["deadline", "REAL", 0, 0],
];

interface ColumnInfo {
  name: string;
  type: string;
  notnull: number;
  pk: number;
}

interface Row {
  key: string;
  payload: Buffer | null;
  encoding: string;
  ts: string;
  deadline: number | null;
}

interface FullRow extends Row {
  deleted: number;
}

/**
 * Rows read by one statement of a wild query's scan. Small enough that one page is well under a
 * slice (`SLICE_MS`), large enough that the statement's own cost is spread over many rows.
 */
export const SCAN_PAGE_ROWS = 256;

/** Keys sort with `/` (0x2F) right before `0` (0x30): `[p, p + "0")` is `p` and everything under `p/`. */
const AFTER_SLASH = "0";

/**
 * A storage kept in one table of an SQLite file. Writes go through the file's group commit, and a
 * bounded write-through cache of decoded rows (values and tombstones) serves lookups and exact
 * reads without SQL; it is exact because this process is the only writer of its tables.
 */
export class SqliteBackend implements StorageBackend {
  readonly capability: StorageCapability = { history: "latest", persistence: "durable" };
  /** Absolute path of the database file. */
  readonly path: string;
  /** Table holding this storage's keys. */
  readonly table: string;
  private readonly name: string;
  private readonly shared: SharedDb;
  private readonly onDispose: DisposePolicy;
  private readonly onClose: (b: SqliteBackend) => void;
  private closed = false;
  /** Decoded rows by key, oldest insertion first (evicted first). */
  private readonly cache = new Map<string, Slot>();
  private cacheBytes = 0;
  private readonly forgetCache = (): void => this.clearCache();
  private readonly stmt: {
    row: Database.Statement<[string], FullRow>;
    upsert: Database.Statement<[string, Buffer, string, string, number | null]>;
    tombstone: Database.Statement<[string, string]>;
    range: Database.Statement<[string, string, number], FullRow>;
    all: Database.Statement<[string, number], FullRow>;
    purge: Database.Statement<[string]>;
  };

  /** Use `sqliteDriver`; this assumes the table exists with the zest schema. */
  constructor(
    name: string,
    shared: SharedDb,
    table: string,
    onDispose: DisposePolicy,
    onClose: (b: SqliteBackend) => void,
  ) {
    this.name = name;
    this.shared = shared;
    this.path = shared.path;
    this.table = table;
    this.onDispose = onDispose;
    this.onClose = onClose;
    shared.onRollback.add(this.forgetCache);
    const db = shared.db;
    const t = quoteIdent(table);
    const cols = "key, payload, encoding, ts, deadline";
    this.stmt = {
      row: db.prepare<[string], FullRow>(`SELECT ${cols}, deleted FROM ${t} WHERE key = ?`),
      upsert: db.prepare<[string, Buffer, string, string, number | null]>(
        `INSERT INTO ${t} (key, payload, encoding, ts, deleted, deadline) VALUES (?, ?, ?, ?, 0, ?)
         ON CONFLICT(key) DO UPDATE SET payload = excluded.payload, encoding = excluded.encoding, ts = excluded.ts, deleted = 0, deadline = excluded.deadline`,
      ),
      tombstone: db.prepare<[string, string]>(
        `INSERT INTO ${t} (key, payload, encoding, ts, deleted, deadline) VALUES (?, NULL, '', ?, 1, NULL)
         ON CONFLICT(key) DO UPDATE SET payload = NULL, encoding = '', ts = excluded.ts, deleted = 1, deadline = NULL`,
      ),
      // One page of a wild query's scan, in key order from a cursor (`query`). Tombstones are
      // read too (payload NULL, so cheap), so a page bounds the rows scanned, not only those kept.
      range: db.prepare<[string, string, number], FullRow>(
        `SELECT ${cols}, deleted FROM ${t} WHERE key >= ? AND key < ? ORDER BY key LIMIT ?`,
      ),
      all: db.prepare<[string, number], FullRow>(
        `SELECT ${cols}, deleted FROM ${t} WHERE key >= ? ORDER BY key LIMIT ?`,
      ),
      purge: db.prepare<[string]>(`DELETE FROM ${t} WHERE deleted = 1 AND ts < ?`),
    };
  }

  async lookup(key: string): Promise<StoredLookup | undefined> {
    const slot = this.slot(key);
    if (slot === undefined) return undefined;
    const found = {
      timestamp: slot.timestamp,
      deleted: slot.payload === undefined,
      version: versionOf(slot.timestamp),
    };
    return slot.deadline === undefined ? found : { ...found, deadline: slot.deadline };
  }

  /**
   * better-sqlite3 is synchronous: the check and the write happen in one step before this
   * returns (this process is the only writer of the table); the promise resolves once the write's
   * group commits. An outdated write comes back directly.
   */
  put(entry: StoredEntry, condition?: WriteCondition): WriteResult {
    if (this.decide(entry.key, entry.timestamp, condition) === "outdated") return "outdated";
    const deadline = entry.deadline;
    const durable = this.write(() =>
      this.stmt.upsert.run(entry.key, entry.payload, entry.encoding, entry.timestamp.encode(), deadline ?? null),
    );
    this.remember(
      entry.key,
      deadline === undefined
        ? { payload: entry.payload, encoding: entry.encoding, timestamp: entry.timestamp }
        : { payload: entry.payload, encoding: entry.encoding, timestamp: entry.timestamp, deadline },
    );
    return durable;
  }

  delete(key: string, timestamp: Timestamp, condition?: WriteCondition): WriteResult {
    if (this.decide(key, timestamp, condition) === "outdated") return "outdated";
    const durable = this.write(() => this.stmt.tombstone.run(key, timestamp.encode()));
    this.remember(key, { payload: undefined, encoding: "", timestamp });
    return durable;
  }

  private decide(key: string, timestamp: Timestamp, condition: WriteCondition | undefined): Insertion {
    const slot = this.slot(key);
    return decideWrite(
      slot && { timestamp: slot.timestamp, deleted: slot.payload === undefined, deadline: slot.deadline },
      timestamp,
      condition,
    );
  }

  /**
   * A wild query scans the rows of its literal prefix (`literalPrefix`: a range of the primary
   * key, so SQLite reads only that range) and matches each key in JS. The scan is paged by key
   * (`key >= cursor ORDER BY key LIMIT SCAN_PAGE_ROWS`) and gives the event loop back between
   * pages once a slice has run (`SLICE_MS`), so other requests, writes included, run meanwhile.
   * What that guarantees (docs/storage-contract.md): every key is answered at most once, in key
   * order, with the value it held when its page was read; a key that holds a value for the whole
   * query is answered; a key written or deleted during the query may or may not be.
   */
  async query(keyExpr: string): Promise<StoredEntry[]> {
    if (!isWild(keyExpr)) {
      const slot = this.slot(keyExpr);
      if (!slot?.payload) return [];
      const e = { key: keyExpr, payload: slot.payload, encoding: slot.encoding, timestamp: slot.timestamp };
      return [slot.deadline === undefined ? e : { ...e, deadline: slot.deadline }];
    }
    const prefix = literalPrefix(keyExpr);
    const out: StoredEntry[] = [];
    const slice = new Slice();
    // "" sorts before every key; a page starts at the last key of the one before (`>=`, so the
    // first page includes the prefix itself), and that key, if still there, is skipped.
    let cursor = prefix ?? "";
    let first = true;
    for (;;) {
      const from = cursor;
      const rows = this.run(() =>
        prefix === undefined
          ? this.stmt.all.all(from, SCAN_PAGE_ROWS)
          : this.stmt.range.all(from, prefix + AFTER_SLASH, SCAN_PAGE_ROWS),
      );
      let due = false;
      for (const row of rows) {
        due = slice.due() || due;
        if (!first && row.key === from) continue;
        if (row.deleted === 0 && intersects(keyExpr, row.key)) out.push(toEntry(row));
      }
      if (rows.length < SCAN_PAGE_ROWS) return out;
      cursor = rows[rows.length - 1]!.key;
      first = false;
      if (!due) continue;
      await slice.next();
      // The storage may have been removed meanwhile (its statements finalized, its table maybe dropped).
      if (this.closed) throw ZestError.unavailable(`sqlite storage ${this.name} was closed during a query`);
    }
  }

  /**
   * better-sqlite3 reads synchronously, so a GET of one key is answered from the row cache, or
   * one indexed SELECT, without building a query (`Router.readStored`).
   */
  peek(key: string): StoredSample | null {
    const slot = this.slot(key);
    if (!slot?.payload) return null;
    // A row that was cached: the same entry each time (the REST gateway keeps its rendered answer).
    slot.entry ??=
      slot.deadline === undefined
        ? { key, kind: "put", payload: slot.payload, encoding: slot.encoding, timestamp: slot.timestamp }
        : {
            key,
            kind: "put",
            payload: slot.payload,
            encoding: slot.encoding,
            timestamp: slot.timestamp,
            deadline: slot.deadline,
          };
    return slot.entry;
  }

  async purgeTombstones(before: bigint): Promise<void> {
    // `ts` starts with the time as 16 hex digits, so string order is time order; a tombstone at
    // exactly `before` ("<hex>/<id>") sorts after "<hex>" and is kept, as in the memory volume.
    const bound = before.toString(16).padStart(16, "0");
    this.write(() => this.stmt.purge.run(bound)).catch(() => undefined); // a lost purge is redone next time
    for (const [key, slot] of this.cache)
      if (slot.payload === undefined && slot.timestamp.time < before) this.forget(key);
  }

  /** The row of exactly `key` (value or tombstone), from the cache or the file. */
  private slot(key: string): Slot | undefined {
    const cached = this.cache.get(key);
    if (cached) return cached;
    const row = this.run(() => this.stmt.row.get(key));
    if (!row) return undefined;
    const payload = row.deleted === 0 ? (row.payload ?? Buffer.alloc(0)) : undefined;
    const timestamp = Timestamp.decode(row.ts);
    const slot: Slot =
      row.deadline === null
        ? { payload, encoding: row.encoding, timestamp }
        : { payload, encoding: row.encoding, timestamp, deadline: row.deadline };
    this.remember(key, slot);
    return slot;
  }

  private write(statement: () => void): Promise<Insertion> {
    return this.run(() => writeInBatch(this.shared, statement));
  }

  private remember(key: string, slot: Slot): void {
    this.forget(key); // re-inserted last, so recently written keys are evicted last
    const size = slot.payload?.length ?? 0;
    if (size > CACHE_MAX_VALUE) return;
    this.cache.set(key, slot);
    this.cacheBytes += size + key.length;
    for (const [oldest] of this.cache) {
      if (this.cache.size <= CACHE_ENTRIES && this.cacheBytes <= CACHE_BYTES) break;
      this.forget(oldest);
    }
  }

  private forget(key: string): void {
    const slot = this.cache.get(key);
    if (!slot) return;
    this.cache.delete(key);
    this.cacheBytes -= (slot.payload?.length ?? 0) + key.length;
  }

  private clearCache(): void {
    this.cache.clear();
    this.cacheBytes = 0;
  }

  async close(dispose: boolean): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.onClose(this);
    this.shared.onRollback.delete(this.forgetCache);
    this.clearCache();
    let removeFile = false;
    try {
      if (dispose) removeFile = this.dispose();
    } finally {
      releaseDb(this.shared);
    }
    if (removeFile)
      this.run(() => {
        for (const suffix of ["", "-wal", "-shm"]) rmSync(this.path + suffix, { force: true });
      });
  }

  /** Applies `on_dispose`; true when the file should be deleted once released. */
  private dispose(): boolean {
    const t = quoteIdent(this.table);
    switch (this.onDispose) {
      case "keep":
        return false;
      case "truncate":
        this.run(() => this.shared.db.exec(`DELETE FROM ${t}`));
        return false;
      case "drop":
        this.run(() => this.shared.db.exec(`DROP TABLE IF EXISTS ${t}`));
        return false;
      case "dropdb": {
        this.run(() => this.shared.db.exec(`DROP TABLE IF EXISTS ${t}`));
        // The file goes only when nothing else lives in it and no other storage has it open.
        const row = this.run(() =>
          this.shared.db
            .prepare<[], { n: number }>("SELECT count(*) AS n FROM sqlite_master WHERE type = 'table'")
            .get(),
        );
        // ...and only a file zest created (an adopted database is never deleted).
        return row?.n === 0 && this.shared.refs === 1 && this.shared.ours;
      }
    }
  }

  /** Runs one SQLite call, turning its failures (disk full, read-only file...) into 503s. */
  private run<T>(fn: () => T): T {
    try {
      return fn();
    } catch (err) {
      throw ZestError.unavailable(`sqlite storage ${this.name} (${this.path}): ${errorMessage(err)}`, err);
    }
  }
}

function toEntry(row: Row): StoredEntry {
  // Live rows always have a payload (NULL only in tombstones); `?? empty` satisfies the type.
  const e = {
    key: row.key,
    payload: row.payload ?? Buffer.alloc(0),
    encoding: row.encoding,
    timestamp: Timestamp.decode(row.ts),
  };
  return row.deadline === null ? e : { ...e, deadline: row.deadline };
}

function quoteIdent(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}

/** The typed options of one sqlite storage. */
interface SqliteStorageOptions {
  /** Absolute path of the file, when given on the storage. */
  readonly file: string | undefined;
  readonly table: string | undefined;
  readonly onDispose: DisposePolicy;
  readonly adopt: boolean | undefined;
}

/** Reads a storage's options; throws a `bad_input` naming the bad one. */
function parseStorageOptions(options: RawOptions, where: string): SqliteStorageOptions {
  const o = parseOptions(sqliteOptions.storage.schema, options, where);
  return { file: sqliteAbsoluteFileOf(o), table: o.table, onDispose: o.on_dispose ?? "keep", adopt: o.adopt_existing };
}

/** The default table of storage `name`: its name with anything but letters, digits and `_` replaced. */
function defaultTable(name: string): string {
  const t = name.replace(/[^A-Za-z0-9_]/g, "_").slice(0, 128);
  return /^[A-Za-z_]/.test(t) && !/^sqlite_/i.test(t) ? t : `_${t}`.slice(0, 128);
}

function fileSize(path: string): number {
  try {
    return statSync(path).size;
  } catch {
    return 0;
  }
}

/**
 * True when the columns are exactly zest's, or zest's before the `deadline` column (added when
 * the table is opened: `ensureTable`).
 */
function sameSchema(existing: readonly ColumnInfo[]): boolean {
  return (
    (existing.length === SCHEMA.length || existing.length === SCHEMA.length - 1) &&
    existing.every((c, i) => {
      const [name, type, notnull, pk] = SCHEMA[i]!;
      // A WITHOUT ROWID primary key is implicitly NOT NULL, so `notnull` is only checked elsewhere.
      return (
        c.name === name &&
        c.type.toUpperCase() === type &&
        (pk === 1 || c.notnull === notnull) &&
        (c.pk !== 0 ? 1 : 0) === pk
      );
    })
  );
}

/** True when `table` has exactly zest's columns. */
function hasZestSchema(db: Database.Database, table: string): boolean {
  return sameSchema(db.prepare<[], ColumnInfo>(`PRAGMA table_info(${quoteIdent(table)})`).all());
}

/** Creates the table, or checks that an existing one has the zest schema (400 otherwise). */
function ensureTable(db: Database.Database, table: string, where: string): void {
  const t = quoteIdent(table);
  const existing = db.prepare<[], ColumnInfo>(`PRAGMA table_info(${t})`).all();
  if (existing.length === 0) {
    db.exec(
      `CREATE TABLE IF NOT EXISTS ${t} (key TEXT PRIMARY KEY, payload BLOB, encoding TEXT NOT NULL, ts TEXT NOT NULL, deleted INTEGER NOT NULL DEFAULT 0, deadline REAL) WITHOUT ROWID`,
    );
    return;
  }
  if (existing.length === SCHEMA.length - 1 && sameSchema(existing)) {
    db.exec(`ALTER TABLE ${t} ADD COLUMN deadline REAL`);
    return;
  }
  if (!sameSchema(existing)) {
    const found = existing.map((c) => `${c.name} ${c.type}`).join(", ");
    throw ZestError.badRequest(
      `${where}: table "${table}" exists with another schema (${found}); choose another \`table\``,
    );
  }
}

/**
 * The `sqlite` volume: each storage is one table (`table`, default from the storage name) in an
 * SQLite file given by `url` (`sqlite3:///abs/path.db`, as in zenoh 0.4) or `path`, on the volume
 * or on the storage; with neither, `<data dir>/<storage name>.sqlite`. Storages on one file share
 * one connection. `on_dispose`: `Truncate` (or `trunc`) empties the table, `Drop` drops it, `DropDB`
 * drops it and deletes the file once it holds no table; unset keeps the data.
 */
export const sqliteDriver: VolumeDriver = {
  ...sqliteDescriptor,
  async open(id: string, options: RawOptions, ctx: VolumeContext): Promise<Volume> {
    const o = parseOptions(sqliteOptions.volume.schema, options, `volume ${id}`);
    const volumeFile = sqliteAbsoluteFileOf(o);
    const volumeAdopt = o.adopt_existing ?? false;
    const logger: Logger = ctx.logger.child({ volume: id });
    const backends = new Set<SqliteBackend>();
    return {
      id,
      driver: "sqlite",
      async createStorage(name, _keyExpr, opts) {
        const where = `sqlite storage ${name}`;
        const parsed = parseStorageOptions(opts, where);
        let file = parsed.file ?? volumeFile;
        if (file === undefined) {
          if (ctx.dataDir === undefined)
            throw ZestError.badRequest(`sqlite storage ${name} needs a \`path\` (or run with --data-dir)`);
          file = resolve(join(ctx.dataDir, `${name}.sqlite`));
        }
        const table = parsed.table ?? defaultTable(name);
        const onDispose = parsed.onDispose;
        let shared: SharedDb;
        try {
          shared = acquireDb(file, parsed.adopt ?? volumeAdopt);
        } catch (err) {
          if (err instanceof ZestError) throw err;
          throw ZestError.unavailable(`${where} (${file}): ${errorMessage(err)}`, err);
        }
        try {
          let backend: SqliteBackend;
          try {
            ensureTable(shared.db, table, where);
            backend = new SqliteBackend(name, shared, table, onDispose, (b) => backends.delete(b));
          } catch (err) {
            throw err instanceof ZestError
              ? err
              : ZestError.unavailable(`${where} (${file}): ${errorMessage(err)}`, err);
          }
          backends.add(backend);
          logger.info({ storage: name, path: file, table }, "sqlite storage opened");
          return backend;
        } catch (err) {
          releaseDb(shared);
          throw err;
        }
      },
      status: () => ({
        __required__: false,
        ...(volumeFile !== undefined && { path: volumeFile }),
        storages: backends.size,
      }),
      async close() {
        // The manager stops storages first; anything still open is closed keeping its data.
        for (const b of [...backends]) await b.close(false);
      },
    };
  },
};

/**
 * @internal A test seam, not part of the public API (`zest/sqlite` exports only the driver):
 * true when `path` is a database file currently held open by some sqlite storage.
 */
export function isSqliteFileOpen(path: string): boolean {
  return openFiles.has(resolve(path));
}
