/**
 * The InfluxDB 1.x HTTP client of the influxdb volume (docs/storages.md, "The InfluxDB layout"):
 * `/ping`, `/query` and `/write`, with Basic auth and a timeout on every request. Failures are
 * `unavailable` ZestErrors (HTTP 503) naming the server and what it said.
 */
import { Buffer } from "node:buffer";
import { type Agent as HttpAgent, request as httpRequest } from "node:http";
import { request as httpsRequest } from "node:https";
import { errorMessage, ZestError } from "../../core/errors.js";

/** Every request gets this long, so a dead server fails a put or a query instead of hanging it. */
const REQUEST_TIMEOUT_MS = 5_000;
/** One series of a `/query` result. */
export interface Series {
  name: string;
  columns: string[];
  values: unknown[][];
}

/** The result of one statement of a `/query`. */
export interface StatementResult {
  series: Series[];
}

/** An answer from InfluxDB. */
interface HttpAnswer {
  status: number;
  text: string;
}

/**
 * Minimal InfluxDB 1.x HTTP client: `/ping`, `/query` and `/write`, with Basic auth and a
 * timeout, over the keep-alive connections of its volume's agent (`node:http` spends less per
 * request than `fetch`, which counts when a write waits for the one before it).
 */
export class InfluxHttp {
  readonly url: string;
  private readonly auth: string | undefined;
  private readonly agent: HttpAgent;
  private readonly request: typeof httpRequest;

  constructor(url: string, credentials: { username: string; password: string } | undefined, agent: HttpAgent) {
    this.url = url;
    this.auth =
      credentials && `Basic ${Buffer.from(`${credentials.username}:${credentials.password}`).toString("base64")}`;
    this.agent = agent;
    this.request = url.startsWith("https:") ? httpsRequest : httpRequest;
  }

  /** Checks the server answers; a 503 "is unreachable" otherwise. */
  async ping(): Promise<void> {
    let res: HttpAnswer;
    try {
      res = await this.send("GET", "/ping", undefined, undefined);
    } catch (err) {
      throw ZestError.unavailable(`influxdb at ${this.url} is unreachable: ${failure(err)}`, err);
    }
    if (res.status < 200 || res.status > 299)
      throw ZestError.unavailable(`influxdb at ${this.url} is unreachable: /ping answered HTTP ${res.status}`);
  }

  /** Runs `;`-separated statements; one result per statement, in order. */
  async query(statements: string[], db?: string): Promise<StatementResult[]> {
    const body = new URLSearchParams({ q: statements.join(";\n") });
    if (db !== undefined) body.set("db", db);
    const text = await this.post("/query", body.toString(), "application/x-www-form-urlencoded");
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
      if (typeof r.error === "string")
        throw ZestError.unavailable(`influxdb at ${this.url}: ${r.error} (in "${statements[i]}")`);
      return { series: Array.isArray(r.series) ? r.series.filter(isSeries) : [] };
    });
  }

  /** Writes line-protocol points with ns precision; resolves once InfluxDB answered 204. */
  async write(db: string, lines: string): Promise<void> {
    await this.post(`/write?db=${encodeURIComponent(db)}&precision=ns`, lines, "text/plain; charset=utf-8");
  }

  /** POSTs `body`; the answer's text, or a 503 naming why there is none or what InfluxDB said. */
  private async post(path: string, body: string, contentType: string): Promise<string> {
    let res: HttpAnswer;
    try {
      res = await this.send("POST", path, body, contentType);
    } catch (err) {
      throw ZestError.unavailable(`influxdb at ${this.url}: ${failure(err)}`, err);
    }
    if (res.status < 200 || res.status > 299)
      throw ZestError.unavailable(`influxdb at ${this.url}: HTTP ${res.status}: ${influxError(res.text)}`);
    return res.text;
  }

  /** One request, answered in full within `REQUEST_TIMEOUT_MS` or failed. */
  private send(
    method: string,
    path: string,
    body: string | undefined,
    contentType: string | undefined,
  ): Promise<HttpAnswer> {
    const headers: Record<string, string | number> = {};
    if (contentType !== undefined) headers["content-type"] = contentType;
    if (body !== undefined) headers["content-length"] = Buffer.byteLength(body);
    if (this.auth) headers.authorization = this.auth;
    return new Promise((resolve, reject) => {
      const fail = (err: Error): void => {
        clearTimeout(timer);
        reject(err);
      };
      const req = this.request(this.url + path, { method, headers, agent: this.agent }, (res) => {
        let text = "";
        res.setEncoding("utf8");
        res.on("data", (chunk: string) => (text += chunk));
        res.on("error", fail);
        res.on("end", () => {
          clearTimeout(timer);
          resolve({ status: res.statusCode ?? 0, text });
        });
        res.on("close", () => {
          if (!res.complete) fail(new Error("the connection closed before the answer was complete"));
        });
      });
      const timer = setTimeout(() => req.destroy(new RequestTimeout()), REQUEST_TIMEOUT_MS);
      req.on("error", fail);
      req.end(body);
    });
  }
}

/** A request that got no complete answer within `REQUEST_TIMEOUT_MS`. */
class RequestTimeout extends Error {
  constructor() {
    super(`no answer within ${REQUEST_TIMEOUT_MS / 1000} s`);
    this.name = "RequestTimeout";
  }
}

/** Why a request failed, in a few words (`connect ECONNREFUSED 127.0.0.1:1`, a timeout...). */
function failure(err: unknown): string {
  if (err instanceof AggregateError && err.errors.length > 0) return errorMessage(err.errors[0]);
  return errorMessage(err) || (err instanceof Error && "code" in err ? String(err.code) : "request failed");
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
  return (
    isObject(v) &&
    typeof v.name === "string" &&
    Array.isArray(v.columns) &&
    Array.isArray(v.values) &&
    v.values.every(Array.isArray)
  );
}
