import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { describe, test } from "node:test";
import { Timestamp } from "../../../src/core/timestamp.js";
import type { Digest } from "../../../src/storage/replication/log.js";
import {
  decodeDigest,
  decodeEventsQuery,
  decodeEventsReply,
  decodeIntervalsQuery,
  decodeIntervalsReply,
  decodeSubsQuery,
  decodeSubsReply,
  decodeValuesQuery,
  decodeValuesReply,
  encodeDigest,
  encodeEventsQuery,
  encodeEventsReply,
  encodeIntervalsQuery,
  encodeIntervalsReply,
  encodeSubsQuery,
  encodeSubsReply,
  encodeValuesQuery,
  encodeValuesReply,
  MAX_ITEMS_PER_QUERY,
  MAX_MESSAGE_BYTES,
  MAX_RECEIVED_BYTES,
  ReplicationWireError,
} from "../../../src/storage/replication/wire.js";
import { rngUnit } from "../../support/rng.js";

const TS = new Timestamp(0x1234_5678_9abc_def0n, "A1B2");
const DIGEST: Digest = {
  intervalMs: 10_000,
  subIntervals: 5,
  hot: 6,
  warm: 30,
  current: 179_000_000,
  cold: { hi: 1, lo: 0xffff_ffff },
  warmIntervals: [{ interval: 178_999_990, fp: { hi: 2, lo: 3 } }],
  hotSubs: [{ interval: 179_000_000, sub: 4, fp: { hi: 5, lo: 6 } }],
  purgedBeforeMs: 1_700_000_000_000,
};

describe("replication messages", () => {
  test("every message decodes to what was encoded", () => {
    assert.deepEqual(decodeDigest(encodeDigest({ zid: "A1B2", storage: "d", digest: DIGEST })), {
      zid: "A1B2",
      storage: "d",
      digest: DIGEST,
    });
    assert.equal(decodeIntervalsQuery(encodeIntervalsQuery(42)), 42);
    assert.deepEqual(decodeSubsQuery(encodeSubsQuery([1, 2])), [1, 2]);
    assert.deepEqual(decodeEventsQuery(encodeEventsQuery([{ interval: 7, sub: 1 }])), [{ interval: 7, sub: 1 }]);
    assert.deepEqual(decodeValuesQuery(encodeValuesQuery(["d/a", "d/é"])), ["d/a", "d/é"]);
    const ivs = [{ interval: 9, fp: { hi: 1, lo: 2 } }];
    assert.deepEqual(decodeIntervalsReply(encodeIntervalsReply(ivs)[0]!), ivs);
    const subs = [{ interval: 9, sub: 3, fp: { hi: 1, lo: 2 } }];
    assert.deepEqual(decodeSubsReply(encodeSubsReply(subs)[0]!), subs);
    const events = [
      { key: "d/a", timestamp: TS, deleted: false },
      { key: "d/b", timestamp: TS, deleted: true },
    ];
    assert.deepEqual(decodeEventsReply(encodeEventsReply(5, events)[0]!), { purgedBeforeMs: 5, events });
    const values = [{ key: "d/a", timestamp: TS, deleted: false, encoding: "text/plain", payload: Buffer.from("v") }];
    assert.deepEqual(decodeValuesReply(encodeValuesReply(values)[0]!), values);
  });

  test("a reply too large for one message is split into several below the limit", () => {
    const big = Buffer.alloc(10_000, 1);
    const values = Array.from({ length: 100 }, (_, i) => ({
      key: `d/${i}`,
      timestamp: TS,
      deleted: false,
      encoding: "",
      payload: big,
    }));
    const parts = encodeValuesReply(values);
    assert.ok(parts.length >= 4);
    for (const p of parts) assert.ok(p.length <= MAX_MESSAGE_BYTES);
    assert.deepEqual(
      parts.flatMap((p) => decodeValuesReply(p)).map((v) => v.key),
      values.map((v) => v.key),
    );
    // A value larger than a message travels alone.
    const huge = encodeValuesReply([{ ...values[0]!, payload: Buffer.alloc(MAX_MESSAGE_BYTES + 1) }]);
    assert.equal(huge.length, 1);
    assert.equal(decodeValuesReply(huge[0]!)[0]!.payload.length, MAX_MESSAGE_BYTES + 1);
  });

  test("malformed messages are refused: wrong type, short, trailing bytes, lying counts, bad fields", () => {
    const digest = encodeDigest({ zid: "A1B2", storage: "d", digest: DIGEST });
    const refuse = (f: () => unknown, why: RegExp): void =>
      assert.throws(f, (e) => e instanceof ReplicationWireError && why.test(e.message));
    refuse(() => decodeDigest(encodeIntervalsQuery(1)), /expected message type/);
    refuse(() => decodeDigest(digest.subarray(0, digest.length - 1)), /ends early|larger than the message/);
    refuse(() => decodeDigest(Buffer.concat([digest, Buffer.from([0])])), /trail/);
    refuse(() => decodeDigest(encodeDigest({ zid: "a1b2", storage: "d", digest: DIGEST })), /router id/);
    refuse(() => decodeDigest(encodeDigest({ zid: "A1B2", storage: "../x", digest: DIGEST })), /storage name/);
    refuse(
      () => decodeDigest(encodeDigest({ zid: "A1B2", storage: "d", digest: { ...DIGEST, current: 0.5 } })),
      /integer/,
    );
    refuse(
      () =>
        decodeDigest(
          encodeDigest({
            zid: "A1B2",
            storage: "d",
            digest: { ...DIGEST, hotSubs: [{ interval: 1, sub: 5, fp: { hi: 0, lo: 0 } }] },
          }),
        ),
      /sub-interval out of range/,
    );
    // A count that promises more items than bytes follow is refused before anything is allocated.
    const lying = Buffer.from(encodeSubsQuery([1]));
    lying.writeUInt16BE(60_000, 1);
    refuse(() => decodeSubsQuery(lying), /above the limit|larger than the message/);
    refuse(
      () => decodeSubsQuery(encodeSubsQuery(Array.from({ length: MAX_ITEMS_PER_QUERY + 1 }, (_, i) => i))),
      /above the limit/,
    );
    const badTs = encodeEventsReply(0, [{ key: "d/a", timestamp: new Timestamp(1n, "zz"), deleted: false }])[0]!;
    refuse(() => decodeEventsReply(badTs), /timestamp/);
    const badFlag = Buffer.from(encodeEventsReply(0, [{ key: "d/a", timestamp: TS, deleted: false }])[0]!);
    badFlag[badFlag.length - 1] = 2;
    refuse(() => decodeEventsReply(badFlag), /deleted flag/);
    const badUtf8 = Buffer.from(encodeValuesQuery(["d/ab"]));
    badUtf8[badUtf8.length - 1] = 0xff;
    refuse(() => decodeValuesQuery(badUtf8), /UTF-8/);
    refuse(() => decodeValuesReply(Buffer.alloc(MAX_RECEIVED_BYTES + 1, 5)), /too large/);
  });

  test("20,000 random and mutated messages never throw anything but a wire error", () => {
    const rand = rngUnit(26);
    const seeds = [
      encodeDigest({ zid: "A1B2", storage: "d", digest: DIGEST }),
      encodeIntervalsQuery(3),
      encodeSubsQuery([1, 2, 3]),
      encodeEventsQuery([{ interval: 1, sub: 0 }]),
      encodeValuesQuery(["d/a"]),
      encodeIntervalsReply([{ interval: 1, fp: { hi: 1, lo: 1 } }])[0]!,
      encodeSubsReply([{ interval: 1, sub: 1, fp: { hi: 1, lo: 1 } }])[0]!,
      encodeEventsReply(1, [{ key: "d/a", timestamp: TS, deleted: true }])[0]!,
      encodeValuesReply([{ key: "d/a", timestamp: TS, deleted: false, encoding: "x", payload: Buffer.from("v") }])[0]!,
    ];
    const decoders = [
      decodeDigest,
      decodeIntervalsQuery,
      decodeSubsQuery,
      decodeEventsQuery,
      decodeValuesQuery,
      decodeIntervalsReply,
      decodeSubsReply,
      decodeEventsReply,
      decodeValuesReply,
    ];
    for (let i = 0; i < 20_000; i++) {
      let msg: Buffer;
      if (i % 4 === 0) {
        msg = Buffer.alloc(Math.floor(rand() * 64));
        for (let j = 0; j < msg.length; j++) msg[j] = Math.floor(rand() * 256);
        msg[0] = 1 + Math.floor(rand() * 5);
      } else {
        msg = Buffer.from(seeds[Math.floor(rand() * seeds.length)]!);
        for (let n = 1 + Math.floor(rand() * 3); n > 0; n--)
          msg[Math.floor(rand() * msg.length)] = Math.floor(rand() * 256);
        if (rand() < 0.2) msg = msg.subarray(0, Math.floor(rand() * msg.length));
      }
      for (const decode of decoders) {
        try {
          decode(msg);
        } catch (err) {
          if (!(err instanceof ReplicationWireError)) throw new Error(`message ${msg.toString("hex")}: ${String(err)}`);
        }
      }
    }
  });
});
