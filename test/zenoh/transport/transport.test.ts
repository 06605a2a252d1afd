/**
 * The zenoh door (src/zenoh/) with a raw TCP client: the handshake and its deadline, the lease,
 * batching, stamping, and every limit, each of which closes one session and never the router.
 */
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { after, test } from "node:test";
import type { Sample } from "../../../src/core/sample.js";
import { Timestamp } from "../../../src/core/timestamp.js";
import { encodeDeclare, encodePush } from "../../../src/zenoh/codec/network.js";
import { CloseReason, encodeFragment, encodeOpen } from "../../../src/zenoh/codec/transport.js";
import { honouredLease, PEER_LEASE_MAX_MS, PEER_LEASE_MIN_MS } from "../../../src/zenoh/transport/transport.js";
import type { ZenohLimits } from "../../../src/zenoh/server.js";
import { RawClient, wireKey, wirePut } from "../raw-client.js";
import { type TestZenohDoor, zenohDoor } from "../../support/zenoh-door.js";

const opened: Array<{ close(): unknown }> = [];
after(async () => {
  for (const o of opened.reverse()) await o.close();
});

function door(limits: Partial<ZenohLimits> = {}): Promise<TestZenohDoor> {
  return zenohDoor(opened, { limits });
}

const key = wireKey;
const put = (payload: string, timestamp?: Timestamp) => wirePut(payload, "text/plain", timestamp);

test("the handshake answers with the router's zid and a cookie; a PUSH without timestamp is stamped by the router", async () => {
  const { router, port, session } = await door();
  const got: Sample[] = [];
  session.declareSubscriber("demo/**", (s) => void got.push(s));
  const c = await RawClient.open(port);
  opened.push(c);
  const init = c.transport.find((t) => t.kind === "init");
  assert.ok(init?.kind === "init" && init.msg.zid === router.zid && init.msg.whatami === "router");
  const ts = new Timestamp(123n << 32n, "C0FFEE");
  c.sendFrame(
    (w) => encodePush(w, key("demo/a"), put("one")),
    (w) => encodePush(w, key("demo/b"), put("two", ts)),
  );
  await c.until(() => got.length === 2 || undefined);
  assert.equal(got[0]?.payload.toString(), "one");
  assert.equal(got[0]?.encoding, "text/plain");
  assert.equal(got[0]?.timestamp?.id, router.zid);
  assert.equal(got[1]?.timestamp?.compare(ts), 0);
});

test("samples of one event-loop turn leave in one batch", async () => {
  const { port, session } = await door();
  const c = await RawClient.open(port);
  opened.push(c);
  c.sendFrame((w) => encodeDeclare(w, { kind: "subscriber", id: 1, key: key("batch/**") }));
  await c.until(() => session.matchingStatus("batch/x", "subscribers") || undefined);
  const before = c.batches.length;
  for (let i = 0; i < 20; i++) void session.put(`batch/${i}`, `v${i}`);
  await c.until(() => c.network.filter((m) => m.kind === "push").length === 20 || undefined);
  assert.equal(c.batches.length - before, 1);
});

test("samples reaching several subscribers arrive whole, once per session however many of its subscribers match (zenoh routes per face), large ones too", async () => {
  const { port, session } = await door();
  const a = await RawClient.open(port, { zid: "A1" });
  const b = await RawClient.open(port, { zid: "B2" });
  opened.push(a, b);
  a.sendFrame(
    (w) => encodeDeclare(w, { kind: "subscriber", id: 1, key: key("multi/**") }),
    (w) => encodeDeclare(w, { kind: "subscriber", id: 2, key: key("multi/x") }),
  );
  b.sendFrame((w) => encodeDeclare(w, { kind: "subscriber", id: 1, key: key("multi/**") }));
  await a.until(() => session.matchingKeys("multi/**", "subscribers").length === 2 || undefined);
  // In one turn: small samples, and samples that fill a batch and move to the next.
  const sizes = [8, 40_000, 30_000, 8, 50_000, 60_000, 3];
  const payloads = sizes.map((n, i) => Buffer.alloc(n, 0x41 + i));
  for (const p of payloads) void session.put("multi/x", p);
  const pushes = (c: RawClient) => c.network.filter((m) => m.kind === "push");
  // Session a holds two subscribers on multi/x: each sample once, in order; a fans it out itself.
  await b.until(() => pushes(b).length === sizes.length || undefined);
  await a.until(() => pushes(a).length >= sizes.length || undefined);
  await new Promise((r) => setTimeout(r, 100));
  const got = (c: RawClient) =>
    pushes(c).map((m) => (m.kind === "push" ? `${m.key.suffix} ${m.body.payload.toString("hex")}` : ""));
  const want = payloads.map((p) => `multi/x ${p.toString("hex")}`);
  assert.deepEqual(got(b), want);
  assert.deepEqual(got(a), want);
});

test("a batch is written at the end of the task that filled it, before the event loop runs its immediates", async () => {
  const { port, session } = await door();
  const c = await RawClient.open(port);
  opened.push(c);
  c.sendFrame((w) => encodeDeclare(w, { kind: "subscriber", id: 1, key: key("flush/**") }));
  await c.until(() => session.matchingStatus("flush/x", "subscribers") || undefined);
  const before = c.batches.length;
  // Scheduled before the first put: had the batch waited for the check phase, the second put
  // would have joined it there.
  setImmediate(() => void session.put("flush/2", "2"));
  void session.put("flush/1", "1");
  await c.until(() => c.network.filter((m) => m.kind === "push").length === 2 || undefined);
  assert.equal(c.batches.length - before, 2);
});

test("a session that does not finish its handshake in time is closed", async () => {
  const { port } = await door({ handshakeTimeoutMs: 200 });
  const c = await RawClient.connect(port);
  opened.push(c);
  await c.waitClosed(3000);
  assert.equal(c.closeReason, CloseReason.EXPIRED);
});

/** Milliseconds from `start` until `c`'s connection closed (it must within `timeoutMs`). */
async function closedAfter(c: RawClient, start: number, timeoutMs: number): Promise<number> {
  await c.waitClosed(timeoutMs);
  return Date.now() - start;
}

test("a silent session is closed near the lease it announced, not at the router's", async () => {
  const { port } = await door({ leaseMs: 10_000 });
  const c = await RawClient.open(port, { leaseMs: 1000 });
  opened.push(c);
  // The raw client sends no KEEP_ALIVE: silent from the OPEN on.
  const waited = await closedAfter(c, Date.now(), 4000);
  assert.equal(c.closeReason, CloseReason.EXPIRED);
  assert.ok(waited >= 900 && waited < 2000, `closed after ${waited} ms, for a lease of 1000`);
});

test("a session that announced a longer lease than the router's outlives the router's, with KEEP_ALIVEs from the router", async () => {
  const { port } = await door({ leaseMs: 1000 });
  const c = await RawClient.open(port, { leaseMs: 3000 });
  opened.push(c);
  const start = Date.now();
  // Twice the router's lease: the session is still open.
  await assert.rejects(c.waitClosed(2000), /the connection to close/);
  // The router keeps itself alive for the peer, at a quarter of its own lease.
  assert.ok(c.transport.filter((t) => t.kind === "keepalive").length >= 2, "too few KEEP_ALIVEs");
  const waited = await closedAfter(c, start, 4000);
  assert.equal(c.closeReason, CloseReason.EXPIRED);
  assert.ok(waited >= 2900 && waited < 4500, `closed after ${waited} ms, for a lease of 3000`);
});

test("an announced lease is bounded: one below 500 ms is taken as 500 ms", async () => {
  const { port } = await door();
  const c = await RawClient.open(port, { leaseMs: 20 });
  opened.push(c);
  const waited = await closedAfter(c, Date.now(), 3000);
  assert.equal(c.closeReason, CloseReason.EXPIRED);
  assert.ok(waited >= 400 && waited < 1500, `closed after ${waited} ms, for a lease of 20 taken as 500`);
});

test("an announced lease above 1 h is taken as 1 h: the session opens and is not expired", async () => {
  assert.equal(honouredLease(2 ** 50), PEER_LEASE_MAX_MS);
  assert.equal(honouredLease(0), PEER_LEASE_MIN_MS);
  const { port, server } = await door({ leaseMs: 1000 });
  const c = await RawClient.open(port, { leaseMs: 2 ** 40 });
  opened.push(c);
  // Past the router's own lease and several checks: still open.
  await assert.rejects(c.waitClosed(1500), /the connection to close/);
  assert.equal(server.status().length, 1);
});

test("a forged cookie is refused", async () => {
  const { port } = await door();
  const c = await RawClient.connect(port);
  opened.push(c);
  c.sendBatch((w) => encodeOpen(w, { ack: false, leaseMs: 10_000, initialSn: 0, cookie: Buffer.alloc(40, 7) }));
  await c.waitClosed();
  assert.equal(c.closeReason, CloseReason.INVALID);
});

test("malformed and truncated batches close that session only; the router keeps serving", async () => {
  const { port } = await door();
  for (const bad of [
    Buffer.from([3, 0, 0x25, 0x00, 0x3d]), // FRAME, then a truncated PUSH
    Buffer.from([2, 0, 0x1f, 0xff]), // an unknown transport message id
    Buffer.from([3, 0, 0x25, 0x00, 0x10]), // FRAME, then not a network message... then junk
  ]) {
    const c = await RawClient.open(port);
    opened.push(c);
    c.sendRaw(bad);
    await c.waitClosed();
  }
  const ok = await RawClient.open(port);
  opened.push(ok);
  assert.equal(ok.closed, false);
});

test("an unknown mandatory extension is refused with CLOSE unsupported", async () => {
  const { port } = await door();
  const c = await RawClient.open(port);
  opened.push(c);
  c.sendRaw(Buffer.from([2, 0, 0x84, 0x1e])); // KEEP_ALIVE with a mandatory unit extension 0x0e
  await c.waitClosed();
  assert.equal(c.closeReason, CloseReason.UNSUPPORTED);
});

test("sessions per address and in total are bounded", async () => {
  const { port } = await door({ maxSessionsPerAddress: 2 });
  const a = await RawClient.open(port);
  const b = await RawClient.open(port);
  const c = await RawClient.connect(port);
  opened.push(a, b, c);
  await c.waitClosed();
  assert.equal(c.closeReason, CloseReason.MAX_SESSIONS);
  a.close();
  await a.waitClosed();
  await new Promise((r) => setTimeout(r, 50));
  const d = await RawClient.open(port);
  opened.push(d);
  assert.equal(d.closed, false);
  const total = await door({ maxSessions: 1 });
  const e = await RawClient.open(total.port);
  const f = await RawClient.connect(total.port);
  opened.push(e, f);
  await f.waitClosed();
  assert.equal(f.closeReason, CloseReason.MAX_SESSIONS);
});

test("declarations per session and key-expression ids are bounded", async () => {
  const { port, server, session } = await door({ maxDeclarations: 2, maxKeyExprIds: 1 });
  const c = await RawClient.open(port);
  opened.push(c);
  c.sendFrame(
    (w) => encodeDeclare(w, { kind: "subscriber", id: 1, key: key("lim/a") }),
    (w) => encodeDeclare(w, { kind: "subscriber", id: 2, key: key("lim/b") }),
    (w) => encodeDeclare(w, { kind: "subscriber", id: 3, key: key("lim/c") }),
    (w) => encodeDeclare(w, { kind: "keyexpr", id: 1, key: { scope: 0, suffix: "ids/one", senderMapping: true } }),
    (w) => encodeDeclare(w, { kind: "keyexpr", id: 2, key: { scope: 0, suffix: "ids/two", senderMapping: true } }),
  );
  const got: string[] = [];
  session.declareSubscriber("ids/**", (s) => void got.push(s.key));
  await c.until(() => session.matchingStatus("lim/b", "subscribers") || undefined);
  await new Promise((r) => setTimeout(r, 100));
  assert.equal(server.status()[0]?.declarations, 2);
  assert.equal(session.matchingStatus("lim/c", "subscribers"), false);
  c.sendFrame(
    (w) => encodePush(w, { scope: 1, suffix: "", senderMapping: true }, put("via id 1")),
    (w) => encodePush(w, { scope: 2, suffix: "", senderMapping: true }, put("via id 2")),
  );
  await c.until(() => got.length >= 1 || undefined);
  await new Promise((r) => setTimeout(r, 100));
  assert.deepEqual(got, ["ids/one"]);
  assert.equal(c.closed, false);
});

test("a fragmented message over the reassembly limit closes the session", async () => {
  const { port } = await door({ maxFragmentedMessage: 1000 });
  const c = await RawClient.open(port);
  opened.push(c);
  for (let i = 0; i < 3; i++)
    c.sendBatch((w) =>
      encodeFragment(w, { sn: i, reliable: true, more: true, first: i === 0, payload: Buffer.alloc(600, 1) }),
    );
  await c.waitClosed();
  assert.equal(c.closeReason, CloseReason.INVALID);
});

test("a fragmented PUSH within the limit is reassembled", async () => {
  const { port, session } = await door();
  const got: Sample[] = [];
  session.declareSubscriber("frag/**", (s) => void got.push(s));
  const c = await RawClient.open(port);
  opened.push(c);
  const { BinaryWriter } = await import("../../../src/core/binary.js");
  const w = new BinaryWriter();
  encodePush(w, key("frag/x"), put("z".repeat(150_000)));
  const msg = w.finish();
  for (let at = 0, sn = 0; at < msg.length; at += 60_000, sn++)
    c.sendBatch((b) =>
      encodeFragment(b, {
        sn,
        reliable: true,
        more: at + 60_000 < msg.length,
        first: at === 0,
        payload: msg.subarray(at, at + 60_000),
      }),
    );
  await c.until(() => got.length === 1 || undefined);
  assert.equal(got[0]?.payload.length, 150_000);
});

test("a slow reader: droppable samples are dropped, then the session is closed at the queue limit", async () => {
  const { port, session, server } = await door({ dropQueueBytes: 256 * 1024, maxQueueBytes: 4 * 1024 * 1024 });
  const c = await RawClient.open(port);
  opened.push(c);
  c.sendFrame((w) => encodeDeclare(w, { kind: "subscriber", id: 1, key: key("slow/**") }));
  await c.until(() => session.matchingStatus("slow/x", "subscribers") || undefined);
  c.socket.pause();
  const payload = Buffer.alloc(16 * 1024, 1);
  for (let round = 0; round < 200 && server.status()[0] && server.status()[0]!.dropped === 0; round++) {
    for (let i = 0; i < 64; i++) void session.put("slow/x", payload);
    await new Promise((r) => setImmediate(r));
  }
  assert.ok((server.status()[0]?.dropped ?? 0) > 0, "no droppable sample was dropped");
  for (let round = 0; round < 400 && server.status().length > 0; round++) {
    for (let i = 0; i < 64; i++)
      void session.put("slow/x", payload, { qos: { priority: 5, congestionControl: "block", express: false } });
    await new Promise((r) => setImmediate(r));
  }
  assert.equal(server.status().length, 0, "the slow session was not closed");
});
