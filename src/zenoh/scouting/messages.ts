/**
 * zenoh's scouting messages, SCOUT and HELLO (protocol version 0x09), as they travel in one UDP
 * datagram each (docs/zenoh-protocol.md, "Scouting"):
 *
 * ```text
 * SCOUT  |Z|X|X| 0x01 | version | zid_len|I|what | [zid if I] | [extensions if Z]
 * HELLO  |Z|X|L| 0x02 | version | zid_len|X|X|wai | zid | [locators if L] | [extensions if Z]
 * ```
 *
 * `what` is a bit set of the kinds of node wanted (router 1, peer 2, client 4); `wai` the one
 * kind that answers (router 0, peer 1, client 2). A zid takes `zid_len + 1` bytes, the
 * little-endian bytes of a 128-bit number without its zero high bytes. Locators are a count
 * then each a length-prefixed UTF-8 string. Extensions are skipped, as zenoh does on scouting.
 */
import { Buffer } from "node:buffer";
import { BinaryReader, BinaryWriter, DecodeError } from "../../core/binary.js";

/** The protocol version this router speaks (zenoh 1.x). */
export const ZENOH_PROTOCOL_VERSION = 0x09;

/** Message ids of the scouting layer. */
const SCOUT = 0x01;
const HELLO = 0x02;
const MID_MASK = 0x1f;
const FLAG_L = 0x20; // HELLO: locators present
const FLAG_Z = 0x80; // extensions follow
const FLAG_I = 0x08; // SCOUT: zid present (in the flags byte)

/** Largest datagram read or written (zenoh's scouting receive buffer). */
export const MAX_SCOUTING_DATAGRAM = 8192;
/** Most locators a HELLO may list. */
export const MAX_HELLO_LOCATORS = 64;
/** Longest locator, in UTF-8 bytes. */
export const MAX_LOCATOR_BYTES = 256;
/** Most extensions one message may carry. */
const MAX_EXTENSIONS = 16;

/** A kind of zenoh node. */
export type WhatAmI = "router" | "peer" | "client";

const WHATAMI_BIT: Record<WhatAmI, number> = { router: 0b001, peer: 0b010, client: 0b100 };
const WAI_CODE: Record<WhatAmI, number> = { router: 0b00, peer: 0b01, client: 0b10 };
const WAI_BY_CODE: readonly WhatAmI[] = ["router", "peer", "client"];

/** SCOUT: who is out there? */
export interface Scout {
  readonly kind: "scout";
  readonly version: number;
  /** The kinds of node the scout wants answers from. */
  readonly what: ReadonlySet<WhatAmI>;
  /** The scout's own zid, when it gives one. */
  readonly zid?: Buffer;
}

/** HELLO: this node, its kind and where it listens. */
export interface Hello {
  readonly kind: "hello";
  readonly version: number;
  readonly whatami: WhatAmI;
  /** The zid as on the wire: 1 to 16 little-endian bytes. */
  readonly zid: Uint8Array;
  /** Endpoints to connect to, e.g. `tcp/127.0.0.1:7447`; empty: the datagram's source address. */
  readonly locators: readonly string[];
}

/** A decoded scouting message. */
export type ScoutingMessage = Scout | Hello;

/** True when a SCOUT asking for `what` wants an answer from a node of kind `whatami`. */
export function scoutWants(scout: Scout, whatami: WhatAmI): boolean {
  return scout.what.has(whatami);
}

/**
 * A zid's wire bytes: the 16-byte ZenohId (little-endian) without its zero high bytes, as zenoh
 * sizes a zid (at least one byte).
 */
export function wireZid(zid: Uint8Array): Uint8Array {
  if (zid.length === 0 || zid.length > 16) throw new RangeError(`a zid has 1 to 16 bytes, not ${zid.length}`);
  let n = zid.length;
  while (n > 1 && zid[n - 1] === 0) n--;
  return zid.subarray(0, n);
}

/** Encodes a SCOUT (what a client sends to find routers). */
export function encodeScout(what: Iterable<WhatAmI>, zid?: Uint8Array): Buffer {
  let bits = 0;
  for (const w of what) bits |= WHATAMI_BIT[w];
  const w = new BinaryWriter(32).u8(SCOUT).u8(ZENOH_PROTOCOL_VERSION);
  if (zid === undefined) return w.u8(bits).finish();
  const id = wireZid(zid);
  return w
    .u8(((id.length - 1) << 4) | FLAG_I | bits)
    .bytes(id)
    .finish();
}

/** Encodes a HELLO; throws a RangeError past the locator limits (the caller's bug, not input). */
export function encodeHello(whatami: WhatAmI, zid: Uint8Array, locators: readonly string[]): Buffer {
  if (locators.length > MAX_HELLO_LOCATORS)
    throw new RangeError(`a HELLO lists at most ${MAX_HELLO_LOCATORS} locators, not ${locators.length}`);
  const id = wireZid(zid);
  const w = new BinaryWriter(64)
    .u8(HELLO | (locators.length > 0 ? FLAG_L : 0))
    .u8(ZENOH_PROTOCOL_VERSION)
    .u8(((id.length - 1) << 4) | WAI_CODE[whatami])
    .bytes(id);
  if (locators.length > 0) {
    w.vle(locators.length);
    for (const l of locators) {
      if (Buffer.byteLength(l) > MAX_LOCATOR_BYTES)
        throw new RangeError(`locator longer than ${MAX_LOCATOR_BYTES} bytes`);
      w.lenString(l);
    }
  }
  const out = w.finish();
  if (out.length > MAX_SCOUTING_DATAGRAM) throw new RangeError(`HELLO of ${out.length} bytes`);
  return out;
}

/**
 * Decodes one scouting datagram. Throws a `DecodeError` for anything malformed, truncated or
 * past a limit: the responder drops such a datagram with a log line.
 */
export function decodeScoutingMessage(datagram: Uint8Array): ScoutingMessage {
  if (datagram.length > MAX_SCOUTING_DATAGRAM)
    throw new DecodeError(`scouting datagram of ${datagram.length} bytes (limit ${MAX_SCOUTING_DATAGRAM})`);
  const r = new BinaryReader(datagram);
  const header = r.u8();
  const version = r.u8();
  const flags = r.u8();
  let msg: ScoutingMessage;
  switch (header & MID_MASK) {
    case SCOUT: {
      const what = new Set<WhatAmI>();
      for (const k of WAI_BY_CODE) if (flags & WHATAMI_BIT[k]) what.add(k);
      const zid = flags & FLAG_I ? r.bytes((flags >> 4) + 1) : undefined;
      msg = zid === undefined ? { kind: "scout", version, what } : { kind: "scout", version, what, zid };
      break;
    }
    case HELLO: {
      const whatami = WAI_BY_CODE[flags & 0b11];
      if (whatami === undefined) throw new DecodeError("HELLO with a reserved whatami");
      const zid = r.bytes((flags >> 4) + 1);
      const locators: string[] = [];
      if (header & FLAG_L) {
        const n = r.vle(MAX_HELLO_LOCATORS);
        for (let i = 0; i < n; i++) locators.push(r.lenString(MAX_LOCATOR_BYTES));
      }
      msg = { kind: "hello", version, whatami, zid, locators };
      break;
    }
    default:
      throw new DecodeError(`not a scouting message (id 0x${(header & MID_MASK).toString(16)})`);
  }
  if (header & FLAG_Z) skipExtensions(r);
  if (!r.done) throw new DecodeError(`${r.remaining} bytes after a ${msg.kind.toUpperCase()}`);
  return msg;
}

/**
 * Skips a chain of extensions: each a header byte (bit 7: another follows; bits 5-6 its
 * encoding: unit, a variable-length integer, or length-prefixed bytes), then its body.
 */
function skipExtensions(r: BinaryReader): void {
  for (let i = 0; ; i++) {
    if (i === MAX_EXTENSIONS) throw new DecodeError(`more than ${MAX_EXTENSIONS} extensions`);
    const h = r.u8();
    switch ((h >> 5) & 0b11) {
      case 0:
        break;
      case 1:
        r.vle64();
        break;
      case 2:
        r.skip(r.vle(MAX_SCOUTING_DATAGRAM));
        break;
      default:
        throw new DecodeError("extension with a reserved encoding");
    }
    if ((h & 0x80) === 0) return;
  }
}
