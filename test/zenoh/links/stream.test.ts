/**
 * Batches over a byte stream (src/zenoh/links/stream.ts, docs/zenoh-protocol.md "Links"): each
 * batch is read back whole from its 2-byte little-endian length, however TCP splits or joins the
 * bytes, over a real loopback socket.
 */
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { once } from "node:events";
import { createServer, type Socket, connect } from "node:net";
import { after, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { StreamWire } from "../../../src/zenoh/links/stream.js";
import { untilPasses } from "../../support/assert.js";

const server = createServer();
const accepted: Socket[] = [];
server.on("connection", (s) => accepted.push(s));
const listening = once(server, "listening");
server.listen(0, "127.0.0.1");
after(() => server.close());

/** A client socket, and the server side of it wrapped in a `StreamWire` recording its batches. */
async function pair(): Promise<{ client: Socket; batches: Buffer[]; closed: () => boolean; wire: StreamWire }> {
  await listening;
  const client = connect((server.address() as { port: number }).port, "127.0.0.1");
  await once(client, "connect");
  await untilPasses(() => assert.ok(accepted.length > 0));
  const wire = new StreamWire("tcp", accepted.shift()!);
  const batches: Buffer[] = [];
  let isClosed = false;
  wire.bind({
    batch: (b) => void batches.push(Buffer.from(b)),
    closed: () => {
      isClosed = true;
    },
    drained: () => {},
  });
  return { client, batches, closed: () => isClosed, wire };
}

const framed = (body: Buffer): Buffer => {
  const len = Buffer.alloc(2);
  len.writeUInt16LE(body.length);
  return Buffer.concat([len, body]);
};

test("batches split at every byte, and several in one write, come out whole and in order", async () => {
  const { client, batches } = await pair();
  const bodies = [Buffer.from("a"), Buffer.alloc(0), Buffer.alloc(300, 7), Buffer.from("last")];
  const bytes = Buffer.concat(bodies.map(framed));
  for (let i = 0; i < bytes.length; i++) {
    client.write(bytes.subarray(i, i + 1));
    if (i % 50 === 0) await sleep(1); // let some bytes arrive alone
  }
  client.write(Buffer.concat([framed(Buffer.from("x")), framed(Buffer.from("y"))]));
  await untilPasses(() => assert.equal(batches.length, bodies.length + 2));
  assert.deepEqual(
    batches.map((b) => b.toString("hex")),
    [...bodies, Buffer.from("x"), Buffer.from("y")].map((b) => b.toString("hex")),
  );
  client.destroy();
});

test("the largest batch a 2-byte length names (65,535 bytes) is read whole; a partial one is kept until the rest comes", async () => {
  const { client, batches, closed } = await pair();
  const big = Buffer.alloc(65_535, 9);
  const bytes = framed(big);
  client.write(bytes.subarray(0, 40_000));
  await sleep(50);
  assert.equal(batches.length, 0);
  client.write(bytes.subarray(40_000));
  await untilPasses(() => assert.equal(batches.length, 1));
  assert.equal(batches[0]!.equals(big), true);
  client.end();
  await untilPasses(() => assert.equal(closed(), true));
});

test("nothing is delivered after the wire is destroyed", async () => {
  const { client, batches, wire } = await pair();
  client.write(framed(Buffer.from("one")));
  await untilPasses(() => assert.equal(batches.length, 1));
  wire.destroy();
  client.write(framed(Buffer.from("two")), () => {});
  await sleep(50);
  assert.equal(batches.length, 1);
  client.destroy();
});
