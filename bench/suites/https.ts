/**
 * HTTPS (issue 9): zest serving TLS (`--rest-tls-cert/--rest-tls-key`, a certificate made with
 * openssl for the run) against a bare `node:https` server with the same certificate: GET of one
 * key (60-byte JSON) and PUT of 100 bytes, 32 keep-alive connections each, in alternation.
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { request } from "node:https";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { compareGetPut } from "../lib/get-put.js";
import { JSON_60 } from "../lib/payloads.js";
import { type ServerProcess, spawnBaseline, spawnZest } from "../lib/proc.js";
import type { BenchResult } from "../lib/types.js";
import { makeCertificate } from "../../test/support/certificate.js";

const TARGET = 0.85;

function call(
  base: string,
  ca: Buffer,
  method: string,
  path: string,
  body?: string,
  contentType?: string,
): Promise<string> {
  const u = new URL(base);
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: u.hostname,
        port: u.port,
        method,
        path,
        ca,
        agent: false,
        headers: contentType ? { "content-type": contentType } : {},
      },
      (res) => {
        let text = "";
        res.setEncoding("utf8");
        res.on("data", (c: string) => (text += c));
        res.on("end", () =>
          res.statusCode === 200 ? resolve(text) : reject(new Error(`${method} ${path}: ${res.statusCode} ${text}`)),
        );
      },
    );
    req.on("error", reject);
    req.end(body);
  });
}

export async function run(): Promise<BenchResult> {
  const dir = mkdtempSync(join(tmpdir(), "zest-bench-tls-"));
  const servers: ServerProcess[] = [];
  try {
    const { cert, key } = makeCertificate(dir);
    const ca = readFileSync(cert);
    const zest = await spawnZest("zest-https", ["--rest-tls-cert", cert, "--rest-tls-key", key]);
    servers.push(zest);
    const baseGet = await spawnBaseline("https.mjs", ["get", cert, key, JSON_60], "node:https get");
    servers.push(baseGet);
    const basePut = await spawnBaseline("https.mjs", ["put", cert, key], "node:https put");
    servers.push(basePut);
    await call(zest.url, ca, "PUT", "/bench/one", JSON_60, "application/json");
    if (!(await call(zest.url, ca, "GET", "/bench/one")).includes("bench/one"))
      throw new Error("the HTTPS GET did not return the value");

    return await compareGetPut("https", TARGET, {
      subject: { prefix: "zest", label: "zest", server: zest },
      baseline: { prefix: "baseline", label: "node:https", get: baseGet, put: basePut },
    });
  } finally {
    await Promise.all(servers.map((s) => s.stop()));
    rmSync(dir, { recursive: true, force: true });
  }
}
