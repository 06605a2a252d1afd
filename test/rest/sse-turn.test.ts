/**
 * SSE streams gather the events of one event-loop turn (docs/sse.md): what a burst of writes
 * sends to a stream leaves in one socket write at the end of the turn, in order; and a router
 * that closes sends what it gathered before the streams end. The stream's server-side socket is
 * found through `node:diagnostics_channel` ("http.server.request.start"), Node's public hook.
 */
import assert from "node:assert/strict";
import diagnostics from "node:diagnostics_channel";
import type { IncomingMessage } from "node:http";
import net from "node:net";
import { type TestContext, test } from "node:test";
import { silentLogger } from "../../src/core/log.js";
import { startZest, type Zest } from "../../src/runtime.js";
import { eventually } from "../support/wait.js";

const REQUEST_START = "http.server.request.start";

/**
 * Starts a router and opens a raw SSE stream on `keyExpr`, both closed when test `t` ends;
 * `socket` is the server's side.
 */
async function openStream(
  t: TestContext,
  keyExpr: string,
): Promise<{
  zest: Zest;
  socket: net.Socket;
  received: () => string;
  client: net.Socket;
}> {
  const zest = await startZest({ plugins: { rest: { http_port: "127.0.0.1:0" } } }, { logger: silentLogger });
  const url = new URL(zest.restUrl!.replace("localhost", "127.0.0.1"));
  let serverSide: net.Socket | undefined;
  const onStart = (message: unknown): void => {
    const { request, socket } = message as { request: IncomingMessage; socket: net.Socket };
    if (request.headers.accept === "text/event-stream") serverSide = socket;
  };
  diagnostics.subscribe(REQUEST_START, onStart);
  const client = net.connect({ host: url.hostname, port: Number(url.port) });
  t.after(async () => {
    client.destroy();
    await zest.close();
  });
  let text = "";
  client.setEncoding("latin1");
  client.on("data", (c: string) => (text += c));
  client.write(`GET /${keyExpr} HTTP/1.1\r\nHost: ${url.host}\r\nAccept: text/event-stream\r\n\r\n`);
  for (let i = 0; i < 200 && !text.includes("\r\n\r\n"); i++) await new Promise((r) => setTimeout(r, 5));
  diagnostics.unsubscribe(REQUEST_START, onStart);
  assert.ok(text.startsWith("HTTP/1.1 200"), `the stream opened: ${text.slice(0, 80)}`);
  assert.ok(serverSide, "the stream's server-side socket was seen");
  return { zest, socket: serverSide, received: () => text, client };
}

test("a burst of one turn waits for the end of the turn, then leaves together, in order", {
  timeout: 15_000,
}, async (t) => {
  const { zest, socket, received } = await openStream(t, "burst/**");
  const before = socket.writableLength;
  // Ten writes in one turn: memory storage writes and their deliveries complete without I/O.
  await Promise.all(Array.from({ length: 10 }, (_, i) => zest.session.put(`burst/${i}`, `v${i}`)));
  assert.equal(socket.writableCorked, 1, "the stream is corked for the rest of the turn");
  assert.ok(socket.writableLength > before, "the burst's events wait in the socket's buffer");
  await new Promise((r) => setImmediate(r));
  assert.equal(socket.writableCorked, 0, "uncorked when the turn ends");
  await eventually(() => received().includes('"burst/9"'), 2_000, "all ten events arrived");
  const keys = [...received().matchAll(/"key": "(burst\/\d)"/g)].map((m) => m[1]);
  assert.deepEqual(
    keys,
    Array.from({ length: 10 }, (_, i) => `burst/${i}`),
  );
});

test("a gateway that closes sends the events it gathered before it drops the connections", {
  timeout: 15_000,
}, async (t) => {
  const { zest, socket, received, client } = await openStream(t, "last/**");
  let ended = false;
  client.on("close", () => (ended = true));
  await zest.session.put("last/word", "bye");
  assert.equal(socket.writableCorked, 1, "the event is gathered, not yet sent");
  // The REST gateway closes in the same turn, and drops every connection at once: the gathered
  // event must reach the kernel first.
  const closing = zest.rest!.close();
  assert.ok(socket.destroyed, "the gateway dropped the connection in the same turn");
  await closing;
  await eventually(() => ended, 2_000, "the stream closed");
  assert.match(received(), /"key": "last\/word"/);
});

test("a write's answer leaves after the events its sample made: a watcher sees the change no later than the writer", {
  timeout: 15_000,
}, async (t) => {
  const { zest, socket, received } = await openStream(t, "order/**");
  const url = new URL(zest.restUrl!.replace("localhost", "127.0.0.1"));
  // The state of the stream's socket at the moment the PUT's answer is written.
  let atAnswer: { corked: number; buffered: number } | undefined;
  const onStart = (message: unknown): void => {
    const { request, response } = message as {
      request: IncomingMessage;
      response: { writeHead: (...args: unknown[]) => unknown };
    };
    if (request.method !== "PUT") return;
    const writeHead = response.writeHead;
    response.writeHead = function (this: unknown, ...args: unknown[]) {
      atAnswer = { corked: socket.writableCorked, buffered: socket.writableLength };
      return writeHead.apply(this, args as never);
    };
  };
  diagnostics.subscribe(REQUEST_START, onStart);
  t.after(() => diagnostics.unsubscribe(REQUEST_START, onStart));
  const res = await fetch(`http://${url.host}/order/a`, {
    method: "PUT",
    body: "1",
    headers: { "content-type": "text/plain" },
  });
  assert.equal(res.status, 200);
  await res.arrayBuffer();
  assert.ok(atAnswer, "the PUT was answered");
  assert.equal(atAnswer.corked, 0, "the stream was uncorked before the answer was written");
  assert.equal(atAnswer.buffered, 0, "its event had left for the kernel before the answer");
  await eventually(() => received().includes('"order/a"'), 2_000, "the event arrived");
});
