import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { describe, test } from "node:test";
import { DecodeError } from "../../../src/core/binary.js";
import { idToZenohId } from "../../../src/core/timestamp.js";
import {
  decodeScoutingMessage,
  encodeHello,
  encodeScout,
  MAX_HELLO_LOCATORS,
  MAX_SCOUTING_DATAGRAM,
  wireZid,
} from "../../../src/zenoh/scouting/messages.js";

const hex = (s: string): Buffer => Buffer.from(s.replace(/\s+/g, ""), "hex");

describe("scouting messages", () => {
  test("pico's SCOUT (01 09 03) asks for routers and peers, without a zid", () => {
    const m = decodeScoutingMessage(hex("01 09 03"));
    assert.equal(m.kind, "scout");
    assert.equal(m.version, 0x09);
    assert.deepEqual(m.kind === "scout" ? [...m.what].sort() : [], ["peer", "router"]);
    assert.equal(m.kind === "scout" ? m.zid : "x", undefined);
  });

  test("a SCOUT with a zid: flag I, the zid's length - 1 in the high nibble", () => {
    const b = encodeScout(["client"], Uint8Array.from([0xaa, 0xbb, 0xcc]));
    assert.deepEqual(b, hex("01 09 2c aabbcc"));
    const m = decodeScoutingMessage(b);
    assert.ok(m.kind === "scout");
    assert.deepEqual([...m.what], ["client"]);
    assert.deepEqual(m.zid, hex("aabbcc"));
  });

  test("a HELLO's bytes: L flag, whatami router, the zid without its zero high bytes, counted locators", () => {
    const b = encodeHello("router", idToZenohId("AB12"), ["tcp/127.0.0.1:7447"]);
    const loc = Buffer.from("tcp/127.0.0.1:7447");
    assert.deepEqual(b, Buffer.concat([hex("22 09 10 12ab 01"), Buffer.from([loc.length]), loc]));
    assert.deepEqual(decodeScoutingMessage(b), {
      kind: "hello",
      version: 9,
      whatami: "router",
      zid: hex("12ab"),
      locators: ["tcp/127.0.0.1:7447"],
    });
  });

  test("a HELLO without locators has no L flag; peer and client whatami round-trip", () => {
    const zid = new Uint8Array(16).fill(7);
    for (const whatami of ["peer", "client"] as const) {
      const b = encodeHello(whatami, zid, []);
      assert.equal(b[0], 0x02);
      assert.equal(b[2]! >> 4, 15);
      const m = decodeScoutingMessage(b);
      assert.ok(m.kind === "hello");
      assert.equal(m.whatami, whatami);
      assert.deepEqual(m.locators, []);
      assert.deepEqual([...m.zid], [...zid]);
    }
  });

  test("wireZid keeps one byte of an all-zero id and refuses more than 16", () => {
    assert.deepEqual([...wireZid(new Uint8Array(16))], [0]);
    assert.throws(() => wireZid(new Uint8Array(17)), RangeError);
  });

  test("extensions are skipped: unit, integer and bytes, chained", () => {
    // Z flag on the header; ext 1 unit (more), ext 2 z64 = 300 (more), ext 3 zbuf of 2 bytes.
    const m = decodeScoutingMessage(hex("81 09 01  81  a2 ac02  43 02 ffff"));
    assert.ok(m.kind === "scout");
    assert.deepEqual([...m.what], ["router"]);
  });

  const malformed: Array<[string, string, RegExp]> = [
    ["an empty datagram", "", /./],
    ["a truncated SCOUT", "01 09", /./],
    ["a SCOUT whose zid is cut short", "01 09 2b aabb", /./],
    ["a HELLO with the reserved whatami", "02 09 03 01", /reserved whatami/],
    ["a HELLO whose locator is cut short", "22 09 00 01 01 10 7463", /./],
    ["another message id", "05 09 00", /not a scouting message/],
    ["bytes after the message", "01 09 03 00", /1 bytes after a SCOUT/],
    ["an extension with the reserved encoding", "81 09 01 60", /reserved encoding/],
    ["an extension chain that never ends", `81 09 01 ${"80".repeat(40)}`, /more than 16 extensions/],
  ];
  for (const [what, bytes, pattern] of malformed) {
    test(`${what} is refused with a DecodeError`, () => {
      assert.throws(
        () => decodeScoutingMessage(hex(bytes)),
        (e: unknown) => e instanceof DecodeError && pattern.test(e.message),
      );
    });
  }

  test("oversized input is refused: the datagram, the locator count, a locator's length", () => {
    assert.throws(() => decodeScoutingMessage(Buffer.alloc(MAX_SCOUTING_DATAGRAM + 1, 1)), /limit 8192/);
    assert.throws(
      () => decodeScoutingMessage(hex(`22 09 00 01 ${(MAX_HELLO_LOCATORS + 1).toString(16)}`)),
      DecodeError,
    );
    assert.throws(() => decodeScoutingMessage(hex("22 09 00 01 01 8102")), /above its limit 256/);
    assert.throws(() => encodeHello("router", new Uint8Array([1]), Array(MAX_HELLO_LOCATORS + 1).fill("tcp/a:1")));
    assert.throws(() => encodeHello("router", new Uint8Array([1]), [`tcp/${"a".repeat(300)}:1`]));
  });

  test("fuzz: random and mutated datagrams decode or throw a DecodeError, nothing else", () => {
    let seed = 0x2545f491;
    const rnd = (): number => {
      seed ^= seed << 13;
      seed ^= seed >>> 17;
      seed ^= seed << 5;
      return (seed >>> 0) / 0x1_0000_0000;
    };
    const seeds = [
      hex("01 09 03"),
      encodeScout(["router"], new Uint8Array([1, 2])),
      encodeHello("router", new Uint8Array(16).fill(3), ["tcp/127.0.0.1:7447", "udp/[::1]:7447"]),
    ];
    let decoded = 0;
    for (let i = 0; i < 20_000; i++) {
      let b: Buffer;
      if (i % 2 === 0) {
        b = Buffer.from(seeds[i % seeds.length]!);
        const flips = 1 + Math.floor(rnd() * 3);
        for (let f = 0; f < flips; f++) b[Math.floor(rnd() * b.length)] = Math.floor(rnd() * 256);
        if (rnd() < 0.3) b = b.subarray(0, Math.floor(rnd() * b.length));
      } else {
        b = Buffer.alloc(Math.floor(rnd() * 40));
        for (let j = 0; j < b.length; j++) b[j] = Math.floor(rnd() * 256);
      }
      try {
        decodeScoutingMessage(b);
        decoded++;
      } catch (e) {
        assert.ok(e instanceof DecodeError, `${b.toString("hex")}: ${String(e)}`);
      }
    }
    assert.ok(decoded > 0);
  });
});
