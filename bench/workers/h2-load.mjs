// The HTTP/2 load generator of bench/suites/http2.ts, the counterpart of autocannon for HTTP/1.1:
// `node bench/workers/h2-load.mjs <https url> <ca file> <sessions> <streams> <GET|PUT> <path> <body|-> <seconds>`.
// One plain Node process, `<sessions>` node:http2 connections with `<streams>` requests in flight
// on each at all times (a new one starts when one ends: a closed loop, as autocannon's
// connections are), through the core stream API (no compatibility layer), for `<seconds>` after
// a 1 s warm-up. PUT sends `<body>` as application/json. Prints one JSON line: 2xx answers,
// other answers, errors, seconds, latency p50/p99 (ms) and the CPU this process used measuring.
import { readFileSync } from "node:fs";
import { connect } from "node:http2";

const [url, caFile, sessionsArg, streamsArg, method, path, bodyArg, secondsArg] = process.argv.slice(2);
const WARMUP_MS = 1_000;
const sessions = Number(sessionsArg);
const streams = Number(streamsArg);
const seconds = Number(secondsArg);
const body = method === "PUT" && bodyArg !== "-" ? Buffer.from(bodyArg) : undefined;
const headers = { ":method": method, ":path": path };
if (body) {
  headers["content-type"] = "application/json";
  headers["content-length"] = String(body.length);
}

const ca = readFileSync(caFile);
const clients = await Promise.all(
  Array.from(
    { length: sessions },
    () =>
      new Promise((resolve, reject) => {
        const s = connect(url, { ca, servername: "localhost" });
        s.once("connect", () => resolve(s));
        s.once("error", reject);
      }),
  ),
);

let measuring = false;
let ok = 0;
let other = 0;
let errors = 0;
const latencies = [];
const until = performance.now() + WARMUP_MS + seconds * 1000;

/** One lane: requests one after the other on `session` until the end. */
function lane(session, done) {
  const next = () => {
    if (performance.now() >= until) return done();
    const t0 = performance.now();
    const req = session.request(headers, { endStream: body === undefined });
    let status = 0;
    req.on("response", (h) => {
      status = h[":status"];
    });
    req.on("data", noop);
    req.on("close", () => {
      if (measuring) {
        if (req.rstCode !== 0 && status === 0) errors++;
        else if (status >= 200 && status < 300) ok++;
        else other++;
        latencies.push(performance.now() - t0);
      }
      next();
    });
    req.on("error", noop);
    if (body !== undefined) req.end(body);
  };
  next();
}

function noop() {}

let cpu0;
let t0;
setTimeout(() => {
  measuring = true;
  cpu0 = process.cpuUsage();
  t0 = performance.now();
}, WARMUP_MS);
await Promise.all(
  clients.flatMap((s) => Array.from({ length: streams }, () => new Promise((resolve) => lane(s, resolve)))),
);
const wall = (performance.now() - t0) / 1000;
const cpu = process.cpuUsage(cpu0);
for (const s of clients) s.close();
latencies.sort((a, b) => a - b);
const pct = (p) => latencies[Math.min(latencies.length - 1, Math.ceil((p / 100) * latencies.length) - 1)] ?? 0;
process.stdout.write(
  `${JSON.stringify({ ok, other, errors, seconds: wall, p50Ms: pct(50), p99Ms: pct(99), cpuSeconds: (cpu.user + cpu.system) / 1e6 })}\n`,
);
