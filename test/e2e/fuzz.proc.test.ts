/**
 * A seeded, bounded fuzz of the REST gateway of real `zest` processes, both variants: thousands
 * of malformed requests (odd percent-escapes, wildcards, huge and deep selectors, `_time` junk,
 * bad admin bodies, odd methods and headers, oversize bodies, SSE opens and closes). Any crash
 * (the process exits), hang (no answer within a few seconds) or 5xx fails it. The seed is
 * printed; `FUZZ_SEED=<n>` replays a run, `FUZZ_REQUESTS=<n>` changes its size per variant.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { Agent, request } from "node:http";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { pick } from "../keyexpr/reference.js";
import { rngUnit } from "../support/rng.js";
import { startZest, type ZestProcess } from "../support/zest-process.js";

const SEED = Number(process.env.FUZZ_SEED ?? Math.floor(Math.random() * 2 ** 31));
const REQUESTS = Number(process.env.FUZZ_REQUESTS ?? 5_500);
const CONNECTIONS = 8;
const ANSWER_MS = 5_000;
const BODY_LIMIT = 65_536;

type Rand = () => number;

const CHUNKS = [
  "demo",
  "a",
  "b",
  "x",
  "*",
  "**",
  "$*",
  "a$*",
  "$*b",
  "a$*b",
  "$",
  "a$",
  "$$*",
  "***",
  "@",
  "@a",
  "@$*",
  "..",
  ".",
  "%",
  "%2",
  "%2F",
  "%2f",
  "%3F",
  "%23",
  "%25",
  "%ZZ",
  "%00",
  "%C3%A9",
  "%E2%82",
  "%FF%FE",
  "é",
  "日本",
  "😀",
  "~",
  "(",
  ")",
  ";",
  "=",
  "&",
  "[",
  "]",
  "a b",
  "+",
  "%20",
  "router",
  "local",
  "config",
  "_time",
  "\\",
  "'",
  '"',
  "<",
  ">",
  "{",
  "}",
  "|",
  "^",
  "`",
];

/** A URL path: mostly small odd keys, sometimes huge or deep ones. */
function path(r: Rand): string {
  const shape = r();
  if (shape < 0.05)
    return `/${Array.from({ length: 400 + Math.floor(r() * 5000) }, () => pick(r, ["a", "*", "**", "$*a"])).join("/")}`;
  if (shape < 0.1)
    return `/${pick(r, ["", "**/", "demo/"])}${pick(r, ["a", "$*", "ab", "a$*b"]).repeat(50 + Math.floor(r() * 2000))}`;
  if (shape < 0.15)
    return `/${Array.from({ length: 50 + Math.floor(r() * 400) }, (_, i) => (i % 2 === 0 ? "**" : pick(r, ["a", "$*a$*", "*"]))).join("/")}`;
  if (shape < 0.25)
    return `/@/router/${pick(r, ["local", "0123", "zz", "*", "**", "LOCAL"])}/${Array.from({ length: Math.floor(r() * 6) }, () => pick(r, [...CHUNKS, "status", "plugins", "storage_manager", "storages", "volumes"])).join("/")}`;
  const n = 1 + Math.floor(r() * 6);
  let p = "";
  for (let i = 0; i < n; i++) p += pick(r, ["/", "/", "/", "//", ""]) + pick(r, CHUNKS);
  return p.startsWith("/") ? p : `/${p}`;
}

/** A query string: `_time` junk, parameters in every form, or nothing. */
function query(r: Rand): string {
  const q = r();
  if (q < 0.5) return "";
  const junk = pick(r, [
    "_time=[..]",
    "_time=[now(-1h)..]",
    "_time=[now()..now(-1s)]",
    "_time=[",
    "_time=]",
    "_time=[a..b]",
    "_time=[2020-01-01T00:00:00Z..2019-01-01T00:00:00Z]",
    "_time=[now(-99999999999999d)..]",
    "_time=now()",
    "_time=[;1h]",
    "_time=[now(-1h);]",
    "(a=b;_time=x)",
    "(",
    ")",
    "((((",
    "_anyke",
    "_raw=true",
    "_raw=maybe",
    "starttime=now()-1m",
    "stoptime=x",
    "starttime=now()&stoptime=now()-1h",
    "%",
    "%ZZ=1",
    "a=%E2%82",
    "=",
    "&&&",
    ";;;",
    `x=${"y".repeat(3000)}`,
  ]);
  return `?${junk}`;
}

const BODIES = [
  "",
  "{",
  "}",
  "[",
  "{key_expr:",
  '{"key_expr": 1}',
  '{"key_expr": "demo/**"}',
  '{"key_expr": "demo/**", "volume": "nope"}',
  '{"key_expr": "**", "volume": {"id": "memory", "quota": -5}}',
  '{"key_expr": "fz/**", "volume": "memory"}',
  '{"key_expr": "a//b", "volume": "memory"}',
  "{key_expr: 'fz/**', volume: 'memory', }",
  "{key_expr: 'fz/**' /* c */}",
  "null",
  "true",
  "1e999",
  '"str"',
  "[1,2,3]",
  "\u0000\u0001",
  "\uFEFF{}",
  '{"__proto__": {"x": 1}}',
  '{"constructor": {"prototype": {}}}',
  "{a:1,a:2}",
  "key_expr=fz/**;volume=memory",
  "path_expr=/fz/**",
  "backend=memory",
  `${"[".repeat(40)}${"]".repeat(40)}`,
  `{"a":${'{"a":'.repeat(30)}1${"}".repeat(30)}}`,
  "x".repeat(70_000),
];

const CONTENT_TYPES = [
  "text/plain",
  "application/json",
  "application/json5",
  "text/json",
  "application/x-www-form-urlencoded",
  "application/properties",
  "garbage",
  "text/plain; charset=utf-16",
  "",
  "application/octet-stream",
  "a/b;;;==",
];
const ACCEPTS = [
  "*/*",
  "text/event-stream",
  "text/html",
  "application/json",
  "text/event-stream;q=0.5, */*",
  "garbage",
  "",
];

interface Outcome {
  status: number | undefined;
  what: string;
}

/** One well-formed HTTP request with odd content, over keep-alive connections. */
function viaHttp(agent: Agent, base: URL, r: Rand, variantA: boolean): Promise<Outcome> {
  const method = pick(r, [
    "GET",
    "GET",
    "GET",
    "PUT",
    "PUT",
    "PATCH",
    "DELETE",
    "HEAD",
    "OPTIONS",
    "POST",
    "TRACE",
    "FOO",
  ]);
  let p = path(r) + query(r);
  if (method !== "GET" && method !== "HEAD" && r() < 0.3)
    p = `${variantA ? "/@/router/local/config/plugins/storage_manager/storages/" : "/@/router/local/plugin/storages/backend/memory/storage/"}${pick(r, ["fz", "__proto__", "constructor", "fz/x", "%2F", "a b", ""])}`;
  const headers: Record<string, string> = {};
  if (r() < 0.7) headers["content-type"] = pick(r, CONTENT_TYPES);
  if (r() < 0.5) headers.accept = pick(r, ACCEPTS);
  if (r() < 0.2) headers.origin = pick(r, ["http://evil.example", "null", "http://127.0.0.1", "x"]);
  if (r() < 0.1) headers["if-match"] = pick(r, ['"x"', "*", 'W/"1"']);
  if (r() < 0.1) headers["last-event-id"] = pick(r, ["1", "-1", "x", "99999999999999999999"]);
  const body =
    method === "PUT" || method === "PATCH" || method === "POST" || (method === "GET" && r() < 0.05)
      ? pick(r, BODIES)
      : undefined;
  // Characters Node would refuse to send go percent-encoded (raw ones are sent by `viaSocket`).
  p = p.replace(/[^\x21-\x7e]/gu, (c) => encodeURIComponent(c));
  const what = `${method} ${p.slice(0, 200)}`;
  const sse = headers.accept?.startsWith("text/event-stream") && method === "GET";
  return new Promise((resolve, reject) => {
    let req: ReturnType<typeof request>;
    try {
      req = request(
        { agent: sse ? undefined : agent, host: base.hostname, port: base.port, method, path: p, headers },
        (res) => {
          clearTimeout(timer);
          if (sse && res.statusCode === 200) {
            // An SSE stream: keep it open a moment, then go away.
            setTimeout(() => res.destroy(), Math.floor(r() * 30));
            resolve({ status: res.statusCode, what });
            return;
          }
          res.resume();
          res.on("end", () => resolve({ status: res.statusCode, what }));
          res.on("error", () => resolve({ status: res.statusCode, what }));
        },
      );
    } catch {
      // Node refuses to send it (an invalid character in the path): not a request at all.
      resolve({ status: 0, what });
      return;
    }
    const timer = setTimeout(() => reject(new Error(`no answer within ${ANSWER_MS} ms: ${what}`)), ANSWER_MS);
    req.on("error", (err) => {
      clearTimeout(timer);
      // The server may close a connection on a refused body; that is an answer too.
      resolve({ status: undefined, what: `${what} (${err.message})` });
    });
    req.end(body);
  });
}

/** One malformed request on a raw socket (bad request lines, framing, headers). */
function viaSocket(base: URL, r: Rand): Promise<Outcome> {
  const p = path(r).replace(/[\r\n]/g, "");
  const raw = pick(r, [
    `GET ${p} HTTP/1.1\r\nHost: x\r\n\r\n`,
    `get ${p} HTTP/1.1\r\nHost: x\r\n\r\n`,
    `GET ${p} HTTP/1.0\r\n\r\n`,
    `GET ${p}\r\n\r\n`,
    `GET  ${p}  HTTP/1.1\r\nHost: x\r\n\r\n`,
    `PUT ${p} HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nab`,
    `PUT ${p} HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n`,
    `PUT ${p} HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabcd`,
    `PUT ${p} HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nZZ\r\nabc\r\n0\r\n\r\n`,
    `PUT ${p} HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n3\r\nabc\r\n0\r\n\r\n`,
    `PUT ${p} HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999\r\n\r\nabc`,
    `GET ${p} HTTP/1.1\r\nHost: x\r\nX-Big: ${"h".repeat(20_000)}\r\n\r\n`,
    `GET ${p} HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n`,
    `GET ${p} HTTP/1.1\r\nHost: x\r\nAccept: text/event-stream\r\n\r\n`,
    `\r\n\r\n`,
    `${"A".repeat(100)} ${p} HTTP/1.1\r\n\r\n`,
    `GET ${p} HTTP/9.9\r\nHost: x\r\n\r\n`,
    `GET /demo%00x HTTP/1.1\r\nHost: x\r\n\r\n`,
    `GET /${"é".repeat(10)} HTTP/1.1\r\nHost: x\r\n\r\n`,
    `DELETE ${p} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`,
  ]);
  const what = `raw ${JSON.stringify(raw.slice(0, 120))}`;
  return new Promise((resolve, reject) => {
    const socket = connect(Number(base.port), base.hostname);
    let head = "";
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`no answer within ${ANSWER_MS} ms: ${what}`));
    }, ANSWER_MS);
    const done = (status: number | undefined): void => {
      clearTimeout(timer);
      socket.destroy();
      resolve({ status, what });
    };
    socket.setEncoding("latin1");
    socket.on("data", (d: string) => {
      head += d;
      const m = /^HTTP\/1\.[01] (\d{3})/.exec(head);
      if (m) done(Number(m[1]));
    });
    // A truncated request (a body shorter than announced) gets no answer until the client gives up: closing is that.
    // (Blank lines before a request line are allowed: the server waits for the request too.)
    if (/Content-Length: 5\r\n\r\nab$|Content-Length: 99999999999/.test(raw) || raw === "\r\n\r\n")
      setTimeout(() => socket.end(), 20);
    socket.on("close", () => done(undefined));
    socket.on("error", () => done(undefined));
    socket.write(raw, "latin1");
  });
}

async function fuzz(z: ZestProcess, variantA: boolean, seed: number): Promise<Map<number | undefined, number>> {
  const base = new URL(z.url);
  const agent = new Agent({ keepAlive: true, maxSockets: CONNECTIONS });
  const statuses = new Map<number | undefined, number>();
  let sent = 0;
  const failures: string[] = [];
  const worker = async (w: number): Promise<void> => {
    const r = rngUnit(seed * 31 + w);
    while (sent < REQUESTS && failures.length === 0) {
      sent++;
      const out = r() < 0.2 ? await viaSocket(base, r) : await viaHttp(agent, base, r, variantA);
      statuses.set(out.status, (statuses.get(out.status) ?? 0) + 1);
      if (out.status !== undefined && out.status >= 500) failures.push(`${out.status} for ${out.what}`);
      if (z.proc.exitCode !== null || z.proc.signalCode !== null)
        failures.push(`the router exited (${z.proc.exitCode ?? z.proc.signalCode}) after ${out.what}`);
    }
  };
  try {
    await Promise.all(Array.from({ length: CONNECTIONS }, (_, w) => worker(w)));
  } finally {
    agent.destroy();
  }
  assert.deepEqual(failures, [], `seed ${seed}; stderr:\n${z.stderr().slice(-2000)}`);
  return statuses;
}

describe("fuzzing the REST gateway of both variants at once", { concurrency: 2 }, () => {
  const routers = new Map<"a" | "b", ZestProcess>();
  let dir: string;
  before(async () => {
    // Anything an admin write might create lands in a directory of its own.
    dir = mkdtempSync(join(tmpdir(), "zest-fuzz-"));
    for (const v of ["a", "b"] as const)
      routers.set(v, await startZest(["--rest-variant", v, "--body-limit", String(BODY_LIMIT)], { cwd: dir }));
  });
  after(async () => {
    for (const z of routers.values()) await z.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  for (const variant of ["a", "b"] as const) {
    test(`variant ${variant.toUpperCase()}: ${REQUESTS} malformed requests, no crash, no hang, no 5xx (seed ${SEED}, FUZZ_SEED to replay)`, async (t) => {
      const z = routers.get(variant)!;
      t.diagnostic(`FUZZ_SEED=${SEED}`);
      const t0 = performance.now();
      const statuses = await fuzz(z, variant === "a", SEED + (variant === "a" ? 0 : 1));
      t.diagnostic(
        `${REQUESTS} requests in ${Math.round(performance.now() - t0)} ms; statuses ${JSON.stringify([...statuses].sort())}`,
      );
      // Still serving, and still right.
      const put = await fetch(`${z.url}/fuzz/after`, {
        method: "PUT",
        body: "ok",
        headers: { "content-type": "text/plain" },
      });
      assert.ok(put.ok, `PUT after the fuzz answered ${put.status}`);
      const got = await (await fetch(`${z.url}/fuzz/after`)).text();
      assert.match(got, /"ok"/);
      assert.equal(z.proc.exitCode, null);
    });
  }
});
