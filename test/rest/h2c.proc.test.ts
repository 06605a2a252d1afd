/**
 * HTTP/2 with prior knowledge (h2c) on the plain port (docs/http2.md), with real clients
 * (`node:http2`, and `curl --http2-prior-knowledge` when curl is installed): GET, PUT, DELETE,
 * SSE, a long-poll, access control, HTTP/1.1 on the same port unchanged (its refusals included),
 * closing, and `http2.enabled: false`.
 */
import assert from "node:assert/strict";
import { execFile, spawnSync } from "node:child_process";
import { promisify } from "node:util";
import { type ClientHttp2Session, connect } from "node:http2";
import { connect as netConnect } from "node:net";
import { after, before, describe, it } from "node:test";
import { silentLogger } from "../../src/core/log.js";
import { defaultStartOptions } from "../../src/defaults.js";
import { startZest, type Zest } from "../../src/runtime.js";
import { http } from "../support/http.js";
import { h2, h2Session, h2Sse } from "../support/http2-client.js";
import { eventually } from "../support/wait.js";
import { aliceDemoAccess } from "../support/access.js";

/** What a raw TCP client reads back after sending `bytes` (until the server closes). */
function raw(url: string, bytes: string): Promise<string> {
  const u = new URL(url);
  return new Promise((resolve, reject) => {
    const s = netConnect(Number(u.port), u.hostname, () => s.end(bytes));
    let text = "";
    s.setEncoding("latin1");
    s.on("data", (c: string) => {
      text += c;
    });
    s.on("close", () => resolve(text));
    s.on("error", reject);
  });
}

const TEXT = { "content-type": "text/plain" };
const hasCurl = spawnSync("curl", ["--version"]).status === 0;

describe("HTTP/2 with prior knowledge on the plain port", () => {
  let z: Zest;
  let url: string;
  let session: ClientHttp2Session;
  before(async () => {
    z = await startZest(
      { plugins: { rest: { http_port: "127.0.0.1:0" } } },
      { ...defaultStartOptions(), logger: silentLogger },
    );
    url = z.restUrl!;
    session = await h2Session(url);
  });
  after(async () => {
    session?.close();
    await z?.close();
  });

  it("serves PUT, GET with its ETag, conditional writes and DELETE over h2c", async () => {
    const put = await h2(session, "PUT", "/h2c/a", "v1", TEXT);
    assert.equal(put.status, 200, put.text);
    const get = await h2(session, "GET", "/h2c/a");
    assert.equal(get.status, 200);
    assert.match(get.text, /"v1"/);
    const etag = get.headers.etag as string;
    assert.ok(etag);
    assert.equal((await h2(session, "PUT", "/h2c/a", "v2", { ...TEXT, "if-match": '"0/1"' })).status, 412);
    assert.equal((await h2(session, "PUT", "/h2c/a", "v2", { ...TEXT, "if-match": etag })).status, 200);
    assert.equal((await h2(session, "DELETE", "/h2c/a")).status, 200);
    assert.equal((await h2(session, "GET", "/h2c/a")).text, "[\n\n]\n");
    assert.equal((await h2(session, "GET", "/h2c/a?_wait=nope")).status, 400);
  });

  it("streams SSE and wakes a long-poll over h2c, many streams on one connection", async () => {
    const streams = Array.from({ length: 20 }, () => {
      const s = session.request({ ":method": "GET", ":path": "/h2c/live/**", accept: "text/event-stream" });
      let text = "";
      s.setEncoding("utf8");
      s.on("data", (c: string) => {
        text += c;
      });
      s.on("error", () => {});
      return { s, text: () => text };
    });
    await eventually(() => (z.rest!.status().sse_streams as number) === 20, 5000, "20 streams");
    await h2(session, "PUT", "/h2c/live/k", "v1", TEXT);
    const etag = (await h2(session, "GET", "/h2c/live/k?_wait=1s")).headers.etag as string;
    const poll = h2(session, "GET", "/h2c/live/k?_wait=20s", undefined, { "if-none-match": etag });
    await eventually(() => (z.rest!.status().long_polls as number) === 1, 5000, "the wait to park");
    await h2(session, "PUT", "/h2c/live/k", "v2", TEXT);
    const woke = await poll;
    assert.equal(woke.status, 200);
    assert.match(woke.text, /"v2"/);
    await eventually(() => streams.every((x) => x.text().includes('"v2"')), 5000, "every stream to get the PUT");
    for (const x of streams) x.s.close();
  });

  it("serves HTTP/1.1 on the same port as before, and answers its malformed requests as Node does", async () => {
    assert.equal((await http(url, "PUT", "/h2c/one", { body: "x", headers: TEXT })).status, 200);
    assert.match((await http(url, "GET", "/h2c/one")).text, /"x"/);
    assert.match(await raw(url, "NOT A REQUEST\r\n\r\n"), /^HTTP\/1\.1 400 Bad Request\r\n/);
    const huge = `GET /h2c/one HTTP/1.1\r\nHost: x\r\nX-Big: ${"a".repeat(20_000)}\r\n\r\n`;
    assert.match(await raw(url, huge), /^HTTP\/1\.1 431 /);
  });

  it("curl --http2-prior-knowledge gets HTTP/2", { skip: !hasCurl && "curl is not installed" }, async () => {
    await http(url, "PUT", "/h2c/curl", { body: "c", headers: TEXT });
    // Asynchronously: the server runs in this process.
    const { stdout: out } = await promisify(execFile)(
      "curl",
      ["-s", "-i", "--http2-prior-knowledge", `${url}/h2c/curl`],
      {
        encoding: "utf8",
      },
    );
    assert.match(out, /^HTTP\/2 200/);
    assert.match(out, /"c"/);
  });

  it("closing the gateway ends its h2c connections", async () => {
    const z2 = await startZest(
      { plugins: { rest: { http_port: "127.0.0.1:0" } } },
      { ...defaultStartOptions(), logger: silentLogger },
    );
    const s = await h2Session(z2.restUrl!);
    const closed = new Promise<void>((resolve) => s.on("close", () => resolve()));
    s.on("error", () => {});
    const sse = s.request({ ":method": "GET", ":path": "/demo/**", accept: "text/event-stream" });
    sse.on("error", () => {});
    await eventually(() => z2.rest!.status().sse_streams === 1, 5000, "the stream");
    await z2.close();
    await closed;
  });
});

describe("access control over h2c", () => {
  let z: Zest;
  let session: ClientHttp2Session;
  const alice = { authorization: `Basic ${Buffer.from("alice:alice-pw").toString("base64")}` };
  before(async () => {
    z = await startZest(
      {
        plugins: { rest: { http_port: "127.0.0.1:0" } },
        access_control: aliceDemoAccess(),
      } as never,
      { ...defaultStartOptions(), logger: silentLogger },
    );
    session = await h2Session(z.restUrl!);
  });
  after(async () => {
    session?.close();
    await z?.close();
  });

  it("asks for credentials, allows what the policy allows, refuses the rest, and filters SSE", async () => {
    const anon = await h2(session, "PUT", "/demo/a", "x", TEXT);
    assert.equal(anon.status, 401);
    assert.equal((await h2(session, "PUT", "/demo/a", "x", { ...TEXT, ...alice })).status, 200);
    assert.equal((await h2(session, "PUT", "/other/a", "x", { ...TEXT, ...alice })).status, 403);
    assert.equal((await h2(session, "GET", "/demo/secret/k", undefined, alice)).status, 403);
    const { events, stream } = h2Sse(session, "/demo/**", alice);
    await eventually(() => (z.rest!.status().sse_streams as number) === 1, 5000, "the stream");
    await h2(session, "PUT", "/demo/secret/k", "hidden", { ...TEXT, ...alice });
    await h2(session, "PUT", "/demo/b", "shown", { ...TEXT, ...alice });
    await eventually(() => events.some((e) => e.includes("shown")), 5000, "the allowed event");
    assert.ok(!events.some((e) => e.includes("hidden")), "the refused key's event is filtered out");
    stream.close();
  });
});

describe("h2c turned off", () => {
  it("with http2.enabled false the plain port refuses the HTTP/2 preface, as before", async () => {
    const z = await startZest(
      { plugins: { rest: { http_port: "127.0.0.1:0", http2: { enabled: false } } } },
      { ...defaultStartOptions(), logger: silentLogger },
    );
    try {
      const s = connect(z.restUrl!);
      const failed = await new Promise<boolean>((resolve) => {
        s.once("connect", () => {
          const q = s.request({ ":path": "/demo/a" });
          q.on("response", () => resolve(false));
          q.on("error", () => resolve(true));
          q.end();
        });
        s.once("error", () => resolve(true));
        s.once("close", () => resolve(true));
      });
      s.destroy();
      assert.ok(failed);
    } finally {
      await z.close();
    }
  });
});
