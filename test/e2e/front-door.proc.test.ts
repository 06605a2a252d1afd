import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { once } from "node:events";
import { request as httpsRequest } from "node:https";
import { request as httpRequest } from "node:http";
import { connect, type Socket } from "node:net";
import { dirname, join } from "node:path";
import { after, before, describe, test } from "node:test";
import { killAtExit } from "../support/child-processes.js";
import { getJson, http } from "../support/http.js";
import { CLI, startZest, type ZestProcess } from "../support/zest-process.js";
import { certificateForSuite } from "../support/certificate.js";

const STORAGES = "/@/router/local/config/plugins/storage_manager/storages";
const ALLOWED = "http://allowed.example:3000";

/** One raw HTTP/1.1 request with exactly the headers given (fetch forbids setting Host and Origin). */
function raw(
  base: string,
  method: string,
  path: string,
  headers: Record<string, string>,
  body = "",
  localAddress?: string,
): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; text: string }> {
  const u = new URL(base);
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      {
        host: u.hostname,
        port: u.port,
        method,
        path,
        headers: { ...headers, "content-length": Buffer.byteLength(body) },
        setHost: false,
        localAddress,
        agent: false,
      },
      (res) => {
        let text = "";
        res.setEncoding("utf8");
        res.on("data", (c: string) => (text += c));
        res.on("end", () => resolve({ status: res.statusCode!, headers: res.headers, text }));
      },
    );
    req.on("error", reject);
    req.end(body);
  });
}

describe("browser checks: Origin on writes, preflight, Host on admin writes", () => {
  let z: ZestProcess;
  let host: string;
  before(async () => {
    z = await startZest([
      "--cfg",
      `plugins/rest/cors:{allowed_origins:["${ALLOWED}"]}`,
      "--cfg",
      'plugins/rest/allowed_hosts:["zest.internal"]',
    ]);
    host = new URL(z.url).host;
  });
  after(() => z?.stop());

  test("a write from a foreign Origin is a 403 and writes nothing", async () => {
    for (const method of ["PUT", "PATCH", "DELETE"]) {
      const r = await raw(
        z.url,
        method,
        "/demo/o/k",
        { host, origin: "http://evil.example", "content-type": "text/plain" },
        "x",
      );
      assert.equal(r.status, 403, method);
      assert.match(r.text, /plugins\.rest\.cors\.allowed_origins/);
    }
    assert.equal((await getJson(z.url, "/demo/o/**")).entries.length, 0);
  });

  test("a write from an allowed Origin or the router's own origin is accepted", async () => {
    assert.equal(
      (await raw(z.url, "PUT", "/demo/o/a", { host, origin: ALLOWED, "content-type": "text/plain" }, "a")).status,
      200,
    );
    assert.equal(
      (await raw(z.url, "PUT", "/demo/o/b", { host, origin: `http://${host}`, "content-type": "text/plain" }, "b"))
        .status,
      200,
    );
    assert.equal((await getJson(z.url, "/demo/o/**")).entries.length, 2);
  });

  test("Variant A answers a write with CORS headers only when the request carries an Origin", async () => {
    // zenoh 0.6's CORS middleware leaves requests without an Origin alone (docs/rest-gateway.md §A.4).
    for (const method of ["PUT", "PATCH", "DELETE"]) {
      const plain = await raw(z.url, method, "/demo/o/c", { host, "content-type": "text/plain" }, "c");
      assert.equal(plain.status, 200, method);
      assert.equal(plain.headers["access-control-allow-origin"], undefined, method);
      assert.equal(plain.headers["content-length"], "0", method);
      const cross = await raw(z.url, method, "/demo/o/c", { host, origin: ALLOWED, "content-type": "text/plain" }, "c");
      assert.equal(cross.status, 200, method);
      assert.equal(cross.headers["access-control-allow-origin"], "*", method);
      assert.equal(cross.headers["access-control-allow-credentials"], "false", method);
    }
    // A conditional write's answer (with its ETag) follows the same rule.
    const cond = await raw(
      z.url,
      "PUT",
      "/demo/o/d",
      { host, "if-none-match": "*", "content-type": "text/plain" },
      "d",
    );
    assert.equal(cond.status, 200);
    assert.ok(cond.headers.etag);
    assert.equal(cond.headers["access-control-allow-origin"], undefined);
    assert.equal(cond.headers["access-control-expose-headers"], undefined);
    // So does a refusal (a condition on a wildcard expression is a 400).
    const refused = await raw(z.url, "PUT", "/demo/o/*", { host, "if-none-match": "*" }, "e");
    assert.equal(refused.status, 400);
    assert.equal(refused.headers["access-control-allow-origin"], undefined);
    const refusedCross = await raw(z.url, "PUT", "/demo/o/*", { host, origin: ALLOWED, "if-none-match": "*" }, "e");
    assert.equal(refusedCross.status, 400);
    assert.equal(refusedCross.headers["access-control-allow-origin"], "*");
  });

  test("a rebinding page (Origin and Host both its own domain) cannot write", async () => {
    const r = await raw(
      z.url,
      "PUT",
      "/demo/o/rebind",
      { host: "evil.example:8000", origin: "http://evil.example:8000", "content-type": "text/plain" },
      "x",
    );
    assert.equal(r.status, 403);
  });

  test("the preflight reflects only allowed origins, with a fixed header list", async () => {
    const ok = await raw(z.url, "OPTIONS", "/demo/o/a", {
      host,
      origin: ALLOWED,
      "access-control-request-method": "PUT",
      "access-control-request-headers": "content-type, x-anything",
    });
    assert.equal(ok.status, 204);
    assert.equal(ok.headers["access-control-allow-origin"], ALLOWED);
    assert.match(String(ok.headers["access-control-allow-methods"]), /PUT/);
    assert.equal(
      ok.headers["access-control-allow-headers"],
      "accept, authorization, content-type, if-match, if-none-match, last-event-id",
    );
    const foreign = await raw(z.url, "OPTIONS", "/demo/o/a", {
      host,
      origin: "http://evil.example",
      "access-control-request-method": "DELETE",
    });
    assert.equal(foreign.headers["access-control-allow-origin"], "*");
    assert.equal(foreign.headers["access-control-allow-methods"], "GET");
  });

  test("cross-origin reads stay open: * without credentials", async () => {
    const r = await raw(z.url, "GET", "/demo/o/a", { host, origin: "http://evil.example" });
    assert.equal(r.status, 200);
    assert.equal(r.headers["access-control-allow-origin"], "*");
    assert.equal(r.headers["access-control-allow-credentials"], "false");
  });

  test("admin writes check Host: IP literals, localhost and configured names pass, others are 403", async () => {
    const port = new URL(z.url).port;
    const body = '{key_expr:"h/**",volume:"memory"}';
    for (const [h, status] of [
      [`evil.example:${port}`, 403],
      [`127.0.0.1:${port}`, 200],
      [`localhost:${port}`, 200],
      [`zest.internal:${port}`, 200],
      [`[::1]:${port}`, 200],
    ] as const) {
      const r = await raw(z.url, "PUT", `${STORAGES}/h`, { host: h, "content-type": "application/json" }, body);
      assert.equal(r.status, status, `${h}: ${r.text}`);
      if (status === 403) assert.match(r.text, /Host header naming this router/);
    }
    // No Host at all (HTTP/1.1 requires one: Node answers 400 before the router sees it).
    const noHost = await raw(z.url, "DELETE", `${STORAGES}/h`, {});
    assert.ok(noHost.status === 400 || noHost.status === 403, String(noHost.status));
  });
});

function httpsCall(
  base: string,
  ca: Buffer,
  method: string,
  path: string,
  opts: { body?: string; headers?: Record<string, string> } = {},
): Promise<{ status: number; text: string }> {
  const u = new URL(base);
  return new Promise((resolve, reject) => {
    const req = httpsRequest(
      { host: u.hostname, port: u.port, method, path, ca, headers: opts.headers, agent: false },
      (res) => {
        let text = "";
        res.setEncoding("utf8");
        res.on("data", (c: string) => (text += c));
        res.on("end", () => resolve({ status: res.statusCode!, text }));
      },
    );
    req.on("error", reject);
    req.end(opts.body);
  });
}

describe("TLS", () => {
  const certificate = certificateForSuite("zest-tls-");
  let z: ZestProcess;
  let ca: Buffer;
  before(async () => {
    ca = certificate.ca;
    z = await startZest(["--rest-tls-cert", certificate.cert, "--rest-tls-key", certificate.key]);
  });
  after(async () => {
    await z?.stop();
  });

  test("the gateway serves HTTPS: PUT and GET over TLS, announced as https://", async () => {
    assert.match(z.url, /^https:\/\//);
    const put = await httpsCall(z.url, ca, "PUT", "/demo/tls", {
      body: '{"secure":true}',
      headers: { "content-type": "application/json" },
    });
    assert.equal(put.status, 200);
    const get = await httpsCall(z.url, ca, "GET", "/demo/tls");
    assert.deepEqual((JSON.parse(get.text) as Array<{ value: unknown }>)[0]?.value, { secure: true });
  });

  test("the metrics count what HTTPS clients were sent, on connections closed and still open", async () => {
    const bytesOut = async (): Promise<number> => {
      const r = await httpsCall(z.url, ca, "GET", "/@/router/local/metrics?_raw=true");
      assert.equal(r.status, 200);
      return Number(/^zest_http_response_bytes_total\{variant="a"\} (\d+)$/m.exec(r.text)?.[1]);
    };
    const before = await bytesOut();
    const body = "x".repeat(50_000);
    assert.equal((await httpsCall(z.url, ca, "PUT", "/demo/tls-bytes", { body })).status, 200);
    const get = await httpsCall(z.url, ca, "GET", "/demo/tls-bytes");
    assert.equal(get.status, 200);
    // The GET's answer (and the metrics answer before it) went out on connections now closed.
    const grown = (await bytesOut()) - before;
    assert.ok(grown > Buffer.byteLength(get.text), `response bytes grew by ${grown}`);
  });

  test("plain HTTP on the TLS port gets no answer, and an untrusted certificate is refused by the client", async () => {
    await assert.rejects(fetch(`${z.url.replace("https:", "http:")}/demo/tls`));
    await assert.rejects(httpsCall(z.url, Buffer.from(""), "GET", "/demo/tls").catch((e: Error) => Promise.reject(e)));
  });

  test("SSE over TLS delivers events", async () => {
    const u = new URL(z.url);
    const events: string[] = [];
    const req = httpsRequest({
      host: u.hostname,
      port: u.port,
      path: "/demo/sse/**",
      ca,
      headers: { accept: "text/event-stream" },
      agent: false,
    });
    const [res] = (await new Promise((resolve, reject) => {
      req.on("response", (r) => resolve([r]));
      req.on("error", reject);
      req.end();
    })) as [import("node:http").IncomingMessage];
    assert.equal(res.statusCode, 200);
    res.setEncoding("utf8");
    const got = new Promise<void>((resolve) =>
      res.on("data", (c: string) => {
        events.push(c);
        if (events.join("").includes("demo/sse/k")) resolve();
      }),
    );
    await httpsCall(z.url, ca, "PUT", "/demo/sse/k", { body: "v", headers: { "content-type": "text/plain" } });
    await got;
    assert.match(events.join(""), /event: PUT\ndata: \{ "key": "demo\/sse\/k"/);
    req.destroy();
  });

  test("--rest-tls-cert without --rest-tls-key and an unreadable certificate exit 2", async () => {
    const { runZestExpectingExit } = await import("../support/zest-process.js");
    const lone = await runZestExpectingExit(["--rest-http-port", "127.0.0.1:0", "--rest-tls-cert", certificate.cert]);
    assert.equal(lone.code, 2);
    assert.match(lone.stderr, /go together/);
    const missing = await runZestExpectingExit([
      "--rest-http-port",
      "127.0.0.1:0",
      "--rest-tls-cert",
      join(dirname(certificate.cert), "none.pem"),
      "--rest-tls-key",
      certificate.key,
    ]);
    assert.equal(missing.code, 2);
    assert.match(missing.stderr, /cannot read TLS listen_certificate .*none\.pem: no such file/);
  });
});

describe("connections", () => {
  test("under ulimit -n 1024, 1,100 half-sent requests from one client do not stop another client", async () => {
    const proc = spawn(
      "bash",
      ["-c", `ulimit -n 1024; exec "${process.execPath}" "${CLI}" --rest-http-port 127.0.0.1:0`],
      { stdio: ["ignore", "ignore", "pipe"] },
    );
    killAtExit(proc);
    let err = "";
    proc.stderr!.setEncoding("utf8");
    const url = await new Promise<string>((resolve, reject) => {
      proc.stderr!.on("data", (d: string) => {
        err += d;
        const m = /serving (http:\/\/\S+)/.exec(err);
        if (m) resolve(m[1]!.replace("localhost", "127.0.0.1"));
      });
      proc.once("exit", (code) => reject(new Error(`exited ${code}: ${err}`)));
    });
    const port = Number(new URL(url).port);
    const sockets: Socket[] = [];
    try {
      // 1,100 connections from 127.0.0.1, each holding a request head that never ends.
      await Promise.all(
        Array.from(
          { length: 1100 },
          () =>
            new Promise<void>((resolve) => {
              const s = connect({ host: "127.0.0.1", port, localAddress: "127.0.0.1" }, () => {
                s.write("GET /demo/x HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ");
                resolve();
              });
              s.on("error", () => resolve());
              s.on("close", () => resolve());
              sockets.push(s);
            }),
        ),
      );
      // Another client, from another loopback address, is served at once.
      const r = await raw(url, "GET", "/demo/**", { host: "127.0.0.1" }, "", "127.0.0.2");
      assert.equal(r.status, 200);
      const put = await raw(
        url,
        "PUT",
        "/demo/ok",
        { host: "127.0.0.1", "content-type": "text/plain" },
        "1",
        "127.0.0.2",
      );
      assert.equal(put.status, 200);
      assert.ok(
        sockets.filter((s) => !s.destroyed).length < 1100,
        "the per-address cap closed some of the first client's connections",
      );
    } finally {
      for (const s of sockets) s.destroy();
      proc.kill("SIGTERM");
      await once(proc, "exit");
    }
  });

  test("a request head or a body that stalls is dropped after the configured timeout", async () => {
    const z = await startZest([
      "--cfg",
      "plugins/rest/headers_timeout_ms:500",
      "--cfg",
      "plugins/rest/body_idle_timeout_ms:500",
    ]);
    try {
      const port = Number(new URL(z.url).port);
      const closed = (payload: string): Promise<number> =>
        new Promise((resolve) => {
          const t0 = Date.now();
          const s = connect({ host: "127.0.0.1", port }, () => s.write(payload));
          s.on("data", () => undefined);
          s.on("error", () => undefined);
          s.on("close", () => resolve(Date.now() - t0));
        });
      const [head, body] = await Promise.all([
        closed("GET /demo/x HTTP/1.1\r\nHost: 127.0.0.1\r\n"),
        closed("PUT /demo/x HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: text/plain\r\nContent-Length: 10\r\n\r\nab"),
      ]);
      // Closed by the server (the sockets never end on their own), within a few checks of the limit.
      assert.ok(head >= 400 && head < 5000, `head dropped after ${head} ms`);
      assert.ok(body >= 400 && body < 5000, `body dropped after ${body} ms`);
      assert.equal((await http(z.url, "GET", "/demo/x")).status, 200);
    } finally {
      await z.stop();
    }
  });
});
