/**
 * The benchmarks' raw WebSocket client (bench/lib/raw-ws.ts) bounds what it holds from a peer:
 * an upgrade answer with no end, and a frame declared larger than it takes, end the connection
 * instead of growing its buffer while it waits for bytes that may never come.
 */
import assert from "node:assert/strict";
import net from "node:net";
import { test } from "node:test";
import { connectRawWs } from "../../bench/lib/raw-ws.js";

const UPGRADED = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n";

/** A TCP server that answers each connection with `reply`; resolves with its URL and a close probe. */
async function peer(
  reply: (socket: net.Socket) => void,
): Promise<{ url: string; closed: Promise<void>; stop(): void }> {
  let onClosed!: () => void;
  const closed = new Promise<void>((r) => (onClosed = r));
  const sockets: net.Socket[] = [];
  const server = net.createServer((socket) => {
    sockets.push(socket);
    socket.on("error", () => {});
    socket.once("close", onClosed);
    socket.once("data", () => reply(socket));
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const { port } = server.address() as net.AddressInfo;
  return {
    url: `ws://127.0.0.1:${port}/`,
    closed,
    stop: () => {
      for (const s of sockets) s.destroy();
      server.close();
    },
  };
}

test("an upgrade answer that never ends is refused past 64 KiB", { timeout: 10_000 }, async (t) => {
  const p = await peer((socket) => socket.write(`HTTP/1.1 101 Switching Protocols\r\nX: ${"a".repeat(70_000)}`));
  t.after(() => p.stop());
  await assert.rejects(
    connectRawWs(p.url, () => {}),
    /no end within 65536 bytes/,
  );
  await p.closed;
});

test("a frame declared over 16 MiB ends the connection", { timeout: 10_000 }, async (t) => {
  // A binary frame header declaring 2^32 bytes, then a few of them.
  const header = Buffer.from([0x82, 127, 0, 0, 0, 1, 0, 0, 0, 0]);
  const p = await peer((socket) => socket.write(Buffer.concat([Buffer.from(UPGRADED), header, Buffer.alloc(16)])));
  t.after(() => p.stop());
  const frames: Buffer[] = [];
  const ws = await connectRawWs(p.url, (payload) => frames.push(payload));
  t.after(() => ws.close());
  await p.closed;
  assert.equal(frames.length, 0);
});

test("frames within the limit arrive whole, also when split across reads", { timeout: 10_000 }, async (t) => {
  const payload = Buffer.alloc(70_000, 7);
  const head = Buffer.from([0x82, 127, 0, 0, 0, 0, 0, 0, 0, 0]);
  head.writeUInt32BE(payload.length, 6);
  const p = await peer((socket) => {
    const all = Buffer.concat([Buffer.from(UPGRADED), head, payload]);
    socket.write(all.subarray(0, 100));
    setTimeout(() => socket.write(all.subarray(100)), 50);
  });
  t.after(() => p.stop());
  const got = new Promise<Buffer>((resolve, reject) => {
    connectRawWs(p.url, (f) => resolve(Buffer.from(f))).then((ws) => t.after(() => ws.close()), reject);
  });
  assert.deepEqual(await got, payload);
});
