import { intersects, isWild, literalPrefix } from "../../keyexpr/index.js";
import { errorMessage, ZestError } from "../../core/errors.js";
import type { TimeRange } from "../../core/time-range.js";
import { Timestamp } from "../../core/timestamp.js";
import type { StorageBackend, StoredEntry, StoredLookup, Volume, VolumeContext, VolumeDriver } from "../backend.js";

/** Every request gets this long, so a dead server fails a put or a query instead of hanging it. */
const REQUEST_TIMEOUT_MS = 5_000;
/** Statements sent in one `/query` request when a query spans many keys. */
const STATEMENTS_PER_REQUEST = 100;
/** InfluxDB's representable time range (ns); range bounds are clamped into it. */
const MIN_TIME = -9_223_372_036_854_775_806n;
const MAX_TIME = 9_223_372_036_854_775_806n;

/** What a storage does to its data when it is removed. */
type DisposePolicy = "keep" | "drop_db" | "drop_series";

interface Series {
  name: string;
  columns: string[];
  values: unknown[][];
}

interface StatementResult {
  series: Series[];
}

/** Minimal InfluxDB 1.x HTTP client: `/ping`, `/query` and `/write`, with Basic auth and a timeout. */
class InfluxHttp {
  readonly url: string;
  private readonly auth: string | undefined;

  constructor(url: string, credentials: { username: string; password: string } | undefined) {
    this.url = url;
    this.auth = credentials && `Basic ${Buffer.from(`${credentials.username}:${credentials.password}`).toString("base64")}`;
  }

  /** Checks the server answers; a 503 "is unreachable" otherwise. */
  async ping(): Promise<void> {
    let res: Response;
    try {
      res = await fetch(`${this.url}/ping`, { signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS), headers: this.headers() });
    } catch (err) {
      throw ZestError.unavailable(`influxdb at ${this.url} is unreachable: ${fetchFailure(err)}`, err);
    }
    await res.arrayBuffer().catch(() => undefined);
    if (!res.ok) throw ZestError.unavailable(`influxdb at ${this.url} is unreachable: /ping answered HTTP ${res.status}`);
  }

  /** Runs `;`-separated statements; one result per statement, in order. */
  async query(statements: string[], db?: string): Promise<StatementResult[]> {
    const body = new URLSearchParams({ q: statements.join(";\n") });
    if (db !== undefined) body.set("db", db);
    const text = await this.request("/query", body.toString(), "application/x-www-form-urlencoded");
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      throw ZestError.unavailable(`influxdb at ${this.url}: unexpected /query answer: ${text.slice(0, 200)}`);
    }
    const results = isObject(parsed) && Array.isArray(parsed.results) ? parsed.results : undefined;
    if (!results || results.length !== statements.length) {
      const error = isObject(parsed) && typeof parsed.error === "string" ? parsed.error : text.slice(0, 200);
      throw ZestError.unavailable(`influxdb at ${this.url}: ${error}`);
    }
    return results.map((r: unknown, i) => {
      if (!isObject(r)) throw ZestError.unavailable(`influxdb at ${this.url}: malformed result for "${statements[i]}"`);
      if (typeof r.error === "string") throw ZestError.unavailable(`influxdb at ${this.url}: ${r.error} (in "${statements[i]}")`);
      return { series: Array.isArray(r.series) ? r.series.filter(isSeries) : [] };
    });
  }

  /** Writes line-protocol points with ns precision; resolves once InfluxDB answered 204. */
  async write(db: string, lines: string): Promise<void> {
    await this.request(`/write?db=${encodeURIComponent(db)}&precision=ns`, lines, "text/plain; charset=utf-8");
  }

  private async request(path: string, body: string, contentType: string): Promise<string> {
    let res: Response;
    let text: string;
    try {
      res = await fetch(this.url + path, {
        method: "POST",
        body,
        headers: { "content-type": contentType, ...this.headers() },
        signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
      });
      text = await res.text();
    } catch (err) {
      throw ZestError.unavailable(`influxdb at ${this.url}: ${fetchFailure(err)}`, err);
    }
    if (!res.ok) throw ZestError.unavailable(`influxdb at ${this.url}: HTTP ${res.status}: ${influxError(text)}`);
    return text;
  }

  private headers(): Record<string, string> {
    return this.auth ? { authorization: this.auth } : {};
  }
}

/**
 * A storage kept as one InfluxDB database: each key is a measurement whose points are the
 * key's samples (field `value` = base64 payload, `encoding`, `timestamp` = `Timestamp.encode()`,
 * point time = the sample's Unix nanoseconds).
 */
export class InfluxBackend implements StorageBackend {
  readonly history = "all" as const;
  /** Database holding this storage's measurements. */
  readonly db: string;
  private readonly http: InfluxHttp;
  private readonly name: string;
  private readonly onDispose: DisposePolicy;
  private closed = false;

  /** Use `influxdbDriver`; this assumes the database exists. */
  constructor(name: string, http: InfluxHttp, db: string, onDispose: DisposePolicy) {
    this.name = name;
    this.http = http;
    this.db = db;
    this.onDispose = onDispose;
  }

  async lookup(key: string): Promise<StoredLookup | undefined> {
    const [result] = await this.http.query([`SELECT "timestamp" FROM ${quoteIdent(key)} ORDER BY time DESC LIMIT 1`], this.db);
    const series = result?.series[0];
    const raw = series?.values[0]?.[series.columns.indexOf("timestamp")];
    const timestamp = typeof raw === "string" ? decodeTimestamp(raw) : undefined;
    return timestamp && { timestamp, deleted: false };
  }

  async put(entry: StoredEntry): Promise<void> {
    const fields = `value="${entry.payload.toString("base64")}",encoding="${escapeField(entry.encoding)}",timestamp="${escapeField(entry.timestamp.encode())}"`;
    await this.http.write(this.db, `${this.measurement(entry.key)} ${fields} ${entry.timestamp.unixNanos}\n`);
  }

  /**
   * Deletes the key's points up to the delete's time: the key disappears (InfluxDB drops an
   * emptied series), while a newer point that arrived first is kept, as last-writer-wins wants.
   */
  async delete(key: string, timestamp: Timestamp): Promise<void> {
    await this.http.query([`DELETE FROM ${quoteIdent(key)} WHERE time <= ${timestamp.unixNanos}`], this.db);
  }

  async query(keyExpr: string, range?: TimeRange): Promise<StoredEntry[]> {
    const keys = isWild(keyExpr) ? await this.matchingKeys(keyExpr) : [keyExpr];
    const where = range ? timeCondition(range) : "";
    const select = (key: string): string =>
      `SELECT "value", "encoding", "timestamp" FROM ${quoteIdent(key)}${where}${range ? "" : " ORDER BY time DESC LIMIT 1"}`;
    const out: StoredEntry[] = [];
    for (let i = 0; i < keys.length; i += STATEMENTS_PER_REQUEST) {
      const results = await this.http.query(keys.slice(i, i + STATEMENTS_PER_REQUEST).map(select), this.db);
      for (const r of results) for (const s of r.series) out.push(...toEntries(s));
    }
    return out;
  }

  /** No tombstones here: a delete removes the points themselves. */
  async purgeTombstones(): Promise<void> {}

  async close(dispose: boolean): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (!dispose) return;
    if (this.onDispose === "drop_db") await this.http.query([`DROP DATABASE ${quoteIdent(this.db)}`]);
    else if (this.onDispose === "drop_series") await this.http.query(["DROP SERIES FROM /.*/"], this.db);
  }

  /** Measurements whose name intersects `keyExpr`, narrowed on the server by the literal prefix. */
  private async matchingKeys(keyExpr: string): Promise<string[]> {
    const prefix = literalPrefix(keyExpr);
    const show = prefix === undefined ? "SHOW MEASUREMENTS" : `SHOW MEASUREMENTS WITH MEASUREMENT =~ /^${escapeRegex(prefix)}(\\/|$)/`;
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
      throw ZestError.badRequest(`influxdb storage ${this.name} cannot store key "${key}": backslashes, line breaks and a leading '#' are not supported`);
    }
    return key.replace(/[, ]/g, "\\$&");
  }
}

/** The points of one series as entries; points zest did not write (no `value`/`timestamp`) are skipped. */
function toEntries(s: Series): StoredEntry[] {
  const iValue = s.columns.indexOf("value");
  const iEncoding = s.columns.indexOf("encoding");
  const iTimestamp = s.columns.indexOf("timestamp");
  const out: StoredEntry[] = [];
  for (const row of s.values) {
    const value = row[iValue];
    const ts = row[iTimestamp];
    const encoding = row[iEncoding];
    const timestamp = typeof ts === "string" ? decodeTimestamp(ts) : undefined;
    if (typeof value !== "string" || !timestamp) continue;
    out.push({ key: s.name, payload: Buffer.from(value, "base64"), encoding: typeof encoding === "string" ? encoding : "", timestamp });
  }
  return out;
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

/** The reason a fetch failed, in a few words (`connect ECONNREFUSED 127.0.0.1:1`, a timeout...). */
function fetchFailure(err: unknown): string {
  if (err instanceof Error) {
    if (err.name === "TimeoutError") return `no answer within ${REQUEST_TIMEOUT_MS / 1000} s`;
    if (err.cause instanceof Error) return errorMessage(err.cause);
  }
  return errorMessage(err);
}

/** InfluxDB's `{"error": "..."}` text, or the raw body. */
function influxError(text: string): string {
  try {
    const parsed: unknown = JSON.parse(text);
    if (isObject(parsed) && typeof parsed.error === "string") return parsed.error;
  } catch {
    // not JSON: fall through to the raw text
  }
  return text.trim().slice(0, 200) || "(empty body)";
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function isSeries(v: unknown): v is Series {
  return isObject(v) && typeof v.name === "string" && Array.isArray(v.columns) && Array.isArray(v.values) && v.values.every(Array.isArray);
}

function stringOption(options: Readonly<Record<string, unknown>>, key: string, where: string): string | undefined {
  const v = options[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== "string") throw ZestError.badRequest(`\`${key}\` of ${where} must be a string`);
  return v;
}

/** `username`/`password` given directly or under `private` (as zenoh's volume config hides them). */
function credentials(options: Readonly<Record<string, unknown>>, where: string): { username: string; password: string } | undefined {
  const priv = options.private;
  if (priv !== undefined && !isObject(priv)) throw ZestError.badRequest(`\`private\` of ${where} must be an object`);
  const username = stringOption(options, "username", where) ?? (priv && stringOption(priv, "username", `${where} (private)`));
  const password = stringOption(options, "password", where) ?? (priv && stringOption(priv, "password", `${where} (private)`));
  if (username === undefined && password === undefined) return undefined;
  if (username === undefined) throw ZestError.badRequest(`${where}: \`password\` is given without \`username\``);
  return { username, password: password ?? "" };
}

function booleanOption(options: Readonly<Record<string, unknown>>, key: string, where: string, dflt: boolean): boolean {
  const v = options[key];
  if (v === undefined || v === null) return dflt;
  if (typeof v === "boolean") return v;
  if (v === "true" || v === "false") return v === "true";
  throw ZestError.badRequest(`\`${key}\` of ${where} must be true or false`);
}

/** `on_dispose` (zenoh 0.4) or `on_closure` (zenoh 0.6); giving both with different meanings is a 400. */
function disposePolicy(options: Readonly<Record<string, unknown>>, where: string): DisposePolicy {
  const onDispose = stringOption(options, "on_dispose", where);
  const onClosure = stringOption(options, "on_closure", where);
  let a: DisposePolicy | undefined;
  let b: DisposePolicy | undefined;
  if (onDispose !== undefined) {
    const v = onDispose.toLowerCase();
    a = v === "drop" || v === "dropdb" ? "drop_db" : v === "dropallseries" || v === "truncate" || v === "trunc" ? "drop_series" : undefined;
    if (!a) throw ZestError.badRequest(`\`on_dispose\` of ${where} must be DropDB, DropAllSeries or Truncate (got "${onDispose}")`);
  }
  if (onClosure !== undefined) {
    const v = onClosure.toLowerCase();
    b = v === "do_nothing" ? "keep" : v === "drop_db" ? "drop_db" : v === "drop_series" ? "drop_series" : undefined;
    if (!b) throw ZestError.badRequest(`\`on_closure\` of ${where} must be do_nothing, drop_db or drop_series (got "${onClosure}")`);
  }
  if (a && b && a !== b) throw ZestError.badRequest(`${where}: \`on_dispose\` and \`on_closure\` disagree; give one of them`);
  return a ?? b ?? "keep";
}

const DB_NAME = /^[A-Za-z0-9_.-]{1,128}$/;

/**
 * The `influxdb` volume (InfluxDB 1.x over HTTP). Volume options: `url` (required),
 * `username`/`password` (or under `private`). Storage options: `db` (default
 * `zest_<storage name>`), `create_db` (default true), `username`/`password`, and what to do when
 * the storage is removed: `on_dispose` (`DropDB`/`Drop`, `DropAllSeries`/`Truncate`) or
 * `on_closure` (`do_nothing`, `drop_db`, `drop_series`); unset keeps the data.
 */
export const influxdbDriver: VolumeDriver = {
  name: "influxdb",
  async open(id: string, options: Readonly<Record<string, unknown>>, ctx: VolumeContext): Promise<Volume> {
    const where = `volume ${id}`;
    const rawUrl = stringOption(options, "url", where);
    if (rawUrl === undefined) throw ZestError.badRequest(`\`url\` of ${where} is required (e.g. http://127.0.0.1:8086)`);
    let parsed: URL;
    try {
      parsed = new URL(rawUrl);
    } catch {
      throw ZestError.badRequest(`\`url\` of ${where} is not a URL (got "${rawUrl}")`);
    }
    if (parsed.protocol !== "http:" && parsed.protocol !== "https:") throw ZestError.badRequest(`\`url\` of ${where} must be an http(s) URL (got "${rawUrl}")`);
    const url = rawUrl.replace(/\/+$/, "");
    const volumeCredentials = credentials(options, where);
    await new InfluxHttp(url, volumeCredentials).ping();
    const logger = ctx.logger.child({ volume: id });
    return {
      id,
      driver: "influxdb",
      async createStorage(name, _keyExpr, opts) {
        const swhere = `influxdb storage ${name}`;
        const db = stringOption(opts, "db", swhere) ?? `zest_${name.replace(/[^A-Za-z0-9_]/g, "_")}`;
        if (!DB_NAME.test(db)) throw ZestError.badRequest(`invalid \`db\` "${db}" for ${swhere}: use letters, digits, '_', '-' and '.'`);
        const createDb = booleanOption(opts, "create_db", swhere, true);
        const onDispose = disposePolicy(opts, swhere);
        const http = new InfluxHttp(url, credentials(opts, swhere) ?? volumeCredentials);
        const [dbs] = await http.query(["SHOW DATABASES"]);
        const exists = (dbs?.series ?? []).some((s) => s.values.some((row) => row[0] === db));
        if (!exists) {
          if (!createDb) throw ZestError.badRequest(`${swhere}: database "${db}" does not exist at ${url} and \`create_db\` is false`);
          await http.query([`CREATE DATABASE ${quoteIdent(db)}`]);
        }
        logger.info({ storage: name, db, created: !exists }, "influxdb storage opened");
        return new InfluxBackend(name, http, db, onDispose);
      },
      status: () => ({ __required__: false, url }),
      async close() {},
    };
  },
};
