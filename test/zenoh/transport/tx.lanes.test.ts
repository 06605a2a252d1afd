/**
 * The zenoh door's outgoing priority lanes (src/zenoh/transport/tx.ts) with the raw test client: a
 * high-priority sample overtakes the bulk queued for a slow reader, each lane has its own bounds
 * and (with QoS) its own SNs, and an express sample does not wait for the end of the turn.
 */
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { after, test } from "node:test";
import type { Qos } from "../../../src/core/qos.js";
import type { Session } from "../../../src/core/session.js";
import { encodeDeclare } from "../../../src/zenoh/codec/network.js";
import type { ZenohLimits, ZenohServer } from "../../../src/zenoh/server.js";
import { RawClient } from "../raw-client.js";
import { type TestZenohDoor, zenohDoor } from "../../support/zenoh-door.js";

const opened: Array<{ close(): unknown }> = [];
after(async () => {
  for (const o of opened.reverse()) await o.close();
});

function door(limits: Partial<ZenohLimits> = {}): Promise<TestZenohDoor> {
  return zenohDoor(opened, { limits });
}

async function subscribed(
  port: number,
  session: Session,
  opts: Parameters<RawClient["handshake"]>[0] = {},
): Promise<RawClient> {
  const c = await RawClient.connect(port);
  opened.push(c);
  await c.handshake(opts);
  c.sendFrame((w) =>
    encodeDeclare(w, { kind: "subscriber", id: 1, key: { scope: 0, suffix: "lane/**", senderMapping: false } }),
  );
  await c.until(() => session.matchingStatus("lane/x", "subscribers") || undefined);
  return c;
}

const qos = (priority: number, congestionControl: "block" | "drop", express = false): Qos => ({
  priority,
  congestionControl,
  express,
});

/** The keys of the PUSHes received, in order. */
const pushed = (c: RawClient): string[] => c.network.flatMap((m) => (m.kind === "push" ? [m.key.suffix] : []));

const turn = () => new Promise((r) => setImmediate(r));

/** Puts bulk samples until `queued` bytes wait in the session's lanes (the reader is paused). */
async function fillLanes(server: ZenohServer, session: Session, queued: number, q: Qos): Promise<number> {
  const payload = Buffer.alloc(32 * 1024, 1); // within a batch: the raw client reads no fragments
  let n = 0;
  for (let round = 0; round < 2000 && (server.status()[0]?.queued ?? 0) < queued; round++) {
    for (let i = 0; i < 8; i++) void session.put("lane/bulk", payload, { qos: q });
    n += 8;
    await turn();
  }
  assert.ok((server.status()[0]?.queued ?? 0) >= queued, "the lanes did not fill");
  return n;
}

test("a high-priority sample is written before the bulk queued for a slow reader", async () => {
  const { server, port, session } = await door();
  const c = await subscribed(port, session);
  c.socket.pause();
  const bulk = await fillLanes(server, session, 2 * 1024 * 1024, qos(7, "block"));
  await session.put("lane/urgent", "now", { qos: qos(1, "block") });
  await turn();
  c.socket.resume();
  await c
    .until(() => pushed(c).length === bulk + 1 || undefined, 20_000, "every sample")
    .catch((err: unknown) => {
      throw new Error(`${String(err)}: ${pushed(c).length} of ${bulk + 1}, status ${JSON.stringify(server.status())}`);
    });
  const keys = pushed(c);
  const after = keys.length - 1 - keys.indexOf("lane/urgent");
  // At least the 2 MiB held in the lanes (64 samples of 32 KiB) went after it.
  assert.ok(after >= 60, `only ${after} bulk samples after the urgent one, of ${bulk}`);
});

test("each lane has its own bounds: bulk dropped on a full lane does not drop another lane's samples", async () => {
  const { server, port, session } = await door({ dropQueueBytes: 512 * 1024 });
  const c = await subscribed(port, session);
  c.socket.pause();
  await fillLanes(server, session, 600 * 1024, qos(7, "block"));
  for (let i = 0; i < 8; i++) void session.put("lane/bulk", Buffer.alloc(32 * 1024), { qos: qos(7, "drop") });
  await turn();
  const dropped = server.status()[0]!.dropped;
  assert.ok(dropped > 0, "the full lane dropped nothing");
  await session.put("lane/other", "kept", { qos: qos(5, "drop") });
  await turn();
  assert.equal(server.status()[0]!.dropped, dropped, "a sample of an empty lane was dropped");
  c.socket.resume();
  await c.until(() => pushed(c).includes("lane/other") || undefined, 20_000, "the other lane's sample");
});

test("with QoS agreed, FRAMEs carry their priority and each lane numbers its own SNs from the initial one", async () => {
  const { port, session } = await door();
  const c = await subscribed(port, session, { qos: true });
  const open = c.transport.find((t) => t.kind === "open");
  assert.ok(open?.kind === "open");
  await session.put("lane/a", "a", { qos: qos(2, "block") });
  await session.put("lane/b", "b", { qos: qos(5, "block") });
  await c.until(() => pushed(c).length === 2 || undefined);
  const frames = c.transport.flatMap((t) => (t.kind === "frame" ? [t.frame] : []));
  const p2 = frames.find((f) => f.priority === 2);
  const p5 = frames.find((f) => f.priority === 5);
  assert.ok(p2 && p5, JSON.stringify(frames));
  assert.equal(p2.sn, open.msg.initialSn);
  assert.equal(p5.sn, open.msg.initialSn);
});

test("an express sample leaves at once instead of waiting for the end of the turn", async () => {
  const { port, session } = await door();
  const c = await subscribed(port, session);
  const before = c.batches.length;
  void session.put("lane/1", "1", { qos: qos(5, "block") });
  void session.put("lane/2", "2", { qos: qos(5, "block", true) });
  void session.put("lane/3", "3", { qos: qos(5, "block") });
  await c.until(() => pushed(c).length === 3 || undefined);
  // [1, 2] leave with the express sample; 3 at the end of the turn.
  assert.equal(c.batches.length - before, 2);
  assert.deepEqual(pushed(c), ["lane/1", "lane/2", "lane/3"]);
});
