/**
 * HTTP/2 on the TLS port (docs/http2.md) with a real `node:http2` client: GET, PUT, DELETE,
 * conditional writes, SSE (60 streams on one connection), long-poll with a stream reset, and
 * HTTP/1.1 still served on the same port.
 */
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { connect, type ClientHttp2Session } from "node:http2";
import { request as httpsRequest } from "node:https";
import { tmpdir } from "node:os";
import { connect as tlsConnect } from "node:tls";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { silentLogger } from "../../src/core/log.js";
import { defaultStartOptions } from "../../src/defaults.js";
import { startZest, type Zest } from "../../src/runtime.js";
import { certificateForSuite, makeCertificate } from "../support/certificate.js";
import { h2, h2Session, h2Sse } from "../support/http2-client.js";
import { eventually } from "../support/wait.js";
import { aliceDemoAccess } from "../support/access.js";

describe("HTTP/2 on the TLS port", () => {
  const certificate = certificateForSuite("zest-h2-");
  let z: Zest;
  let url: string;
  let ca: Buffer;
  let session: ClientHttp2Session;
  before(async () => {
    ca = certificate.ca;
    z = await startZest(
      {
        plugins: {
          rest: {
            http_port: "127.0.0.1:0",
            tls: certificate.tls,
            headers_timeout_ms: 1000,
          },
        },
      } as never,
      { ...defaultStartOptions(), logger: silentLogger },
    );
    url = z.restUrl!;
    session = await h2Session(url, { ca, servername: "localhost" });
  });
  after(async () => {
    session?.close();
    await z?.close();
  });

  it("negotiates h2 through ALPN and serves PUT, GET with its ETag, conditional writes and DELETE", async () => {
    assert.equal(session.alpnProtocol, "h2");
    const put = await h2(session, "PUT", "/h2/a", "v1", { "content-type": "text/plain" });
    assert.equal(put.status, 200, put.text);
    const get = await h2(session, "GET", "/h2/a");
    assert.equal(get.status, 200);
    assert.match(get.text, /"v1"/);
    const etag = get.headers.etag as string;
    assert.ok(etag);
    const stale = await h2(session, "PUT", "/h2/a", "v2", { "content-type": "text/plain", "if-match": '"0/1"' });
    assert.equal(stale.status, 412);
    const cas = await h2(session, "PUT", "/h2/a", "v2", { "content-type": "text/plain", "if-match": etag });
    assert.equal(cas.status, 200);
    assert.equal((await h2(session, "DELETE", "/h2/a")).status, 200);
    assert.equal((await h2(session, "GET", "/h2/a")).text, "[\n\n]\n");
    const bad = await h2(session, "GET", "/h2/a?_wait=nope");
    assert.equal(bad.status, 400, "errors are answered as on HTTP/1.1");
  });

  it("60 SSE streams on one connection all receive a PUT", async () => {
    const streams = Array.from({ length: 60 }, () => h2Sse(session, "/h2sse/**"));
    await eventually(() => restStreams() === 60, 5000, "60 SSE streams");
    await h2(session, "PUT", "/h2sse/x", "hello", { "content-type": "text/plain" });
    await eventually(
      () => streams.every((s) => s.events.some((e) => e.startsWith("PUT ") && e.includes("hello"))),
      5000,
      "the PUT on every stream",
    );
    for (const s of streams) s.stream.close();
    await eventually(() => restStreams() === 0, 2000, "the streams released");
  });

  it("a long-poll over HTTP/2 wakes on a write, and a reset stream frees its wait at once", async () => {
    await h2(session, "PUT", "/h2lp/a", "1", { "content-type": "text/plain" });
    const etag = (await h2(session, "GET", "/h2lp/a?_wait=1s")).headers.etag as string;
    const waiting = h2(session, "GET", "/h2lp/a?_wait=30s", undefined, { "if-none-match": etag });
    await eventually(() => longPolls() === 1, 5000, "the GET to park");
    await h2(session, "PUT", "/h2lp/a", "2", { "content-type": "text/plain" });
    const woke = await waiting;
    assert.equal(woke.status, 200);
    assert.match(woke.text, /"2"/);
    const etag2 = woke.headers.etag as string;
    const stream = session.request({ ":method": "GET", ":path": "/h2lp/a?_wait=30s", "if-none-match": etag2 });
    stream.on("error", () => {});
    await eventually(() => longPolls() === 1, 5000, "the GET to park");
    stream.close();
    await eventually(() => longPolls() === 0, 1000, "the wait freed");
  });

  it("a slow SSE reader is held back by flow control, then dropped at the 8 MiB limit; other clients go on", async () => {
    const slowSession = connect(url, { ca, servername: "localhost" });
    await new Promise<void>((resolve) => slowSession.once("connect", () => resolve()));
    const slow = slowSession.request({ ":method": "GET", ":path": "/h2slow/**", accept: "text/event-stream" });
    slow.on("error", () => {});
    slow.pause(); // reads nothing: its stream window fills, then the server's buffer
    const fast = h2Sse(session, "/h2slow/**");
    await eventually(() => restStreams() === 2, 5000, "both streams");
    const droppedBefore = z.rest!.status().sse_dropped as number;
    const value = "v".repeat(128 * 1024);
    for (let i = 0; i < 100; i++) {
      const r = await h2(session, "PUT", `/h2slow/k${i % 4}`, value, { "content-type": "text/plain" });
      assert.equal(r.status, 200);
    }
    await h2(session, "PUT", "/h2slow/last", "end", { "content-type": "text/plain" });
    await eventually(
      () => (z.rest!.status().sse_dropped as number) === droppedBefore + 1,
      10_000,
      "the slow stream dropped",
    );
    await eventually(
      () => fast.events.some((e) => e.includes('"h2slow/last"')),
      10_000,
      "the fast reader's last event",
    );
    assert.equal(fast.events.length, 101, "the fast reader got every event");
    fast.stream.close();
    slowSession.destroy();
    await eventually(() => restStreams() === 0, 2000, "the streams released");
  });

  it("an HTTP/1.1 client on the TLS port that does not finish its head gets 408 at headers_timeout_ms", async () => {
    const port = Number(new URL(url).port);
    const t0 = Date.now();
    const outcome = await new Promise<string>((resolve) => {
      const s = tlsConnect(
        { port, host: "127.0.0.1", ca, servername: "localhost", ALPNProtocols: ["http/1.1"] },
        () => {
          s.write("GET /h2/a HTTP/1.1\r\nHost: localhost\r\n");
        },
      );
      let first = "";
      s.on("data", (d: Buffer) => {
        first ||= String(d).split("\r\n")[0]!;
      });
      s.on("close", () => resolve(first));
      s.on("error", () => {});
      setTimeout(() => {
        s.destroy();
        resolve("still open");
      }, 5000).unref();
    });
    assert.equal(outcome, "HTTP/1.1 408 Request Timeout");
    assert.ok(Date.now() - t0 < 3500, `closed after ${Date.now() - t0} ms`);
  });

  it("HTTP/1.1 clients are still served on the same port", async () => {
    const res = await new Promise<{ status: number; version: string }>((resolve, reject) => {
      const req = httpsRequest(`${url}/h2/a`, { ca, servername: "localhost" }, (r) => {
        r.resume();
        r.on("end", () => resolve({ status: r.statusCode ?? 0, version: r.httpVersion }));
      });
      req.on("error", reject);
      req.end();
    });
    assert.deepEqual(res, { status: 200, version: "1.1" });
  });

  function restStreams(): number {
    return (z.rest?.status().sse_streams as number | undefined) ?? Number.NaN;
  }
  function longPolls(): number {
    return (z.rest?.status().long_polls as number | undefined) ?? Number.NaN;
  }
});

describe("access control over HTTP/2", () => {
  const certificate = certificateForSuite("zest-h2-acl-");
  let z: Zest;
  let session: ClientHttp2Session;
  const basic = (user: string, password: string): Record<string, string> => ({
    authorization: `Basic ${Buffer.from(`${user}:${password}`).toString("base64")}`,
  });
  const alice = basic("alice", "alice-pw");
  before(async () => {
    z = await startZest(
      {
        plugins: {
          rest: { http_port: "127.0.0.1:0", tls: certificate.tls },
        },
        access_control: aliceDemoAccess(),
      } as never,
      { ...defaultStartOptions(), logger: silentLogger },
    );
    session = await h2Session(z.restUrl!, { ca: certificate.ca, servername: "localhost" });
  });
  after(async () => {
    session?.close();
    await z?.close();
  });

  it("asks for credentials, allows what the policy allows, refuses the rest, and filters SSE", async () => {
    const anon = await h2(session, "PUT", "/demo/a", "x", { "content-type": "text/plain" });
    assert.equal(anon.status, 401);
    assert.ok(anon.headers["www-authenticate"]);
    const ok = await h2(session, "PUT", "/demo/a", "x", { "content-type": "text/plain", ...alice });
    assert.equal(ok.status, 200, ok.text);
    assert.equal((await h2(session, "PUT", "/other/a", "x", { "content-type": "text/plain", ...alice })).status, 403);
    assert.equal((await h2(session, "GET", "/demo/secret/k", undefined, alice)).status, 403);
    const { events, stream } = h2Sse(session, "/demo/**", alice);
    await eventually(() => (z.rest!.status().sse_streams as number) === 1, 5000, "the stream");
    await h2(session, "PUT", "/demo/secret/k", "hidden", { "content-type": "text/plain", ...alice });
    await h2(session, "PUT", "/demo/b", "shown", { "content-type": "text/plain", ...alice });
    await eventually(() => events.some((e) => e.includes("shown")), 5000, "the allowed event");
    assert.ok(!events.some((e) => e.includes("hidden")), "the refused key's event is filtered out");
    stream.close();
  });
});

describe("closing an HTTP/2 gateway", () => {
  it("ends its open HTTP/2 connections, SSE streams included, and resolves", async () => {
    const dir = mkdtempSync(join(tmpdir(), "zest-h2-close-"));
    try {
      const { cert, key } = makeCertificate(dir);
      const z = await startZest(
        { plugins: { rest: { http_port: "127.0.0.1:0", tls: { listen_certificate: cert, listen_private_key: key } } } },
        { ...defaultStartOptions(), logger: silentLogger },
      );
      const session = connect(z.restUrl!, { ca: readFileSync(cert) });
      const closed = new Promise<void>((resolve) => session.on("close", () => resolve()));
      session.on("error", () => {});
      const { stream } = h2Sse(session, "/demo/**");
      stream.on("error", () => {});
      await eventually(() => z.rest!.status().sse_streams === 1, 5000, "the stream");
      // Before the fix, close() threw (no closeAllConnections on an http2 server) and the
      // connection stayed open.
      await z.close();
      await closed;
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
