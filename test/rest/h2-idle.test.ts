/**
 * Idle HTTP/2 connections (docs/http2.md, "Idle connections"): a connection with no open stream
 * is closed with GOAWAY after `http2.idle_timeout_ms`, on the plain port (h2c) and the TLS port;
 * a connection whose SSE stream stays quiet for longer is not.
 */
import assert from "node:assert/strict";
import type { ClientHttp2Session } from "node:http2";
import { after, before, describe, it } from "node:test";
import { silentLogger } from "../../src/core/log.js";
import { defaultStartOptions } from "../../src/defaults.js";
import { startZest, type Zest } from "../../src/runtime.js";
import { certificateForSuite } from "../support/certificate.js";
import { h2, h2Session, h2Sse } from "../support/http2-client.js";
import { eventually } from "../support/wait.js";

const IDLE_MS = 300;
const TEXT = { "content-type": "text/plain" };

/** Resolves with the ms from now until the session closes (or rejects after `withinMs`). */
function closedWithin(session: ClientHttp2Session, withinMs: number): Promise<number> {
  const t0 = performance.now();
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`session still open after ${withinMs} ms`)), withinMs);
    session.once("close", () => {
      clearTimeout(timer);
      resolve(performance.now() - t0);
    });
  });
}

async function startWith(rest: Record<string, unknown>): Promise<Zest> {
  return startZest({ plugins: { rest: { http_port: "127.0.0.1:0", ...rest } } } as never, {
    ...defaultStartOptions(),
    logger: silentLogger,
  });
}

describe("idle HTTP/2 connections on the plain port (h2c)", () => {
  let z: Zest;
  before(async () => {
    z = await startWith({ http2: { idle_timeout_ms: IDLE_MS } });
  });
  after(async () => {
    await z?.close();
  });

  it("a connection with no open stream is closed with GOAWAY after the idle timeout", async () => {
    const session = await h2Session(z.restUrl!);
    let goaway = false;
    session.once("goaway", () => {
      goaway = true;
    });
    assert.equal((await h2(session, "PUT", "/idle/a", "v", TEXT)).status, 200);
    const ms = await closedWithin(session, 5_000);
    assert.ok(goaway, "the server said GOAWAY");
    assert.ok(ms >= IDLE_MS - 50, `closed after ${ms} ms, before the idle timeout`);
  });

  it("a quiet SSE stream keeps its connection past the timeout; it closes once the stream ends", async () => {
    const session = await h2Session(z.restUrl!);
    let closed = false;
    session.once("close", () => {
      closed = true;
    });
    const sse = h2Sse(session, "/idle/live/**");
    await eventually(() => (z.rest!.status().sse_streams as number) === 1, 5_000, "the SSE stream");
    await new Promise((r) => setTimeout(r, IDLE_MS * 4));
    assert.equal(closed, false, "a connection with an open stream is not idle");
    // Another connection writes: the stream is live.
    const writer = await h2Session(z.restUrl!);
    assert.equal((await h2(writer, "PUT", "/idle/live/k", "still here", TEXT)).status, 200);
    await eventually(() => sse.events.some((e) => e.includes("still here")), 5_000, "the event");
    sse.stream.close();
    await closedWithin(session, 5_000);
    writer.close();
  });
});

describe("idle HTTP/2 connections on the TLS port, and the setting turned off", () => {
  const certificate = certificateForSuite("zest-h2idle-");
  let z: Zest;
  let off: Zest;
  before(async () => {
    z = await startWith({
      tls: certificate.tls,
      http2: { idle_timeout_ms: IDLE_MS },
    });
    off = await startWith({ http2: { idle_timeout_ms: 0 } });
  });
  after(async () => {
    await z?.close();
    await off?.close();
  });

  it("an idle h2 connection negotiated through ALPN is closed after the timeout", async () => {
    const session = await h2Session(z.restUrl!, { ca: certificate.ca, servername: "localhost" });
    assert.equal(session.alpnProtocol, "h2");
    assert.equal((await h2(session, "GET", "/idle/a")).status, 200);
    await closedWithin(session, 5_000);
  });

  it("idle_timeout_ms 0 keeps an idle connection open", async () => {
    const session = await h2Session(off.restUrl!);
    assert.equal((await h2(session, "GET", "/idle/a")).status, 200);
    await assert.rejects(closedWithin(session, IDLE_MS * 4), /still open/);
    session.close();
  });

  it("a negative, fractional or huge idle_timeout_ms is refused at start", async () => {
    for (const bad of [-1, 1.5, 86_400_001, "1s"]) {
      await assert.rejects(startWith({ http2: { idle_timeout_ms: bad } }), /idle_timeout_ms/, String(bad));
    }
  });
});
