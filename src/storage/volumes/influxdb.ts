import { Buffer } from "node:buffer";
import { Agent as HttpAgent } from "node:http";
import { Agent as HttpsAgent } from "node:https";
import { intersects, isWild, literalPrefix } from "../../keyexpr/index.js";
import { ZestError } from "../../core/errors.js";
import type { TimeRange } from "../../core/time-range.js";
import { validDeadline } from "../../core/lifetime.js";
import { Timestamp } from "../../core/timestamp.js";
import { checkCondition, versionOf } from "../backend.js";
import type {
  Insertion,
  StorageBackend,
  StorageCapability,
  StoredEntry,
  StoredLookup,
  Volume,
  VolumeContext,
  VolumeDriver,
  WriteCondition,
  WriteResult,
} from "../backend.js";
import { InfluxHttp, type Series } from "./influxdb-http.js";
import {
  booleanOpt,
  choiceOpt,
  credentialOpts,
  credentialsOf,
  driverOptions,
  hostOf,
  optionsObject,
  parseOptions,
  type RawOptions,
  stringOpt,
  VOLUME_KEYS,
} from "../options.js";

/** Statements sent in one `/query` request when a query spans many keys. */
const STATEMENTS_PER_REQUEST = 100;
/** InfluxDB's representable time range (ns); range bounds are clamped into it. */
const MIN_TIME = -9_223_372_036_854_775_806n;
const MAX_TIME = 9_223_372_036_854_775_806n;

/**
 * Keys whose last point time (and last delete, for the tombstone TTL) one storage remembers; the
 * least recently written are forgotten first. A forgotten key only loses the guarantees below for
 * samples that arrive within a nanosecond of, or as late as, the forgotten ones.
 */
const KEYS_REMEMBERED = 65_536;

/** What a storage does to its data when it is removed. */
type DisposePolicy = "keep" | "drop_db" | "drop_series";

/**
 * Points sent in one `/write` at most, and roughly the most line-protocol characters (a point
 * longer than that goes alone): a put that does not fit in the waiting batch starts the next one.
 */
const POINTS_PER_WRITE = 5_000;
const CHARS_PER_WRITE = 4 * 1024 * 1024;

/** The fields a query reads: `sample`, and those of points written before it existed. */
const FIELDS = "/^(sample|value|encoding|timestamp)$/";

/** Points that go to InfluxDB in one `/write`; every put in the batch gets `written`. */
interface WriteBatch {
  /** Line protocol, one point a line. */
  body: string;
  points: number;
  /** Resolves once InfluxDB answered 204 to the batch's `/write`; rejects with a 503 otherwise. */
  written: Promise<void>;
  /** `written`, resolving to "inserted" (one promise per batch, shared by its puts). */
  inserted: Promise<Insertion>;
}

/**
 * A storage kept as one InfluxDB database: each key is a measurement whose points are the key's
 * samples, at the sample's time in Unix nanoseconds, with one string field, `sample`:
 * `<Timestamp.encode()> <base64 payload> <encoding>` (neither the first part, whose clock id is
 * hex, nor base64 has a space; the encoding is the rest). One field makes a point visible whole or
 * not at all: InfluxDB 1.x makes the fields of a point visible one at a time, so a query made
 * while a point is written can see some of its fields and not others. Points written before
 * (fields `value` = base64 payload, `encoding`, `timestamp`) are still read.
 *
 * Puts made while a `/write` is in flight are sent together in the next one, and each put
 * resolves once the `/write` carrying its point is acknowledged. Writes and deletes reach
 * InfluxDB in the order they were called, and a query or lookup waits for the writes and deletes
 * called before it, so it sees them.
 *
 * Last-writer-wins: a time series keeps every point, so only a tombstone (a recent delete, kept
 * in memory) refuses an older sample. Conditional writes need the key's latest version, read from
 * InfluxDB: they run one at a time per key (later writes to that key wait for them), so within
 * this router the check and the write are atomic; routers sharing a database do not see each
 * other's locks (see docs/storage-contract.md).
 */
export class InfluxBackend implements StorageBackend {
  readonly capability: StorageCapability = { history: "all", persistence: "durable" };
  /** Per key, the tail of its conditional writes (and the writes queued behind them). */
  private readonly locks = new Map<string, Promise<void>>();
  /** Database holding this storage's measurements. */
  readonly db: string;
  private readonly http: InfluxHttp;
  private readonly name: string;
  private readonly onDispose: DisposePolicy;
  private closed = false;
  /** The batch new puts join; it stops taking points when it is sent or a delete is called. */
  private batch: WriteBatch | undefined;
  /** Settles (never rejects) once every write and delete called so far has finished. */
  private settled: Promise<void> = Promise.resolve();
  /**
   * Per key, the newest sample written and the point time it got. Point times are unique per key:
   * InfluxDB keeps one point per series and time, and two samples of a key can share a nanosecond
   * (the clock steps by 1/2^32 s), so a sample newer than the last one is written at least 1 ns
   * after the last point. Bounded (`KEYS_REMEMBERED`), least recently written forgotten first.
   */
  private readonly lastPoint = new Map<string, { timestamp: Timestamp; time: bigint }>();
  /**
   * Per key, the time of its latest delete, while no newer sample came: InfluxDB keeps no
   * tombstones, so these refuse older samples that arrive late (the storage service asks `lookup`).
   * Dropped by `purgeTombstones` after the tombstone TTL; in memory only, bounded like `lastPoint`.
   */
  private readonly tombstones = new Map<string, Timestamp>();

  /** Use `influxdbDriver`; this assumes the database exists. */
  constructor(name: string, http: InfluxHttp, db: string, onDispose: DisposePolicy) {
    this.name = name;
    this.http = http;
    this.db = db;
    this.onDispose = onDispose;
  }

  async lookup(key: string): Promise<StoredLookup | undefined> {
    // A tombstone is dropped as soon as a newer point is written, so while it is here it is the latest.
    const tombstone = this.tombstones.get(key);
    if (tombstone) return { timestamp: tombstone, deleted: true, version: versionOf(tombstone) };
    await this.settled;
    const [result] = await this.http.query(
      [`SELECT ${FIELDS} FROM ${quoteIdent(key)} ORDER BY time DESC LIMIT 1`],
      this.db,
    );
    const series = result?.series[0];
    const entry = series && toEntries(series)[0];
    if (entry === undefined) return undefined;
    const found = { timestamp: entry.timestamp, deleted: false, version: versionOf(entry.timestamp) };
    return entry.deadline === undefined ? found : { ...found, deadline: entry.deadline };
  }

  put(entry: StoredEntry, condition?: WriteCondition): WriteResult {
    if (condition || this.locks.has(entry.key)) return this.locked(entry.key, condition, () => this.putNow(entry));
    return this.putNow(entry);
  }

  delete(key: string, timestamp: Timestamp, condition?: WriteCondition): WriteResult {
    if (condition || this.locks.has(key)) return this.locked(key, condition, () => this.deleteNow(key, timestamp));
    return this.deleteNow(key, timestamp);
  }

  /**
   * Runs `write` after the key's earlier locked writes, once `condition` holds on the key's latest
   * version; the key stays locked until the write is durable.
   */
  private locked(key: string, condition: WriteCondition | undefined, write: () => WriteResult): Promise<Insertion> {
    const run = (this.locks.get(key) ?? Promise.resolve()).then(async () => {
      if (condition) checkCondition(await this.lookup(key), condition);
      return write();
    });
    const tail = run.then(
      () => undefined,
      () => undefined,
    );
    this.locks.set(key, tail);
    void tail.then(() => {
      if (this.locks.get(key) === tail) this.locks.delete(key);
    });
    return run;
  }

  private putNow(entry: StoredEntry): WriteResult {
    const tombstone = this.tombstones.get(entry.key);
    if (tombstone && tombstone.compare(entry.timestamp) >= 0) return "outdated";
    let line: string;
    try {
      // A deadline rides after the timestamp (`<ts>@<Unix ms>`): one field keeps the point whole.
      const stamp =
        entry.deadline === undefined ? entry.timestamp.encode() : `${entry.timestamp.encode()}@${entry.deadline}`;
      line = `${this.measurement(entry.key)} sample="${stamp} ${entry.payload.toString("base64")} ${escapeField(entry.encoding)}" ${this.pointTime(entry.key, entry.timestamp)}\n`;
    } catch (err) {
      return Promise.reject(err);
    }
    let batch = this.batch;
    if (!batch || batch.points >= POINTS_PER_WRITE || batch.body.length + line.length > CHARS_PER_WRITE)
      batch = this.nextBatch();
    batch.body += line;
    batch.points++;
    return batch.inserted;
  }

  /**
   * Deletes the key's points up to the delete's time: the key disappears (InfluxDB drops an
   * emptied series), while a newer point that arrived first is kept, as last-writer-wins wants.
   */
  private deleteNow(key: string, timestamp: Timestamp): WriteResult {
    const tombstone = this.tombstones.get(key);
    if (tombstone && tombstone.compare(timestamp) >= 0) return "outdated";
    this.batch = undefined; // puts called after this delete are written after it
    // Points of older samples may sit a few ns after their own time (see `lastPoint`).
    const last = this.lastPoint.get(key);
    const upTo =
      last && last.timestamp.compare(timestamp) < 0 && last.time > timestamp.unixNanos
        ? last.time
        : timestamp.unixNanos;
    remember(this.tombstones, key, timestamp);
    const done = this.settled.then(async (): Promise<Insertion> => {
      await this.http.query([`DELETE FROM ${quoteIdent(key)} WHERE time <= ${upTo}`], this.db);
      return "inserted";
    });
    this.settled = done.then(
      () => undefined,
      () => undefined,
    );
    return done;
  }

  async query(keyExpr: string, range?: TimeRange): Promise<StoredEntry[]> {
    await this.settled;
    const keys = isWild(keyExpr) ? await this.matchingKeys(keyExpr) : [keyExpr];
    const where = range ? timeCondition(range) : "";
    const select = (key: string): string =>
      `SELECT ${FIELDS} FROM ${quoteIdent(key)}${where}${range ? "" : " ORDER BY time DESC LIMIT 1"}`;
    const out: StoredEntry[] = [];
    for (let i = 0; i < keys.length; i += STATEMENTS_PER_REQUEST) {
      const results = await this.http.query(keys.slice(i, i + STATEMENTS_PER_REQUEST).map(select), this.db);
      for (const r of results) for (const s of r.series) out.push(...toEntries(s));
    }
    return out;
  }

  /** Forgets deletes older than `before` (NTP64); the points themselves went with the delete. */
  async purgeTombstones(before: bigint): Promise<void> {
    for (const [key, t] of this.tombstones) if (t.time < before) this.tombstones.delete(key);
  }

  /** Waits for the writes and deletes called before, then applies the disposal policy. */
  async close(dispose: boolean): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.settled;
    if (!dispose) return;
    if (this.onDispose === "drop_db") await this.http.query([`DROP DATABASE ${quoteIdent(this.db)}`]);
    else if (this.onDispose === "drop_series") await this.http.query(["DROP SERIES FROM /.*/"], this.db);
  }

  /**
   * The point time of a sample of `key`: its Unix nanoseconds, or 1 ns after the key's last point
   * when the sample is newer than the last one but would not land after it. A late, older sample
   * keeps its own time. A newer sample also clears the key's tombstone.
   */
  private pointTime(key: string, timestamp: Timestamp): bigint {
    const last = this.lastPoint.get(key);
    let time = timestamp.unixNanos;
    if (last && last.timestamp.compare(timestamp) >= 0) return time;
    if (last && time <= last.time) time = last.time + 1n;
    remember(this.lastPoint, key, { timestamp, time });
    const tombstone = this.tombstones.get(key);
    if (tombstone && tombstone.compare(timestamp) < 0) this.tombstones.delete(key);
    return time;
  }

  /** A new batch for puts, sent once the writes and deletes called before it are done. */
  private nextBatch(): WriteBatch {
    const batch: WriteBatch = {
      body: "",
      points: 0,
      written: Promise.resolve(),
      inserted: Promise.resolve("inserted"),
    };
    batch.written = this.settled.then(() => this.send(batch));
    batch.inserted = batch.written.then((): Insertion => "inserted");
    batch.inserted.catch(() => undefined);
    this.settled = batch.written.catch(() => undefined);
    this.batch = batch;
    return batch;
  }

  private async send(batch: WriteBatch): Promise<void> {
    if (this.batch === batch) this.batch = undefined;
    await this.http.write(this.db, batch.body);
  }

  /** Measurements whose name intersects `keyExpr`, narrowed on the server by the literal prefix. */
  private async matchingKeys(keyExpr: string): Promise<string[]> {
    const prefix = literalPrefix(keyExpr);
    const show =
      prefix === undefined
        ? "SHOW MEASUREMENTS"
        : `SHOW MEASUREMENTS WITH MEASUREMENT =~ /^${escapeRegex(prefix)}(\\/|$)/`;
    const [result] = await this.http.query([show], this.db);
    const keys: string[] = [];
    for (const s of result?.series ?? []) {
      for (const row of s.values) {
        const name = row[0];
        if (typeof name === "string" && intersects(keyExpr, name)) keys.push(name);
      }
    }
    return keys;
  }

  /** The key as a line-protocol measurement; keys the protocol cannot carry are a 400. */
  private measurement(key: string): string {
    if (/[\\\n\r]/.test(key) || key.startsWith("#")) {
      throw ZestError.badRequest(
        `influxdb storage ${this.name} cannot store key "${key}": backslashes, line breaks and a leading '#' are not supported`,
      );
    }
    return key.replace(/[, ]/g, "\\$&");
  }
}

/** Sets `key` as the most recently used entry of `map`, forgetting the least recent beyond `KEYS_REMEMBERED`. */
function remember<V>(map: Map<string, V>, key: string, value: V): void {
  map.delete(key);
  map.set(key, value);
  if (map.size > KEYS_REMEMBERED) map.delete(map.keys().next().value as string);
}

/**
 * The points of one series as entries. A point is read whole or skipped: a `sample` field, or
 * all three fields of the earlier layout; points zest did not write are skipped too.
 */
function toEntries(s: Series): StoredEntry[] {
  const iSample = s.columns.indexOf("sample");
  const iValue = s.columns.indexOf("value");
  const iEncoding = s.columns.indexOf("encoding");
  const iTimestamp = s.columns.indexOf("timestamp");
  const out: StoredEntry[] = [];
  for (const row of s.values) {
    const sample = iSample < 0 ? undefined : row[iSample];
    if (typeof sample === "string") {
      const e = parseSample(s.name, sample);
      if (e) out.push(e);
      continue;
    }
    if (iValue < 0 || iEncoding < 0 || iTimestamp < 0) continue;
    const value = row[iValue];
    const encoding = row[iEncoding];
    const ts = row[iTimestamp];
    const timestamp = typeof ts === "string" ? decodeTimestamp(ts) : undefined;
    if (typeof value !== "string" || typeof encoding !== "string" || !timestamp) continue;
    out.push({ key: s.name, payload: Buffer.from(value, "base64"), encoding, timestamp });
  }
  return out;
}

/**
 * A `sample` field (`<timestamp>[@<deadline>] <base64 payload> <encoding>`, the deadline in Unix
 * ms for a value with a lifetime) as an entry of `key`.
 */
function parseSample(key: string, field: string): StoredEntry | undefined {
  const a = field.indexOf(" ");
  const b = a < 0 ? -1 : field.indexOf(" ", a + 1);
  if (b < 0) return undefined;
  const stamp = field.slice(0, a);
  const at = stamp.indexOf("@");
  const timestamp = decodeTimestamp(at < 0 ? stamp : stamp.slice(0, at));
  if (!timestamp) return undefined;
  const e = { key, payload: Buffer.from(field.slice(a + 1, b), "base64"), encoding: field.slice(b + 1), timestamp };
  if (at < 0) return e;
  const deadline = Number(stamp.slice(at + 1));
  return validDeadline(deadline) ? { ...e, deadline } : undefined;
}

function decodeTimestamp(s: string): Timestamp | undefined {
  try {
    return Timestamp.decode(s);
  } catch {
    return undefined;
  }
}

/** ` WHERE time >= a AND time < b` for the range's bounds (in ns), or "" when it has none. */
function timeCondition(range: TimeRange): string {
  const clamp = (ns: bigint): bigint => (ns < MIN_TIME ? MIN_TIME : ns > MAX_TIME ? MAX_TIME : ns);
  const parts: string[] = [];
  if (range.start) parts.push(`time ${range.start.inclusive ? ">=" : ">"} ${clamp(range.start.ns)}`);
  if (range.end) parts.push(`time ${range.end.inclusive ? "<=" : "<"} ${clamp(range.end.ns)}`);
  return parts.length === 0 ? "" : ` WHERE ${parts.join(" AND ")}`;
}

/** An InfluxQL double-quoted identifier. */
function quoteIdent(name: string): string {
  return `"${name.replace(/\\/g, "\\\\").replace(/"/g, '\\"')}"`;
}

/** A line-protocol string field value (inside double quotes). */
function escapeField(s: string): string {
  return s.replace(/[\\"]/g, "\\$&");
}

/** Escapes RE2 metacharacters and the `/` delimiter of an InfluxQL regex literal. */
function escapeRegex(s: string): string {
  return s.replace(/[\\^$.|?*+()[\]{}/]/g, "\\$&");
}

const ON_DISPOSE: ReadonlyMap<string, DisposePolicy> = new Map([
  ["drop", "drop_db"],
  ["dropdb", "drop_db"],
  ["dropallseries", "drop_series"],
  ["truncate", "drop_series"],
  ["trunc", "drop_series"],
]);
const ON_CLOSURE: ReadonlyMap<string, DisposePolicy> = new Map([
  ["do_nothing", "keep"],
  ["drop_db", "drop_db"],
  ["drop_series", "drop_series"],
]);

const DB_NAME = /^[A-Za-z0-9_.-]{1,128}$/;

/** The URL of an influxdb volume: refused unless it is http(s). */
function checkUrl(v: string): string | undefined {
  let u: URL;
  try {
    u = new URL(v);
  } catch {
    return `is not a URL (got "${v}")`;
  }
  return u.protocol === "http:" || u.protocol === "https:" ? undefined : `must be an http(s) URL (got "${v}")`;
}

/**
 * The influxdb driver's options. Volume: `url` (required), credentials. Storage: `db`,
 * `create_db`, credentials, and what removing the storage does: `on_dispose` (zenoh 0.4) or
 * `on_closure` (zenoh 0.6).
 */
export const influxdbOptions = driverOptions({
  volume: {
    schema: optionsObject({
      ...VOLUME_KEYS,
      url: stringOpt("InfluxDB 1.x base URL, http(s) (e.g. http://127.0.0.1:8086); may carry user:password", checkUrl),
      ...credentialOpts(),
    }),
    reaches: (o) => ({ hosts: [hostOf(new URL(o.url))] }),
  },
  storage: {
    schema: optionsObject({
      db: stringOpt("database (default `zest_<storage name>`)", (v) =>
        DB_NAME.test(v) ? undefined : `must use letters, digits, '_', '-' and '.' (got "${v}")`,
      ).optional(),
      create_db: booleanOpt("create the database when it does not exist").default(true),
      on_dispose: choiceOpt(
        "on removal (zenoh 0.4): `DropDB` (or `Drop`) drops the database, `DropAllSeries` (or `Truncate`) its series; unset keeps the data",
        ON_DISPOSE,
        "DropDB, DropAllSeries or Truncate",
      ).optional(),
      on_closure: choiceOpt(
        "on removal (zenoh 0.6): `do_nothing`, `drop_db` or `drop_series`; unset keeps the data",
        ON_CLOSURE,
        "do_nothing, drop_db or drop_series",
      ).optional(),
      ...credentialOpts(),
    }),
  },
});

/** `on_dispose` or `on_closure`; giving both with different meanings is a 400. */
function disposePolicy(o: { on_dispose?: DisposePolicy; on_closure?: DisposePolicy }, where: string): DisposePolicy {
  if (o.on_dispose && o.on_closure && o.on_dispose !== o.on_closure)
    throw ZestError.badRequest(`${where}: \`on_dispose\` and \`on_closure\` disagree; give one of them`);
  return o.on_dispose ?? o.on_closure ?? "keep";
}

/** The typed options of one influxdb storage. */
interface InfluxStorageOptions {
  readonly db: string;
  readonly createDb: boolean;
  readonly onDispose: DisposePolicy;
  readonly credentials: { username: string; password: string } | undefined;
}

/** Reads a storage's options; throws a `bad_input` naming the bad one. */
function parseStorageOptions(name: string, options: RawOptions, where: string): InfluxStorageOptions {
  const o = parseOptions(influxdbOptions.storage.schema, options, where);
  const db = o.db ?? `zest_${name.replace(/[^A-Za-z0-9_]/g, "_")}`;
  if (!DB_NAME.test(db))
    throw ZestError.badRequest(`invalid \`db\` "${db}" for ${where}: use letters, digits, '_', '-' and '.'`);
  return {
    db,
    createDb: o.create_db,
    onDispose: disposePolicy(o, where),
    credentials: credentialsOf(o, where),
  };
}

/**
 * The `influxdb` volume (InfluxDB 1.x over HTTP); its options are `influxdbOptions`.
 */
export const influxdbDriver: VolumeDriver = {
  name: "influxdb",
  aliases: ["influx"],
  kind: "time-series",
  adminPath: "<built-in influxdb>",
  options: influxdbOptions,
  async open(id: string, options: RawOptions, ctx: VolumeContext): Promise<Volume> {
    const where = `volume ${id}`;
    const o = parseOptions(influxdbOptions.volume.schema, options, where);
    const parsed = new URL(o.url);
    // Credentials in the URL go in the Authorization header, so the URL kept, shown and put in
    // messages carries none.
    const volumeCredentials =
      credentialsOf(o, where) ??
      (parsed.username !== ""
        ? { username: decodeURIComponent(parsed.username), password: decodeURIComponent(parsed.password) }
        : undefined);
    parsed.username = "";
    parsed.password = "";
    const url = parsed.href.replace(/\/+$/, "");
    // Keep-alive connections, shared by the volume's storages; idle ones do not keep Node running.
    const agent =
      parsed.protocol === "https:" ? new HttpsAgent({ keepAlive: true }) : new HttpAgent({ keepAlive: true });
    try {
      await new InfluxHttp(url, volumeCredentials, agent).ping();
    } catch (err) {
      agent.destroy();
      throw err;
    }
    const logger = ctx.logger.child({ volume: id });
    return {
      id,
      driver: "influxdb",
      async createStorage(name, _keyExpr, opts) {
        const swhere = `influxdb storage ${name}`;
        const { db, createDb, onDispose, credentials } = parseStorageOptions(name, opts, swhere);
        const http = new InfluxHttp(url, credentials ?? volumeCredentials, agent);
        const [dbs] = await http.query(["SHOW DATABASES"]);
        const exists = (dbs?.series ?? []).some((s) => s.values.some((row) => row[0] === db));
        if (!exists) {
          if (!createDb)
            throw ZestError.badRequest(
              `${swhere}: database "${db}" does not exist at ${url} and \`create_db\` is false`,
            );
          await http.query([`CREATE DATABASE ${quoteIdent(db)}`]);
        }
        logger.info({ storage: name, db, created: !exists }, "influxdb storage opened");
        return new InfluxBackend(name, http, db, onDispose);
      },
      status: () => ({ __required__: false, url }),
      async close() {
        agent.destroy();
      },
    };
  },
};
