/**
 * Transport messages (zenoh 1.x, docs/zenoh-protocol.md): INIT and OPEN (the handshake), CLOSE,
 * KEEP_ALIVE, FRAME and FRAGMENT. A batch is a run of transport messages; a FRAME's network
 * messages run to the next transport message or the end of the batch.
 */
import { Buffer } from "node:buffer";
import { type BinaryReader, type BinaryWriter, DecodeError } from "../../core/binary.js";
import {
  EXT_UNIT,
  EXT_ZBUF,
  EXT_ZINT,
  extHeader,
  FLAG_Z,
  MID_MASK,
  PROTOCOL_VERSION,
  qosOfByte,
  readExt,
  readZid,
  unknownExt,
  type WhatAmI,
  whatAmICode,
  whatAmIOf,
  zidBytes,
} from "./core.js";

export const MID_T_OAM = 0x00;
export const MID_T_INIT = 0x01;
export const MID_T_OPEN = 0x02;
export const MID_T_CLOSE = 0x03;
export const MID_T_KEEP_ALIVE = 0x04;
export const MID_T_FRAME = 0x05;
export const MID_T_FRAGMENT = 0x06;
export const MID_T_JOIN = 0x07;

const FLAG_ACK = 0x20; // INIT, OPEN
const FLAG_INIT_S = 0x40;
const FLAG_OPEN_T = 0x40;
const FLAG_CLOSE_S = 0x20;
const FLAG_RELIABLE = 0x20; // FRAME, FRAGMENT
const FLAG_FRAGMENT_M = 0x40;

/** CLOSE reason codes. */
export const CloseReason = {
  GENERIC: 0x00,
  UNSUPPORTED: 0x01,
  INVALID: 0x02,
  MAX_SESSIONS: 0x03,
  MAX_LINKS: 0x04,
  EXPIRED: 0x05,
} as const;

/** Extension ids of INIT and OPEN (zenoh-rust's `transport::init::ext`). */
export const InitExt = {
  QOS: 0x01 | EXT_UNIT,
  SHM: 0x02 | EXT_ZBUF,
  AUTH: 0x03 | EXT_ZBUF,
  MLINK: 0x04 | EXT_ZBUF,
  LOW_LATENCY: 0x05 | EXT_UNIT,
  COMPRESSION: 0x06 | EXT_UNIT,
  PATCH: 0x07 | EXT_ZINT,
} as const;

/** Fragment extensions (patch ≥ 1): the first fragment of a message, and "drop what you hold". */
const EXT_FRAGMENT_FIRST = 0x02 | EXT_UNIT;
const EXT_FRAGMENT_DROP = 0x03 | EXT_UNIT;
/** A FRAME's or FRAGMENT's QoS extension: the priority lane. */
const EXT_FRAME_QOS = 0x01 | EXT_ZINT | 0x10;

/** An INIT (syn from the opener, ack from the accepter). */
export interface InitMsg {
  ack: boolean;
  version: number;
  whatami: WhatAmI;
  zid: string;
  /** Sequence-number resolution: 0 = 8 bits … 3 = 64 bits (default 2, 32 bits). */
  snRes: number;
  /** Request-id resolution, same scale. */
  reqRes: number;
  batchSize: number;
  /** Only in an ack. */
  cookie?: Buffer;
  patch: number;
  /** The opener asked for QoS lanes. */
  qos: boolean;
  /** The user/password authentication extension, as it came (opaque here). */
  auth?: Buffer;
}

/** An OPEN (syn carries the cookie back). */
export interface OpenMsg {
  ack: boolean;
  leaseMs: number;
  initialSn: number;
  cookie?: Buffer;
  qos: boolean;
  auth?: Buffer;
}

/** A FRAME: its sequence number, channel and lane; its network messages follow it in the batch. */
export interface FrameHeader {
  sn: number;
  reliable: boolean;
  priority: number;
}

/** A FRAGMENT: one piece of a network message too large for a batch. */
export interface FragmentMsg {
  sn: number;
  reliable: boolean;
  more: boolean;
  priority: number;
  first: boolean;
  drop: boolean;
  payload: Buffer;
}

export type TransportMsg =
  | { kind: "init"; msg: InitMsg }
  | { kind: "open"; msg: OpenMsg }
  | { kind: "close"; reason: number; session: boolean }
  | { kind: "keepalive" }
  | { kind: "frame"; frame: FrameHeader }
  | { kind: "fragment"; fragment: FragmentMsg }
  | { kind: "oam" }
  | { kind: "join" };

/** The largest cookie accepted. */
const MAX_COOKIE = 256;

function decodeInit(r: BinaryReader, h: number): InitMsg {
  const version = r.u8();
  const c = r.u8();
  const whatami = whatAmIOf(c);
  const zid = readZid(r, (c >> 4) + 1);
  let snRes = 2;
  let reqRes = 2;
  let batchSize = 65_535;
  if ((h & FLAG_INIT_S) !== 0) {
    const res = r.u8();
    snRes = res & 0x03;
    reqRes = (res >> 2) & 0x03;
    batchSize = r.u16();
  }
  const msg: InitMsg = {
    ack: (h & FLAG_ACK) !== 0,
    version,
    whatami,
    zid,
    snRes,
    reqRes,
    batchSize,
    patch: 0,
    qos: false,
  };
  if (msg.ack) msg.cookie = r.lenBytes(MAX_COOKIE);
  if ((h & FLAG_Z) !== 0) {
    let more = true;
    while (more) {
      const ext = readExt(r);
      more = ext.more;
      const id = ext.id & ~0x10;
      if (id === InitExt.PATCH) msg.patch = ext.zint;
      else if (id === InitExt.QOS) msg.qos = true;
      else if (id === InitExt.AUTH) msg.auth = ext.zbuf;
      else unknownExt(ext);
    }
  }
  return msg;
}

function decodeOpen(r: BinaryReader, h: number): OpenMsg {
  let leaseMs = r.vle();
  if ((h & FLAG_OPEN_T) !== 0) leaseMs *= 1000;
  const initialSn = r.vle();
  const msg: OpenMsg = { ack: (h & FLAG_ACK) !== 0, leaseMs, initialSn, qos: false };
  if (!msg.ack) msg.cookie = r.lenBytes(MAX_COOKIE);
  if ((h & FLAG_Z) !== 0) {
    let more = true;
    while (more) {
      const ext = readExt(r);
      more = ext.more;
      const id = ext.id & ~0x10;
      if (id === InitExt.QOS) msg.qos = true;
      else if (id === InitExt.AUTH) msg.auth = ext.zbuf;
      else unknownExt(ext);
    }
  }
  return msg;
}

function decodeFrameExts(r: BinaryReader): { priority: number; first: boolean; drop: boolean } {
  const out = { priority: 5, first: false, drop: false };
  let more = true;
  while (more) {
    const ext = readExt(r);
    more = ext.more;
    if (ext.id === EXT_FRAME_QOS) out.priority = qosOfByte(ext.zint).priority;
    else if (ext.id === EXT_FRAGMENT_FIRST) out.first = true;
    else if (ext.id === EXT_FRAGMENT_DROP) out.drop = true;
    else unknownExt(ext);
  }
  return out;
}

/**
 * Decodes the transport message at the reader's position. For a FRAME only the header is read:
 * its network messages follow (see `isNetworkHeader`). A FRAGMENT's payload runs to the end of
 * the batch.
 */
export function decodeTransport(r: BinaryReader): TransportMsg {
  const h = r.u8();
  switch (h & MID_MASK) {
    case MID_T_FRAME: {
      const sn = r.vle(0xffff_ffff_ffff);
      const priority = (h & FLAG_Z) !== 0 ? decodeFrameExts(r).priority : 5;
      return { kind: "frame", frame: { sn, reliable: (h & FLAG_RELIABLE) !== 0, priority } };
    }
    case MID_T_FRAGMENT: {
      const sn = r.vle(0xffff_ffff_ffff);
      const exts = (h & FLAG_Z) !== 0 ? decodeFrameExts(r) : { priority: 5, first: false, drop: false };
      return {
        kind: "fragment",
        fragment: {
          sn,
          reliable: (h & FLAG_RELIABLE) !== 0,
          more: (h & FLAG_FRAGMENT_M) !== 0,
          ...exts,
          payload: r.bytes(r.remaining),
        },
      };
    }
    case MID_T_KEEP_ALIVE:
      if ((h & FLAG_Z) !== 0) skipAll(r);
      return { kind: "keepalive" };
    case MID_T_INIT:
      return { kind: "init", msg: decodeInit(r, h) };
    case MID_T_OPEN:
      return { kind: "open", msg: decodeOpen(r, h) };
    case MID_T_CLOSE: {
      const reason = r.u8();
      if ((h & FLAG_Z) !== 0) skipAll(r);
      return { kind: "close", reason, session: (h & FLAG_CLOSE_S) !== 0 };
    }
    case MID_T_OAM:
      // A transport OAM: id, extensions, then a body by its encoding; nothing zest acts on.
      r.vle();
      if ((h & FLAG_Z) !== 0) skipAll(r);
      if ((h & 0x60) === EXT_ZINT) r.vle64();
      else if ((h & 0x60) === EXT_ZBUF) r.lenBytes();
      return { kind: "oam" };
    case MID_T_JOIN:
      throw new DecodeError("JOIN is a multicast message, not expected on a unicast link");
    default:
      throw new DecodeError(`unknown transport message id 0x${(h & MID_MASK).toString(16)}`);
  }
}

function skipAll(r: BinaryReader): void {
  let more = true;
  while (more) {
    const ext = readExt(r);
    more = ext.more;
    unknownExt(ext);
  }
}

/** True when `h` is the header of a network message (a FRAME's content), not a transport message. */
export function isNetworkHeader(h: number): boolean {
  return (h & MID_MASK) >= 0x19;
}

/** Writes an INIT ack. */
export function encodeInitAck(
  w: BinaryWriter,
  m: {
    whatami: WhatAmI;
    zid: string;
    snRes: number;
    reqRes: number;
    batchSize: number;
    cookie: Buffer;
    patch: number;
    qos: boolean;
    /** The auth extension's body (user/password's nonce), when the router asks for credentials. */
    auth?: Buffer | undefined;
  },
): void {
  const exts: Ext[] = [];
  if (m.qos) exts.push([InitExt.QOS, undefined]);
  if (m.auth) exts.push([InitExt.AUTH, m.auth]);
  if (m.patch > 0) exts.push([InitExt.PATCH, m.patch]);
  w.u8(MID_T_INIT | FLAG_ACK | FLAG_INIT_S | (exts.length > 0 ? FLAG_Z : 0));
  w.u8(PROTOCOL_VERSION);
  const id = zidBytes(m.zid);
  w.u8(((id.length - 1) << 4) | whatAmICode(m.whatami)).bytes(id);
  w.u8((m.snRes & 0x03) | ((m.reqRes & 0x03) << 2)).u16(m.batchSize);
  w.lenBytes(m.cookie);
  writeExts(w, exts);
}

/** Writes an INIT syn (tests and the bench client open sessions with it). */
export function encodeInitSyn(
  w: BinaryWriter,
  m: {
    whatami: WhatAmI;
    zid: string;
    snRes?: number;
    reqRes?: number;
    batchSize?: number;
    patch?: number;
    qos?: boolean;
    auth?: Buffer | undefined;
  },
): void {
  const exts: Ext[] = [];
  if (m.qos) exts.push([InitExt.QOS, undefined]);
  if (m.auth) exts.push([InitExt.AUTH, m.auth]);
  if (m.patch) exts.push([InitExt.PATCH, m.patch]);
  w.u8(MID_T_INIT | FLAG_INIT_S | (exts.length > 0 ? FLAG_Z : 0));
  w.u8(PROTOCOL_VERSION);
  const id = zidBytes(m.zid);
  w.u8(((id.length - 1) << 4) | whatAmICode(m.whatami)).bytes(id);
  w.u8(((m.snRes ?? 2) & 0x03) | (((m.reqRes ?? 2) & 0x03) << 2)).u16(m.batchSize ?? 65_535);
  writeExts(w, exts);
}

/** An extension to write: its id and its value (a zint's number, a zbuf's bytes, nothing for a unit). */
type Ext = [number, number | Buffer | undefined];

function writeExts(w: BinaryWriter, exts: Ext[]): void {
  exts.forEach(([id, v], i) => {
    extHeader(w, id, i < exts.length - 1);
    if ((id & 0x60) === EXT_ZINT) w.vle(typeof v === "number" ? v : 0);
    else if ((id & 0x60) === EXT_ZBUF) w.lenBytes(v instanceof Buffer ? v : Buffer.alloc(0));
  });
}

/** Writes an OPEN (syn with the cookie, or ack). The lease goes in seconds when it is whole seconds. */
export function encodeOpen(
  w: BinaryWriter,
  m: { ack: boolean; leaseMs: number; initialSn: number; cookie?: Buffer; qos?: boolean; auth?: Buffer | undefined },
): void {
  const exts: Ext[] = [];
  if (m.qos) exts.push([InitExt.QOS, undefined]);
  if (m.auth) exts.push([InitExt.AUTH, m.auth]);
  const seconds = m.leaseMs % 1000 === 0;
  w.u8(MID_T_OPEN | (m.ack ? FLAG_ACK : 0) | (seconds ? FLAG_OPEN_T : 0) | (exts.length > 0 ? FLAG_Z : 0));
  w.vle(seconds ? m.leaseMs / 1000 : m.leaseMs);
  w.vle(m.initialSn);
  if (!m.ack) w.lenBytes(m.cookie ?? Buffer.alloc(0));
  writeExts(w, exts);
}

/** Writes a CLOSE; `session` closes the whole session, not only this link. */
export function encodeClose(w: BinaryWriter, reason: number, session = true): void {
  w.u8(MID_T_CLOSE | (session ? FLAG_CLOSE_S : 0)).u8(reason);
}

export function encodeKeepAlive(w: BinaryWriter): void {
  w.u8(MID_T_KEEP_ALIVE);
}

/** Writes a FRAME header; network messages follow it. A priority other than 5 rides in a QoS extension. */
export function encodeFrameHeader(w: BinaryWriter, sn: number, reliable: boolean, priority = 5, qos = false): void {
  const withQos = qos && priority !== 5;
  w.u8(MID_T_FRAME | (reliable ? FLAG_RELIABLE : 0) | (withQos ? FLAG_Z : 0)).vle(sn);
  if (withQos) {
    extHeader(w, EXT_FRAME_QOS, false);
    w.vle(priority);
  }
}

/**
 * Writes a FRAGMENT with its payload. `first` is sent only under patch ≥ 1; a priority other
 * than 5 rides in a QoS extension when `qos` was agreed, as in a FRAME.
 */
export function encodeFragment(
  w: BinaryWriter,
  m: {
    sn: number;
    reliable: boolean;
    more: boolean;
    first: boolean;
    payload: Uint8Array;
    priority?: number;
    qos?: boolean;
  },
): void {
  const withQos = m.qos === true && m.priority !== undefined && m.priority !== 5;
  w.u8(
    MID_T_FRAGMENT |
      (m.reliable ? FLAG_RELIABLE : 0) |
      (m.more ? FLAG_FRAGMENT_M : 0) |
      (m.first || withQos ? FLAG_Z : 0),
  );
  w.vle(m.sn);
  if (withQos) {
    extHeader(w, EXT_FRAME_QOS, m.first);
    w.vle(m.priority as number);
  }
  if (m.first) extHeader(w, EXT_FRAGMENT_FIRST, false);
  w.bytes(m.payload);
}
