/**
 * Fuzz of every zenoh decoder (src/zenoh/codec/): random and mutated inputs, with a fixed seed
 * and a bounded count, must give a value or a `DecodeError`, never another exception.
 */
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { test } from "node:test";
import { BinaryReader, BinaryWriter, DecodeError } from "../../src/core/binary.js";
import { Timestamp } from "../../src/core/timestamp.js";
import { decodeDeclaration } from "../../src/zenoh/codec/declarations.js";
import {
  decodeNetwork,
  encodeDeclare,
  encodeInterest,
  encodePush,
  encodeRequest,
  encodeResponseErr,
  encodeResponseReply,
} from "../../src/zenoh/codec/network.js";
import {
  decodeTransport,
  encodeFrameHeader,
  encodeInitAck,
  encodeInitSyn,
  encodeOpen,
} from "../../src/zenoh/codec/transport.js";
import { rng } from "../support/rng.js";

function seeds(): Buffer[] {
  const out: Buffer[] = [];
  const add = (f: (w: BinaryWriter) => void) => {
    const w = new BinaryWriter();
    f(w);
    out.push(w.finish());
  };
  const key = { scope: 0, suffix: "demo/example/**", senderMapping: false };
  add((w) => encodeInitSyn(w, { whatami: "client", zid: "0123456789ABCDEF", patch: 1, qos: true }));
  add((w) =>
    encodeInitAck(w, {
      whatami: "router",
      zid: "AB",
      snRes: 2,
      reqRes: 2,
      batchSize: 1000,
      cookie: Buffer.alloc(40, 1),
      patch: 1,
      qos: true,
    }),
  );
  add((w) => encodeOpen(w, { ack: false, leaseMs: 10_000, initialSn: 5, cookie: Buffer.alloc(40, 2) }));
  add((w) => encodeFrameHeader(w, 9, true, 2, true));
  add((w) =>
    encodePush(w, key, {
      kind: "put",
      timestamp: new Timestamp(123456789n << 20n, "AB12"),
      encoding: "text/plain;x",
      hasEncoding: true,
      sourceInfo: { zid: "01", eid: 1, sn: 2 },
      attachment: Buffer.from("att"),
      payload: Buffer.from("payload"),
    }),
  );
  add((w) =>
    encodeRequest(w, {
      id: 3,
      key,
      target: "all_complete",
      timeoutMs: 100,
      budget: 2,
      query: {
        consolidation: "latest",
        parameters: "x=1",
        body: { encoding: "zenoh/bytes", payload: Buffer.from("b") },
        attachment: Buffer.from("a"),
      },
    }),
  );
  add((w) =>
    encodeResponseReply(w, 3, key, { kind: "delete", encoding: "", hasEncoding: false, payload: Buffer.alloc(0) }),
  );
  add((w) => encodeResponseErr(w, 3, key, { encoding: "text/plain", payload: Buffer.from("e") }));
  add((w) => encodeDeclare(w, { kind: "queryable", id: 1, key, complete: true, distance: 1 }, 4));
  add((w) => encodeDeclare(w, { kind: "untoken", id: 1, key }));
  add((w) => encodeInterest(w, { id: 1, current: true, future: true, options: 0x8f, key }));
  return out;
}

const DECODERS: Array<[string, (r: BinaryReader) => unknown]> = [
  ["transport", decodeTransport],
  ["network", decodeNetwork],
  ["declaration", decodeDeclaration],
];

function check(name: string, decode: (r: BinaryReader) => unknown, input: Buffer): void {
  try {
    const r = new BinaryReader(input);
    while (!r.done) decode(r);
  } catch (err) {
    if (!(err instanceof DecodeError)) {
      assert.fail(`${name} threw ${String(err)} on ${input.toString("hex")}`);
    }
  }
}

test("every decoder gives a value or a DecodeError on random input", () => {
  const next = rng(0x5eed);
  for (let i = 0; i < 3000; i++) {
    const len = next() % 64;
    const input = Buffer.alloc(len);
    for (let j = 0; j < len; j++) input[j] = next() & 0xff;
    for (const [name, decode] of DECODERS) check(name, decode, input);
  }
});

test("every decoder gives a value or a DecodeError on mutated valid messages", () => {
  const next = rng(0xbeef);
  const base = seeds();
  let decoded = 0;
  for (const msg of base) {
    for (let i = 0; i < 600; i++) {
      const input = Buffer.from(msg);
      const flips = 1 + (next() % 4);
      for (let f = 0; f < flips; f++) {
        const at = next() % input.length;
        const op = next() % 3;
        if (op === 0) input[at] = next() & 0xff;
        else if (op === 1) input[at] = (input[at] as number) ^ (1 << (next() % 8));
        else input[at] = 0xff;
      }
      const cut = next() % 4 === 0 ? input.subarray(0, next() % input.length) : input;
      for (const [name, decode] of DECODERS) check(name, decode, cut);
      decoded++;
    }
  }
  assert.ok(decoded >= base.length * 600);
});
