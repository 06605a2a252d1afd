/**
 * Bad clients: malformed, truncated, unknown and text frames close only their own connection with
 * the right close code; limits hold; a client that stops reading is dropped; a seeded fuzz run.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { ConsolidationMode, Duration, type Query, ReplyError, type Sample } from "@eclipse-zenoh/zenoh-ts";
import { WebSocket } from "ws";
import { Writer } from "../../src/remote/wire.js";
import { collect, openClient, roundTrip, startRemoteRouter } from "./helpers.js";
import { eventually } from "../support/wait.js";

type Router = Awaited<ReturnType<typeof startRemoteRouter>>;

/** Opens a raw WebSocket to the server. */
async function raw(
  url: string,
): Promise<WebSocket & { closed: Promise<{ code: number; reason: string }>; frames: Buffer[] }> {
  const ws = new WebSocket(url);
  const frames: Buffer[] = [];
  ws.on("message", (d) => void frames.push(d as Buffer));
  const closed = new Promise<{ code: number; reason: string }>((resolve) =>
    ws.on("close", (code, reason) => resolve({ code, reason: reason.toString() })),
  );
  ws.on("error", () => undefined);
  await new Promise<void>((resolve, reject) => {
    ws.once("open", () => resolve());
    ws.once("error", reject);
  });
  return Object.assign(ws, { closed, frames });
}

/** The frame fuzz's seed and size: fixed in `npm test`; `REMOTE_FUZZ_SEED`/`REMOTE_FUZZ_FRAMES` run others. */
const DEFAULT_FRAME_FUZZ_SEED = 0x5eed1234;
const DEFAULT_FRAME_FUZZ_FRAMES = 400;
const FRAME_FUZZ_SEED = Number(process.env.REMOTE_FUZZ_SEED ?? DEFAULT_FRAME_FUZZ_SEED);
const FRAME_FUZZ_FRAMES = Number(process.env.REMOTE_FUZZ_FRAMES ?? DEFAULT_FRAME_FUZZ_FRAMES);

const frame = (f: (w: Writer) => void): Buffer => {
  const w = new Writer();
  f(w);
  return Buffer.from(w.finish());
};
const ping = (seq: number): Buffer => frame((w) => w.u8(25 | 0x80).u32(seq));
const declareSub = (seq: number, id: number, key: string): Buffer =>
  frame((w) =>
    w
      .u8(2 | 0x80)
      .u32(seq)
      .u32(id)
      .string(key)
      .u8(2),
  );
const put = (key: string, payload: Buffer): Buffer =>
  frame((w) => w.u8(14).string(key).bytes(payload).u16(0).string("").bool(false).bool(false).u8(0xa5));

describe("remote API robustness", () => {
  let z: Router;
  before(async () => {
    z = await startRemoteRouter({
      plugins: {
        storage_manager: { storages: {} },
        remote_api: {
          max_frame_bytes: 64 * 1024,
          max_declarations: 3,
          max_pending_gets: 1,
          max_buffered_bytes: 256 * 1024,
        },
      },
    });
  });
  after(async () => {
    await z.close();
  });

  /** A zenoh-ts client still works: the router and other clients are not disturbed. */
  const stillServes = async (): Promise<void> => {
    const c = await openClient(z.locator);
    const got: string[] = [];
    const sub = await c.declareSubscriber("alive/k", { handler: (s: Sample) => void got.push(s.payload().toString()) });
    await c.put("alive/k", "yes");
    await roundTrip(c);
    assert.deepEqual(got, ["yes"]);
    await sub.undeclare();
    await c.close();
  };

  const cases: Array<[string, Buffer | string, number]> = [
    ["a text frame", "hello", 1003],
    ["an unknown message id", Buffer.from([37]), 1002],
    ["an unknown message id with a sequence id", Buffer.from([0x80 | 99, 0, 0, 0, 0]), 1002],
    ["a truncated put", put("a/b", Buffer.from("xyz")).subarray(0, 7), 1007],
    ["a bool that is neither 0 nor 1", Buffer.from([14, 1, 0x61, 0, 0, 0, 0, 7]), 1007],
    ["trailing bytes after a ping", Buffer.concat([ping(1), Buffer.from([0])]), 1007],
    ["a string that is not UTF-8", Buffer.from([0x82, 1, 0, 0, 0, 1, 0, 0, 0, 2, 0xc3, 0x28, 2]), 1007],
    ["a frame above max_frame_bytes", put("big", Buffer.alloc(70 * 1024)), 1009],
  ];
  for (const [what, data, code] of cases) {
    test(`${what} closes that connection with ${code}, and nothing else`, async () => {
      const bystander = await openClient(z.locator);
      const ws = await raw(z.remoteApiUrl!);
      ws.send(data);
      const closed = await ws.closed;
      assert.equal(closed.code, code);
      if (code !== 1009) assert.ok(closed.reason.length > 0, "the close frame says why");
      await roundTrip(bystander);
      await bystander.close();
      await stillServes();
    });
  }

  test("declarations per connection are limited: the one above the limit gets an error reply", async () => {
    const ws = await raw(z.remoteApiUrl!);
    for (let i = 1; i <= 4; i++) ws.send(declareSub(i, 100 + i, `lim/${i}`));
    await eventually(() => ws.frames.length === 4, 2000, "4 responses");
    assert.deepEqual(
      ws.frames.slice(0, 3).map((f) => f[0]),
      [0x81, 0x81, 0x81],
    );
    assert.equal(ws.frames[3]![0], 0x82);
    assert.match(ws.frames[3]!.subarray(6).toString(), /too_large: .*3 declarations/);
    ws.close();
    await ws.closed;
  });

  test("gets in flight per connection are limited: the one above gets an error reply and a final", async () => {
    const q = await openClient(z.locator);
    const c = await openClient(z.locator);
    const qa = await q.declareQueryable("pend/k", { handler: (_q: Query) => undefined });
    const first = collect(await c.get("pend/k", { timeout: Duration.milliseconds.of(500) }));
    const second = await c.get("pend/k", { consolidation: ConsolidationMode.NONE });
    const replies = [];
    for await (const r of second!) replies.push(r.result());
    assert.equal(replies.length, 1);
    assert.ok(replies[0] instanceof ReplyError);
    assert.match((replies[0] as ReplyError).payload().toString(), /^unavailable: .*gets in flight/);
    assert.match((await first)[0]!, /^err:Timeout/);
    await qa.undeclare();
    await q.close();
    await c.close();
  });

  /**
   * A raw client that declared a subscriber on `keyExpr`, then stopped reading; `base` is the
   * router's subscriber count without it (back there once the router dropped the client).
   */
  const subscribedThenDeaf = async (
    keyExpr: string,
  ): Promise<{ ws: Awaited<ReturnType<typeof raw>>; base: number }> => {
    const base = z.router.subscriberCount;
    const ws = await raw(z.remoteApiUrl!);
    ws.send(declareSub(1, 1, keyExpr));
    await eventually(() => ws.frames.length === 1, 2000, "declared");
    assert.equal(z.router.subscriberCount, base + 1);
    (ws as unknown as { _socket: { pause(): void } })._socket.pause();
    return { ws, base };
  };

  test("a client that stops reading is dropped once its queue passes max_buffered_bytes", async () => {
    // The kernel buffers fill, then ws queues, then the server gives up on it.
    const { ws, base } = await subscribedThenDeaf("flood/**");
    const payload = Buffer.alloc(64 * 1024, 1);
    for (let i = 0; i < 2000 && z.router.subscriberCount > base; i++) {
      await z.session.put("flood/k", payload);
      if (i % 50 === 0) await new Promise((r) => setImmediate(r));
    }
    await eventually(() => z.router.subscriberCount === base, 3000, "slow client dropped");
    ws.terminate();
    await stillServes();
  });

  test("a client that sends WebSocket pings and never reads the pongs is dropped too", async () => {
    // The server answers every ping with a pong of the same payload; this client reads none of
    // them, so they pile up in the server's socket (the kernel's buffers first). Our own frames
    // are checked against max_buffered_bytes; pongs are ws's, which drops a client once 60 of
    // them wait unwritten (`maxPendingAutoPongs`, ws >= 8.23 as package.json pins it).
    const { ws, base } = await subscribedThenDeaf("pings/**");
    const payload = Buffer.alloc(125, 1);
    for (let i = 0; i < 400 && z.router.subscriberCount > base && ws.readyState === ws.OPEN; i++) {
      for (let j = 0; j < 500; j++) ws.ping(payload);
      await new Promise((r) => setImmediate(r));
    }
    await eventually(() => z.router.subscriberCount === base, 3000, "the client that does not read its pongs dropped");
    ws.terminate();
    await stillServes();
  });

  test(`seeded fuzz: mutated and random frames never crash the router or break other clients (seed ${FRAME_FUZZ_SEED}, REMOTE_FUZZ_SEED to replay)`, async () => {
    let seed = FRAME_FUZZ_SEED;
    const rand = (): number => {
      // mulberry32
      seed = (seed + 0x6d2b79f5) | 0;
      let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
      t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
      return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
    };
    const valid = [
      ping(1),
      declareSub(2, 7, "fz/**"),
      put("fz/a", Buffer.from("v")),
      frame((w) =>
        w.u8(18).u32(9).string("fz/**").string("").bool(false).bool(false).bool(false).u8(0xa5).u8(0x10).u32(100),
      ),
      frame((w) =>
        w
          .u8(8 | 0x80)
          .u32(3)
          .u32(11)
          .string("fz/tok"),
      ),
      frame((w) =>
        w.u8(21).u32(1).string("fz/a").bytes(Buffer.from("r")).u16(0).string("").bool(false).bool(false).u8(0xa5),
      ),
      frame((w) => w.u8(12 | 0x80).u32(4)),
    ];
    const bystander = await openClient(z.locator);
    const codes = new Map<number, number>();
    let ws = await raw(z.remoteApiUrl!);
    for (let i = 0; i < FRAME_FUZZ_FRAMES; i++) {
      const base = valid[Math.floor(rand() * valid.length)]!;
      let data: Buffer;
      const kind = rand();
      if (kind < 0.3) data = base.subarray(0, Math.floor(rand() * base.length));
      else if (kind < 0.7) {
        data = Buffer.from(base);
        for (let k = 0; k < 1 + Math.floor(rand() * 3); k++)
          data[Math.floor(rand() * data.length)] = Math.floor(rand() * 256);
      } else data = Buffer.from(Array.from({ length: Math.floor(rand() * 40) }, () => Math.floor(rand() * 256)));
      // Each frame is followed by a ping: its answer says the frame was taken, a close that it was refused.
      const seq = 0x10000 + i;
      ws.send(data);
      ws.send(ping(seq));
      const answered = (): boolean => ws.frames.some((f) => f[0] === 0x80 && f.readUInt32LE(1) === seq);
      const outcome = await Promise.race([
        ws.closed.then((c) => c.code),
        eventually(answered, 2000, "ping answer").then(() => 0),
      ]);
      if (outcome !== 0) {
        codes.set(outcome, (codes.get(outcome) ?? 0) + 1);
        ws = await raw(z.remoteApiUrl!);
      }
    }
    ws.close();
    await ws.closed;
    for (const code of codes.keys()) assert.ok([1002, 1003, 1007].includes(code), `unexpected close code ${code}`);
    // The counts are fixed by the seed: each mutated frame is either taken or refused, the same way every run.
    if (FRAME_FUZZ_SEED === DEFAULT_FRAME_FUZZ_SEED && FRAME_FUZZ_FRAMES === DEFAULT_FRAME_FUZZ_FRAMES) {
      assert.ok((codes.get(1007) ?? 0) > 50, `malformed frames were seen as such: ${JSON.stringify([...codes])}`);
      assert.ok((codes.get(1002) ?? 0) > 20, `unknown ids were seen as such: ${JSON.stringify([...codes])}`);
    }
    await roundTrip(bystander);
    await bystander.close();
    await stillServes();
  });
});
