/**
 * The remote API's decode step (src/remote/messages.ts): one frame into one typed message, and
 * every malformed frame a `ProtocolError` with the close code the connection is closed with.
 * Frames are built field by field in the layout zenoh-ts writes (docs/remote-api.md).
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { decodeFrame } from "../../src/remote/messages.js";
import { In, SEQ_FLAG } from "../../src/remote/protocol.js";
import { CloseCode, ProtocolError, Reader, Writer } from "../../src/remote/wire.js";

/** QoS byte: priority 5 (data), drop, not express, locality any. */
const QOS = 0xa5;

const decode = (w: Writer) => decodeFrame(new Reader(Buffer.from(w.finish())));

/** Asserts decoding `w` throws a `ProtocolError` with `code` and a message matching `re`. */
function refused(w: Writer, code: number, re: RegExp): void {
  assert.throws(
    () => decode(w),
    (e: unknown) => e instanceof ProtocolError && e.code === code && re.test(e.message),
  );
}

describe("remote API frames, decoded", () => {
  test("a put with attachment and timestamp: every field in its place", () => {
    const zid = Buffer.alloc(16);
    zid[0] = 0xab;
    const w = new Writer()
      .u8(In.Put)
      .string("demo/a")
      .bytes(Buffer.from("hello"))
      .u16(0)
      .string("")
      .bool(true)
      .bytes(Buffer.from("att"))
      .bool(true)
      .u64(42n)
      .bytes(zid)
      .u8(QOS);
    const { message, seq } = decode(w);
    assert.equal(seq, undefined);
    assert.equal(message.name, "Put");
    if (message.name !== "Put") return;
    assert.equal(message.key, "demo/a");
    assert.equal(message.payload.toString(), "hello");
    assert.equal(message.attachment?.toString(), "att");
    assert.equal(message.timestamp?.time, 42n);
    assert.deepEqual(message.qos, { priority: 5, congestionControl: "drop", express: false, locality: "any" });
  });

  test("a request's sequence number is read when the header's top bit says so", () => {
    const { message, seq } = decode(new Writer().u8(In.GetSessionInfo | SEQ_FLAG).u32(0x01020304));
    assert.deepEqual(message, { name: "GetSessionInfo" });
    assert.equal(seq, 0x01020304);
  });

  test("a get: key, parameters, absent payload and attachment, qos, settings and timeout", () => {
    const w = new Writer()
      .u8(In.Get)
      .u32(7)
      .string("demo/**")
      .string("a=1")
      .bool(false)
      .bool(false)
      .bool(false)
      .u8(QOS)
      .u8(0b00001)
      .u32(2_500);
    const { message } = decode(w);
    assert.deepEqual(message, {
      name: "Get",
      getId: 7,
      key: "demo/**",
      parameters: "a=1",
      payload: undefined,
      encoding: undefined,
      attachment: undefined,
      qos: { priority: 5, congestionControl: "drop", express: false, locality: "any" },
      settings: { target: "all", consolidation: "auto", matchingReplies: false },
      timeoutMs: 2_500,
    });
  });

  test("declarations carry their id, key and options", () => {
    assert.deepEqual(decode(new Writer().u8(In.DeclareSubscriber).u32(3).string("k/*").u8(1)).message, {
      name: "DeclareSubscriber",
      id: 3,
      key: "k/*",
      origin: "remote",
    });
    assert.deepEqual(decode(new Writer().u8(In.DeclareQueryable).u32(4).string("q").bool(true).u8(2)).message, {
      name: "DeclareQueryable",
      id: 4,
      key: "q",
      complete: true,
      origin: "any",
    });
    assert.deepEqual(decode(new Writer().u8(In.UndeclareSubscriber).u32(3)).message, {
      name: "UndeclareSubscriber",
      id: 3,
    });
  });

  test("an unknown message id closes with PROTOCOL_ERROR", () => {
    refused(new Writer().u8(Object.keys(In).length), CloseCode.PROTOCOL_ERROR, /unknown message id 37/);
    refused(new Writer().u8(0x7f | SEQ_FLAG).u32(1), CloseCode.PROTOCOL_ERROR, /unknown message id 127/);
  });

  test("a truncated frame, trailing bytes, and invalid field values close with INVALID_PAYLOAD", () => {
    refused(new Writer().u8(In.UndeclarePublisher).u16(1), CloseCode.INVALID_PAYLOAD, /truncated frame/);
    refused(new Writer().u8(In.Ping).u8(0), CloseCode.INVALID_PAYLOAD, /1 unexpected trailing byte/);
    refused(new Writer().u8(In.DeclareSubscriber).u32(1).string("k").u8(3), CloseCode.INVALID_PAYLOAD, /locality 3/);
    // Priority 0 does not exist.
    refused(
      new Writer().u8(In.Delete).string("k").bool(false).bool(false).u8(0xa0),
      CloseCode.INVALID_PAYLOAD,
      /priority 0/,
    );
    // A timestamp's ZenohId has 16 bytes.
    refused(
      new Writer().u8(In.Delete).string("k").bool(false).bool(true).u64(1n).bytes(Buffer.alloc(3)).u8(QOS),
      CloseCode.INVALID_PAYLOAD,
      /3 bytes, not 16/,
    );
    // An option flag other than 0 or 1.
    refused(new Writer().u8(In.Delete).string("k").u8(2), CloseCode.INVALID_PAYLOAD, /invalid bool 2/);
  });
});
