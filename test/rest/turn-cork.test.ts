/**
 * TurnCork (src/rest/turn-cork.ts): a stream's writes of one event-loop turn stay gathered until
 * the turn ends, then leave together and in order; over a real TCP connection.
 */
import assert from "node:assert/strict";
import net from "node:net";
import { test } from "node:test";
import { FLUSH_BYTES, TurnCork } from "../../src/rest/turn-cork.js";

async function socketPair(): Promise<{ a: net.Socket; b: net.Socket; close: () => void }> {
  const server = net.createServer();
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const port = (server.address() as net.AddressInfo).port;
  const accepted = new Promise<net.Socket>((r) => server.once("connection", r));
  const a = net.connect({ host: "127.0.0.1", port });
  await new Promise<void>((r) => a.once("connect", () => r()));
  const b = await accepted;
  return {
    a,
    b,
    close: () => {
      a.destroy();
      b.destroy();
      server.close();
    },
  };
}

test("writes of one turn stay buffered until the turn ends, then all arrive in order", async (t) => {
  const { a, b, close } = await socketPair();
  t.after(close);
  let got = "";
  b.setEncoding("latin1");
  b.on("data", (c: string) => (got += c));
  const cork = new TurnCork();
  const chunks = Array.from({ length: 50 }, (_, i) => Buffer.from(`event ${i}\n`));
  for (const c of chunks) cork.write(a, c);
  // Without the cork each write would have gone to the kernel at once.
  assert.equal(a.writableLength, Buffer.concat(chunks).length);
  assert.equal(a.writableCorked, 1, "corked once, however many writes");
  await new Promise((r) => setImmediate(r));
  assert.equal(a.writableCorked, 0);
  assert.equal(a.writableLength, 0);
  const want = chunks.map(String).join("");
  for (let i = 0; i < 100 && got.length < want.length; i++) await new Promise((r) => setTimeout(r, 5));
  assert.equal(got, want);

  // A later turn corks again; an early flush (a hub closing its streams) sends at once.
  cork.write(a, Buffer.from("late\n"));
  assert.equal(a.writableCorked, 1);
  cork.flush();
  assert.equal(a.writableCorked, 0);
  for (let i = 0; i < 100 && !got.endsWith("late\n"); i++) await new Promise((r) => setTimeout(r, 5));
  assert.ok(got.endsWith("late\n"));
});

test("several sockets written in one turn are each corked once and all released", async (t) => {
  const pairs = await Promise.all([socketPair(), socketPair(), socketPair()]);
  t.after(() => {
    for (const p of pairs) p.close();
  });
  const cork = new TurnCork();
  for (let i = 0; i < 3; i++) for (const { a } of pairs) cork.write(a, Buffer.from(`x${i}`));
  for (const { a } of pairs) assert.equal(a.writableCorked, 1);
  await new Promise((r) => setImmediate(r));
  for (const { a } of pairs) assert.equal(a.writableCorked, 0);
});

test("a socket holding FLUSH_BYTES or more leaves at once: a large value or a replay is not held back", async (t) => {
  const { a, b, close } = await socketPair();
  t.after(close);
  let got = 0;
  b.on("data", (c: Buffer) => (got += c.length));
  const cork = new TurnCork();
  cork.write(a, Buffer.alloc(100, 0x61));
  assert.equal(a.writableCorked, 1);
  cork.write(a, Buffer.alloc(FLUSH_BYTES, 0x62));
  assert.equal(a.writableCorked, 0, "uncorked by the large write");
  // What the kernel took is gone: only the rest stays buffered.
  assert.ok(a.writableLength < FLUSH_BYTES + 100, `${a.writableLength} bytes still buffered`);
  // The next small write of the turn corks again, and the turn's end releases it.
  cork.write(a, Buffer.from("z"));
  assert.equal(a.writableCorked, 1);
  await new Promise((r) => setImmediate(r));
  assert.equal(a.writableCorked, 0);
  for (let i = 0; i < 100 && got < FLUSH_BYTES + 101; i++) await new Promise((r) => setTimeout(r, 5));
  assert.equal(got, FLUSH_BYTES + 101);
});

test("afterFlush runs at once when nothing is gathered, else after the turn's writes have left, in order", async (t) => {
  const { a, close } = await socketPair();
  t.after(close);
  const cork = new TurnCork();
  const calls: string[] = [];
  cork.afterFlush(() => calls.push("idle"));
  assert.deepEqual(calls, ["idle"], "nothing gathered: called at once");
  cork.write(a, Buffer.from("event\n"));
  cork.afterFlush(() => calls.push(`first corked=${a.writableCorked} buffered=${a.writableLength}`));
  cork.afterFlush(() => calls.push("second"));
  assert.deepEqual(calls, ["idle"], "gathered: it waits for the turn's end");
  await new Promise((r) => setImmediate(r));
  assert.deepEqual(calls, ["idle", "first corked=0 buffered=0", "second"]);
  // An early flush (a hub closing) runs what waits too.
  cork.write(a, Buffer.from("late\n"));
  cork.afterFlush(() => calls.push("early"));
  cork.flush();
  assert.equal(calls.at(-1), "early");
});
