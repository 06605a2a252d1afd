/**
 * Instructions per request of one server, counted by valgrind (callgrind) rather than timed: the
 * same build gives the same count to within 1-2%, on a quiet machine or a busy one, so two builds
 * can be told apart by a few percent where req/s and CPU time move by ±8% from run to run.
 *
 * Usage (valgrind installed, `npm run build` done):
 *   node --import tsx bench/instructions.ts [put|get] [warm=200000] [count=10000] -- <node args>
 *   (node flags first, each as one argument: `--flag=value`; then the script and its arguments)
 *   e.g.  ... bench/instructions.ts put -- dist/cli.js --rest-http-port 127.0.0.1:0
 *         ... bench/instructions.ts put -- bench/baselines/put-ok.mjs
 *
 * The server runs under callgrind with counting off while `warm` requests bring V8 to its steady
 * state, then counts exactly `count` requests (16 connections; PUT of 100 bytes to /bench/put, or
 * GET of /bench/one after one PUT of it). Optimizing compilation runs on the main thread
 * (`--no-concurrent-recompilation`), so it happens when a function gets hot rather than whenever
 * valgrind lets the compiler thread run; what V8's compiler still spends inside the counted
 * window is shown apart, and left out of the per-request figure to compare builds by.
 * `INSTRUCTIONS_DUMP=<file>` keeps the callgrind dump, for `callgrind_annotate`.
 * `INSTRUCTIONS_PUT_PATH=<path>` PUTs there instead (`/bench/put?_ttl=1h`: a PUT with a TTL).
 *
 * HTTPS: the arguments `{cert}` and `{key}` stand for a self-signed certificate made for the run
 * (openssl), and a server that prints `serving https://...` is loaded over TLS (HTTP/1.1, no
 * ALPN, as autocannon connects; the certificate is not checked), e.g.
 *   ... bench/instructions.ts get -- dist/cli.js --rest-http-port 127.0.0.1:0 --rest-tls-cert {cert} --rest-tls-key {key}
 *   ... bench/instructions.ts get -- bench/baselines/https.mjs get {cert} {key}
 *   ... bench/instructions.ts get -- bench/baselines/h2-https.mjs get {cert} {key}
 */
import { mkdtempSync, rmSync } from "node:fs";
import { request as httpRequest } from "node:http";
import { request as httpsRequest } from "node:https";
import { tmpdir } from "node:os";
import { join } from "node:path";
import autocannon from "autocannon";
import { makeCertificate } from "../test/support/certificate.js";
import { callgrindControl, callgrindTotals, callgrindWrapper } from "./lib/callgrind.js";
import { type ServerProcess, spawnServer } from "./lib/proc.js";

const BODY = "x".repeat(100);
const PUT_PATH = process.env.INSTRUCTIONS_PUT_PATH ?? "/bench/put";
const JSON_60 = '{"sensor":"bench/one","celsius":21.5,"ok":true,"seq":123456}';

function usage(): never {
  console.error("usage: bench/instructions.ts [put|get] [warm] [count] -- <node args...>");
  process.exit(2);
}

const argv = process.argv.slice(2);
const dash = argv.indexOf("--");
if (dash === -1 || dash === argv.length - 1) usage();
const [kindArg = "put", warmArg = "200000", countArg = "10000"] = argv.slice(0, dash);
const nodeArgs = argv.slice(dash + 1);
// `<node flags...> <script> <script args...>`: the first argument that is no flag is the script.
const scriptAt = nodeArgs.findIndex((a) => !a.startsWith("-"));
if (scriptAt === -1) usage();
if (kindArg !== "put" && kindArg !== "get") usage();
const kind = kindArg;
const warm = Number(warmArg);
const count = Number(countArg);
if (!Number.isSafeInteger(warm) || warm < 1 || !Number.isSafeInteger(count) || count < 1) usage();

const dir = mkdtempSync(join(tmpdir(), "zest-instructions-"));
let server: ServerProcess | undefined;
try {
  if (nodeArgs.some((a) => a === "{cert}" || a === "{key}")) {
    const { cert, key } = makeCertificate(dir);
    for (const [i, a] of nodeArgs.entries()) nodeArgs[i] = a === "{cert}" ? cert : a === "{key}" ? key : a;
  }
  server = await spawnServer("server", nodeArgs[scriptAt]!, nodeArgs.slice(scriptAt + 1), {
    nodeArgs: ["--no-concurrent-recompilation", ...nodeArgs.slice(0, scriptAt)],
    wrapper: callgrindWrapper(dir),
    timeoutMs: 180_000,
  });
  const base = server.url.replace(/\/$/, "");
  if (kind === "get") await putOnce(`${base}/bench/one`, JSON_60);
  await load(base, warm, count);
  const { total, compiler } = callgrindTotals(server.pid, dir);
  const per = (n: number): string => Math.round(n / count).toLocaleString("en-US");
  console.log(`${kind} ${nodeArgs.join(" ")}`);
  console.log(
    `  instructions per request: ${per(total - compiler)} (V8's compiler meanwhile: ${per(compiler)}; all: ${per(total)})`,
  );
} finally {
  await server?.stop(1_000);
  rmSync(dir, { recursive: true, force: true });
}

/**
 * `warm` requests, then `count` more counted, over the same 16 connections (new connections would
 * send V8 through a round of deoptimizations at the start of the window). Counting is switched on
 * and off as responses arrive, so it starts and stops with at most 16 requests in flight: an
 * error of 0.2% at 10,000 requests. Any answer but 2xx fails the count.
 */
async function load(base: string, warm: number, count: number): Promise<void> {
  let answered = 0;
  const r = await new Promise<autocannon.Result>((resolve, reject) => {
    const run = autocannon(
      {
        ...(kind === "put"
          ? { url: `${base}${PUT_PATH}`, method: "PUT" as const, body: BODY, headers: { "content-type": "text/plain" } }
          : { url: `${base}/bench/one` }),
        connections: 16,
        amount: warm + count,
        timeout: 120,
      },
      (err, result) => (err ? reject(err) : resolve(result)),
    );
    run.on("response", () => {
      answered++;
      // The server waits while valgrind takes the command: counting is not timing.
      if (answered === warm) callgrindControl(server!.pid, "-i", "on");
      else if (answered === warm + count) callgrindControl(server!.pid, "-i", "off");
    });
  });
  if (r.non2xx > 0 || r.errors > 0 || r.timeouts > 0)
    throw new Error(`${r.non2xx} answers other than 2xx, ${r.errors} errors, ${r.timeouts} timeouts`);
}

/** One PUT of `body` as JSON, over TLS (the certificate not checked) for an https URL. */
function putOnce(url: string, body: string): Promise<void> {
  const request = url.startsWith("https:") ? httpsRequest : httpRequest;
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      { method: "PUT", headers: { "content-type": "application/json" }, rejectUnauthorized: false },
      (res) => {
        res.resume();
        res.once("end", () =>
          (res.statusCode ?? 0) < 300 ? resolve() : reject(new Error(`PUT ${url}: ${res.statusCode}`)),
        );
      },
    );
    req.once("error", reject);
    req.end(body);
  });
}
