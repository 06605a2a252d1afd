/**
 * Transport sequence numbers (src/zenoh/transport/sequence.ts, rx.ts) with the raw test client: zenoh's
 * modulo for each resolution, reliable FRAMEs out of sequence closing a TCP session, best-effort
 * ones and UDP's dropped when stale, lanes counted apart under QoS, broken fragment chains
 * discarded.
 */
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { after, test } from "node:test";
import { BinaryWriter } from "../../../src/core/binary.js";
import { type Logger, silentLogger } from "../../../src/core/log.js";
import type { Sample } from "../../../src/core/sample.js";
import { encodeDeclare, encodePush } from "../../../src/zenoh/codec/network.js";
import { CloseReason, encodeFragment } from "../../../src/zenoh/codec/transport.js";
import { InboundSequences, precedes, snMask } from "../../../src/zenoh/transport/sequence.js";
import { RawClient, wireKey } from "../raw-client.js";
import { type TestZenohDoor, zenohDoor } from "../../support/zenoh-door.js";
import { capturingLogger } from "../../support/log.js";

const opened: Array<{ close(): unknown }> = [];
after(async () => {
  for (const o of opened.reverse()) await o.close();
});

async function door(
  endpoint = "tcp/127.0.0.1:0",
  logger: Logger = silentLogger,
): Promise<TestZenohDoor & { got: Sample[] }> {
  const d = await zenohDoor(opened, { endpoint, logger });
  const got: Sample[] = [];
  d.session.declareSubscriber("sn/**", (s) => void got.push(s));
  return { ...d, got };
}

async function client(port: number, opts: Parameters<RawClient["handshake"]>[0] = {}, udp = false) {
  const c = udp ? await RawClient.connectUdp(port) : await RawClient.connect(port);
  opened.push(c);
  await c.handshake(opts);
  return c;
}

const key = wireKey;
const put = (suffix: string) => (w: BinaryWriter) =>
  encodePush(w, key(`sn/${suffix}`), { kind: "put", encoding: "", hasEncoding: false, payload: Buffer.from(suffix) });

const settle = () => new Promise((r) => setTimeout(r, 150));

test("zenoh's modulo per resolution, and precedence across the wrap", () => {
  assert.deepEqual([0, 1, 2].map(snMask), [0x7f, 0x3fff, 0x0fff_ffff]);
  assert.equal(precedes(0x7f, 0, 0x7f), true);
  assert.equal(precedes(10, 10, 0x7f), false);
  assert.equal(precedes(10, 9, 0x7f), false);
  assert.equal(precedes(10, 10 + 63, 0x7f), true);
  assert.equal(precedes(10, 10 + 64, 0x7f), false);
  const seq = new InboundSequences(0x7f, 0);
  assert.equal(seq.expected(0, true), 0);
  assert.equal(seq.check(0, true, 0), "next");
  assert.equal(seq.check(0, true, 2), "later");
  assert.equal(seq.check(0, true, 1), "stale");
  assert.equal(seq.check(0, false, 0), "next", "the best-effort channel counts apart");
});

test("the router's own SNs stay within zenoh's modulo: an 8-bit resolution wraps at 127", async () => {
  const { port, session } = await door();
  const c = await client(port, { snRes: 0 });
  const open = c.transport.find((t) => t.kind === "open");
  assert.ok(open?.kind === "open" && open.msg.initialSn <= 0x7f, `initial SN ${JSON.stringify(open)}`);
  c.sendFrame((w) => encodeDeclare(w, { kind: "subscriber", id: 1, key: key("wrap/**") }));
  await c.until(() => session.matchingStatus("wrap/x", "subscribers") || undefined);
  // One batch per turn: 200 batches walk the SN past the modulo at least once.
  for (let i = 0; i < 200; i++) {
    await session.put("wrap/x", String(i));
    await new Promise((r) => setImmediate(r));
  }
  await c.until(() => c.network.filter((m) => m.kind === "push").length === 200 || undefined);
  const sns = c.transport.flatMap((t) => (t.kind === "frame" ? [t.frame.sn] : []));
  assert.ok(sns.length >= 2);
  for (let i = 1; i < sns.length; i++) assert.equal(sns[i], (sns[i - 1]! + 1) & 0x7f, `SNs ${sns.join(",")}`);
});

test("tcp: a reliable FRAME that skips an SN is taken, as zenoh does (zenoh-rust spends an SN after a fragmented message)", async () => {
  const { port, got } = await door("tcp/127.0.0.1:0");
  const c = await client(port);
  c.sendFrameOn({ sn: 0 }, put("a"));
  c.sendFrameOn({ sn: 2 }, put("b"));
  c.sendFrameOn({ sn: 3 }, put("c"));
  await c.until(() => got.length === 3 || undefined);
  assert.deepEqual(
    got.map((s) => s.key),
    ["sn/a", "sn/b", "sn/c"],
  );
  assert.equal(c.closeReason, undefined);
});

test("tcp: a reliable FRAME that repeats an SN is dropped and the session stays", async () => {
  const { logger, lines } = capturingLogger("debug");
  const { port, got } = await door("tcp/127.0.0.1:0", logger);
  const c = await client(port);
  c.sendFrameOn({ sn: 0 }, put("a"));
  c.sendFrameOn({ sn: 0 }, put("again"));
  c.sendFrameOn({ sn: 1 }, put("b"));
  await c.until(() => got.length === 2 || undefined);
  await settle();
  assert.deepEqual(
    got.map((s) => s.key),
    ["sn/a", "sn/b"],
  );
  assert.equal(c.closeReason, undefined);
  assert.ok(
    lines.some((l) => /stale SN dropped/.test(String(l.msg))),
    JSON.stringify(lines),
  );
});

test("an SN beyond the negotiated resolution closes the session", async () => {
  const { port } = await door();
  const c = await client(port, { snRes: 0 });
  c.sendFrameOn({ sn: 200 }, put("a"));
  await c.waitClosed();
  assert.equal(c.closeReason, CloseReason.INVALID);
});

test("best effort: a stale FRAME is dropped, a later one (a gap) taken, and the session stays", async () => {
  const { port, got } = await door();
  const c = await client(port);
  c.sendFrameOn({ sn: 5, reliable: false }, put("five"));
  c.sendFrameOn({ sn: 3, reliable: false }, put("three"));
  c.sendFrameOn({ sn: 5, reliable: false }, put("again"));
  c.sendFrameOn({ sn: 6, reliable: false }, put("six"));
  // The reliable channel counts apart: its first SN is still 0.
  c.sendFrameOn({ sn: 0 }, put("reliable"));
  await c.until(() => got.length === 3 || undefined);
  await settle();
  assert.deepEqual(
    got.map((s) => s.key),
    ["sn/five", "sn/six", "sn/reliable"],
  );
  assert.equal(c.closed, false);
});

test("with QoS, each priority lane has its own sequence; without, another priority is refused", async () => {
  const { port, got } = await door();
  const c = await client(port, { qos: true });
  c.sendFrameOn({ sn: 0, priority: 2, qos: true }, put("p2"));
  c.sendFrameOn({ sn: 0, priority: 5, qos: true }, put("p5"));
  c.sendFrameOn({ sn: 1, priority: 2, qos: true }, put("p2b"));
  await c.until(() => got.length === 3 || undefined);
  assert.equal(c.closed, false);
  const plain = await client(port);
  plain.sendFrameOn({ sn: 0, priority: 2, qos: true }, put("nope"));
  await plain.waitClosed();
  assert.equal(plain.closeReason, CloseReason.INVALID);
});

test("udp: reliable FRAMEs with a gap are taken and a repeat is dropped, not fatal (datagrams get lost)", async () => {
  const { port, got } = await door("udp/127.0.0.1:0");
  const c = await client(port, {}, true);
  c.sendFrameOn({ sn: 0 }, put("u0"));
  c.sendFrameOn({ sn: 3 }, put("u3"));
  c.sendFrameOn({ sn: 3 }, put("dup"));
  c.sendFrameOn({ sn: 4 }, put("u4"));
  await c.until(() => got.length === 3 || undefined);
  await settle();
  assert.deepEqual(
    got.map((s) => s.key),
    ["sn/u0", "sn/u3", "sn/u4"],
  );
  assert.equal(c.closeReason, undefined);
});

/** A PUSH of `size` bytes, encoded, for fragments. */
function pushBytes(suffix: string, size: number): Buffer {
  const w = new BinaryWriter();
  encodePush(w, key(`sn/${suffix}`), { kind: "put", encoding: "", hasEncoding: false, payload: Buffer.alloc(size, 1) });
  return w.finish();
}

test("fragments with a broken SN chain are discarded; the next whole message is delivered", async () => {
  for (const patch of [1, 0]) {
    const { port, got } = await door("udp/127.0.0.1:0");
    const c = await client(port, { patch }, true);
    const msg = pushBytes("broken", 3000);
    const piece = (sn: number, at: number, more: boolean) =>
      c.sendBatch((w) =>
        encodeFragment(w, {
          sn,
          reliable: false,
          more,
          first: patch >= 1 && at === 0,
          payload: msg.subarray(at, more ? at + 1000 : msg.length),
        }),
      );
    piece(0, 0, true);
    // SN 1 (the middle) is lost.
    piece(2, 2000, false);
    const whole = pushBytes("whole", 10);
    c.sendFrameOn({ sn: 3, reliable: false }, (w) => w.bytes(whole));
    await c.until(() => got.length >= 1 || undefined);
    await settle();
    assert.deepEqual(
      got.map((s) => s.key),
      ["sn/whole"],
      `patch ${patch}`,
    );
    assert.equal(c.closeReason, undefined);
  }
});
