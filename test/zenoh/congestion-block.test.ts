/**
 * Congestion control BLOCK as zenohd has it (docs/zenoh-protocol.md, "Output: priority lanes"):
 * a publisher whose BLOCK samples go to a subscriber that reads slowly is held back (no longer
 * read) rather than its samples queued without end, and none is lost.
 */
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { setTimeout as sleep } from "node:timers/promises";
import { after, test } from "node:test";
import { encodeDeclare, encodePush } from "../../src/zenoh/codec/network.js";
import type { BinaryWriter } from "../../src/core/binary.js";
import { BLOCK_QUEUE_BYTES } from "../../src/zenoh/session.js";
import { parseConfig } from "../../src/zest-config.js";
import { type ZenohDoorOptions, zenohDoor } from "../support/zenoh-door.js";
import { RawClient, wireKey } from "./raw-client.js";

const opened: Array<{ close(): unknown }> = [];
after(async () => {
  for (const o of opened.reverse()) await o.close();
});

/** Priority 5 (data), congestion control BLOCK: zenoh-python's publisher with BLOCK. */
const QOS_BLOCK = 0x0d;
const TOTAL = 4000;

/**
 * A door with a subscriber on `<prefix>/**` that stops reading, and a publisher that sends it
 * TOTAL BLOCK samples of 4,000 bytes (16 MB) on `<prefix>/x`.
 */
async function publisherToStalledSubscriber(
  prefix: string,
  zids: [sub: string, pub: string],
  options: ZenohDoorOptions = {},
) {
  const door = await zenohDoor(opened, options);
  const sub = await RawClient.open(door.port, { zid: zids[0] });
  opened.push(sub);
  sub.sendFrame((w) => encodeDeclare(w, { kind: "subscriber", id: 1, key: wireKey(`${prefix}/**`) }));
  await sub.until(() => door.session.matchingStatus(`${prefix}/x`, "subscribers") || undefined);
  sub.socket.pause();
  const pub = await RawClient.open(door.port, { zid: zids[1] });
  opened.push(pub);
  const payload = Buffer.alloc(4000, 7);
  const put = (w: BinaryWriter) =>
    encodePush(w, wireKey(`${prefix}/x`), { kind: "put", encoding: "", hasEncoding: false, payload }, QOS_BLOCK);
  for (let sent = 0; sent < TOTAL; sent += 15)
    pub.sendFrame(...Array<typeof put>(Math.min(15, TOTAL - sent)).fill(put));
  return { ...door, sub, pub };
}

test("BLOCK samples to a subscriber that does not read hold the publisher back, as zenohd blocks it, instead of queueing 16 MB; every sample arrives once it reads", async () => {
  const { server, sub } = await publisherToStalledSubscriber("blk", ["B1", "A1"]);
  // Long enough for the router to read all 16 MB if nothing held the publisher back.
  await sleep(1500);
  const queued = Math.max(...server.status().map((s) => s.queued));
  assert.ok(queued <= BLOCK_QUEUE_BYTES + 256 * 1024, `${queued} bytes queued to the subscriber`);
  sub.socket.resume();
  const received = await sub.until(
    () => {
      const n = sub.network.filter((m) => m.kind === "push").length;
      return n === TOTAL ? n : undefined;
    },
    60_000,
    `${TOTAL} samples`,
  );
  assert.equal(received, TOTAL);
});

test("a subscriber that reads nothing while BLOCK publishers wait is closed after block.wait_before_close, and the publisher is read again", async () => {
  const { server, session, pub } = await publisherToStalledSubscriber("stall", ["B2", "A2"], {
    limits: { blockWaitBeforeCloseMs: 400 },
  });
  const seen: string[] = [];
  session.declareSubscriber("after/**", (s) => {
    seen.push(s.key);
  });
  // Behind the 16 MB the publisher sent: read only once the stalled subscriber is gone.
  pub.sendFrame((w) =>
    encodePush(
      w,
      wireKey("after/x"),
      { kind: "put", encoding: "", hasEncoding: false, payload: Buffer.from("ok") },
      QOS_BLOCK,
    ),
  );
  await sleep(200);
  assert.ok(
    server.status().some((s) => s.zid === "B2"),
    "closed before block.wait_before_close",
  );
  assert.deepEqual(seen, [], "the publisher was read on while the subscriber held it back");
  await pub.until(() => (seen.length > 0 ? true : undefined), 10_000, "the put behind the stalled subscriber");
  assert.deepEqual(seen, ["after/x"]);
  assert.ok(!server.status().some((s) => s.zid === "B2"), "the stalled subscriber's session is still open");
});

test("block.wait_before_close is a number of µs from 1,000 to 3,600,000,000, 5 s by default; anything else is refused naming the key", () => {
  const cfg = (v: unknown) =>
    parseConfig({
      transport: { link: { tx: { queue: { congestion_control: { block: { wait_before_close: v } } } } } },
    });
  const waitOf = (v: unknown) => cfg(v).transport?.link?.tx?.queue?.congestion_control?.block?.wait_before_close;
  assert.equal(waitOf(undefined), 5_000_000);
  assert.equal(waitOf(250_000), 250_000);
  for (const bad of ["5s", -1, 999, 1.5, 3_600_000_001, Number.MAX_SAFE_INTEGER * 2, null, {}])
    assert.throws(() => cfg(bad), /wait_before_close/, `accepted ${JSON.stringify(bad)}`);
});
