/**
 * Network messages (docs/zenoh-protocol.md): PUSH, REQUEST, RESPONSE, RESPONSE_FINAL, DECLARE,
 * INTEREST and OAM, each with its extensions, wrapping the zenoh messages of `zenoh.ts` and the
 * declarations of `declarations.ts`.
 */
import type { Buffer } from "node:buffer";
import {
  type BinaryReader,
  BinaryReader as Reader,
  type BinaryWriter,
  BinaryWriter as Writer,
  DecodeError,
} from "../../core/binary.js";
import type { Sample, WireExtensions } from "../../core/sample.js";
import type { Timestamp } from "../../core/timestamp.js";
import {
  cachedZid,
  DEFAULT_QOS_BYTE,
  EXT_MANDATORY,
  EXT_ZBUF,
  EXT_ZINT,
  encodingBytesOf,
  extHeader,
  FLAG_Z,
  MAX_CARRIED_EXTS,
  MAX_SUFFIX_BYTES,
  MID_MASK,
  putNtp64,
  qosByte,
  rawExt,
  readExt,
  readTimestamp,
  readWireExpr,
  readZid,
  unknownExt,
  type WireExpr,
  writeCarriedExts,
  writeWireExpr,
} from "./core.js";
import { type Declaration, decodeDeclaration, encodeDeclaration } from "./declarations.js";
import { withRouteRecord } from "./timestamp-stack.js";
import { LONGEST_CACHED_KEY, namedWireKey, type WireKey } from "./wire-key.js";
import {
  decodeErr,
  decodePushBody,
  decodePushBodyInto,
  decodeQuery,
  decodeReply,
  type ErrBody,
  encodeErr,
  encodePushBody,
  encodeQuery,
  emptyPushBody,
  encodeReply,
  MID_Z_DEL,
  MID_Z_ERR,
  MID_Z_PUT,
  MID_Z_QUERY,
  MID_Z_REPLY,
  type PushBody,
  type PushBodyOut,
  type QueryBody,
  type WireConsolidation,
} from "./zenoh.js";

export const MID_N_OAM = 0x1f;
export const MID_N_DECLARE = 0x1e;
export const MID_N_PUSH = 0x1d;
export const MID_N_REQUEST = 0x1c;
export const MID_N_RESPONSE = 0x1b;
export const MID_N_RESPONSE_FINAL = 0x1a;
export const MID_N_INTEREST = 0x19;

const FLAG_N = 0x20;
/** PUT and DEL header flags: a timestamp follows; (PUT) an encoding follows. */
const FLAG_PUT_T = 0x20;
const FLAG_PUT_E = 0x40;
const FLAG_M = 0x40;
const FLAG_DECLARE_I = 0x20;
const FLAG_INTEREST_C = 0x20;
const FLAG_INTEREST_F = 0x40;

const EXT_QOS = 0x01 | EXT_ZINT;
const EXT_TIMESTAMP = 0x02 | EXT_ZBUF;
const EXT_TARGET = 0x04 | EXT_ZINT | EXT_MANDATORY;
const EXT_BUDGET = 0x05 | EXT_ZINT;
const EXT_TIMEOUT = 0x06 | EXT_ZINT;
const EXT_RESPONDER = 0x03 | EXT_ZBUF;
/** PUSH, REQUEST: the node id, meaningful between zenoh routers only (read and dropped). */
const EXT_NODEID = 0x03 | EXT_ZINT | EXT_MANDATORY;
/** PUSH, REQUEST, RESPONSE: zenoh's timestamp stack (zenoh 1.10), forwarded unchanged. */
const EXT_TS_STACK = 0x07 | EXT_ZBUF;

/**
 * Keeps a network extension the router forwards unchanged, as zenoh's does: the timestamp (0x2),
 * the timestamp stack (0x7) and a RESPONSE's responder id (0x3) (docs/zenoh-protocol.md,
 * "Extensions carried").
 */
function carry(r: BinaryReader, start: number, into: Buffer[] | undefined): Buffer[] {
  const list = into ?? [];
  if (list.length < MAX_CARRIED_EXTS) list.push(rawExt(r, start));
  return list;
}

/** Writes the QoS extension (unless default) and the carried extensions of a network message. */
function writeNetworkExts(w: BinaryWriter, qos: number, exts: readonly Buffer[] | undefined, more = false): void {
  const withExts = exts !== undefined && exts.length > 0;
  if (qos !== DEFAULT_QOS_BYTE) {
    extHeader(w, EXT_QOS, withExts || more);
    w.vle(qos);
  }
  if (withExts) writeCarriedExts(w, exts, more);
}

/** True when a network message has extensions to write. */
function hasNetworkExts(qos: number, exts: readonly Buffer[] | undefined): boolean {
  return qos !== DEFAULT_QOS_BYTE || (exts !== undefined && exts.length > 0);
}

/** INTEREST option bits (the byte after the id, when the interest is not final). */
export const InterestOption = {
  KEYEXPRS: 0x01,
  SUBSCRIBERS: 0x02,
  QUERYABLES: 0x04,
  TOKENS: 0x08,
  RESTRICTED: 0x10,
  AGGREGATE: 0x80,
} as const;

/** Query targets on the wire: 0 best matching, 1 all, 2 all complete. */
export type WireTarget = "best_matching" | "all" | "all_complete";
const TARGETS: readonly WireTarget[] = ["best_matching", "all", "all_complete"];

export interface PushMsg {
  kind: "push";
  key: WireExpr;
  qos: number;
  /** Network extensions forwarded unchanged (timestamp, timestamp stack), each whole. */
  exts: Buffer[] | undefined;
  body: PushBody;
}

export interface RequestMsg {
  kind: "request";
  id: number;
  key: WireExpr;
  qos: number;
  timestamp?: Timestamp;
  target: WireTarget;
  /** 0: no budget. */
  budget: number;
  /** 0: the receiver's default. */
  timeoutMs: number;
  /** Network extensions forwarded unchanged (timestamp, timestamp stack), each whole. */
  exts?: Buffer[];
  body: { kind: "query"; query: QueryBody } | { kind: "push"; push: PushBody };
}

export interface ResponseMsg {
  kind: "response";
  id: number;
  key: WireExpr;
  qos: number;
  timestamp?: Timestamp;
  /** The responder's zid and entity id, when given. */
  responder?: { zid: string; eid: number };
  /** Network extensions forwarded unchanged (timestamp, responder, timestamp stack), each whole. */
  exts?: Buffer[];
  body: { kind: "reply"; consolidation: WireConsolidation; push: PushBody } | { kind: "err"; err: ErrBody };
}

export interface ResponseFinalMsg {
  kind: "responseFinal";
  id: number;
}

export interface DeclareMsg {
  kind: "declare";
  /** Set when the declaration answers an INTEREST's current part. */
  interestId?: number;
  decl: Declaration;
}

export interface InterestMsg {
  kind: "interest";
  id: number;
  current: boolean;
  future: boolean;
  /** `InterestOption` bits (0 for a final interest). */
  options: number;
  key?: WireExpr;
}

export type NetworkMsg =
  | PushMsg
  | RequestMsg
  | ResponseMsg
  | ResponseFinalMsg
  | DeclareMsg
  | InterestMsg
  | { kind: "oam" };

/** A PUSH's message, key and body objects, for `decodeNetwork` to decode PUSHes into again and again. */
export function pushScratch(): PushMsg {
  return {
    kind: "push",
    key: { scope: 0, suffix: "", senderMapping: false },
    qos: DEFAULT_QOS_BYTE,
    exts: undefined,
    body: emptyPushBody(),
  };
}

/** Decodes a PUSH whose header `h` was read into `m` (its key and body objects too). */
function decodePushInto(r: BinaryReader, h: number, m: PushMsg): PushMsg {
  const key = m.key;
  key.scope = r.vle(0xffff_ffff);
  key.suffix = (h & FLAG_N) !== 0 ? r.lenString(MAX_SUFFIX_BYTES) : "";
  key.senderMapping = (h & FLAG_M) !== 0;
  let qos = DEFAULT_QOS_BYTE;
  let exts: Buffer[] | undefined;
  if ((h & FLAG_Z) !== 0) {
    const buf = r.buf;
    const at = r.pos;
    if (at + 2 <= r.end && buf[at] === EXT_QOS && (buf[at + 1] as number) < 0x80) {
      // The common chain, the QoS extension alone with a one-byte value (a publisher with a
      // priority or congestion control of its own), read in place: no extension object.
      qos = buf[at + 1] as number;
      r.pos = at + 2;
    } else {
      let more = true;
      while (more) {
        const start = r.pos;
        const ext = readExt(r);
        more = ext.more;
        if (ext.id === EXT_QOS) qos = ext.zint & 0xff;
        else if (ext.id === EXT_TIMESTAMP || ext.id === EXT_TS_STACK) exts = carry(r, start, exts);
        else if (ext.id !== EXT_NODEID) unknownExt(ext);
      }
    }
  }
  m.qos = qos;
  m.exts = exts;
  decodePushBodyInto(r, r.u8(), m.body);
  return m;
}

/**
 * Decodes the network message at the reader's position. A PUSH is decoded into `push` when
 * given (from `pushScratch`): the same objects for every PUSH of a batch, so the caller uses
 * the message before it decodes the next, and keeps only what the body's fields hold.
 */
export function decodeNetwork(r: BinaryReader, push?: PushMsg): NetworkMsg {
  const h = r.u8();
  switch (h & MID_MASK) {
    case MID_N_PUSH:
      return decodePushInto(r, h, push ?? pushScratch());
    case MID_N_REQUEST: {
      const id = r.vle(0xffff_ffff);
      const key = readWireExpr(r, (h & FLAG_N) !== 0, (h & FLAG_M) !== 0);
      const m: RequestMsg = {
        kind: "request",
        id,
        key,
        qos: DEFAULT_QOS_BYTE,
        target: "best_matching",
        budget: 0,
        timeoutMs: 0,
        body: { kind: "query", query: { consolidation: "auto", parameters: "" } },
      };
      if ((h & FLAG_Z) !== 0) {
        let more = true;
        while (more) {
          const start = r.pos;
          const ext = readExt(r);
          more = ext.more;
          if (ext.id === EXT_QOS) m.qos = ext.zint & 0xff;
          else if (ext.id === EXT_TIMESTAMP) {
            m.timestamp = readTimestamp(new Reader(ext.zbuf));
            m.exts = carry(r, start, m.exts);
          } else if (ext.id === EXT_TS_STACK) m.exts = carry(r, start, m.exts);
          else if (ext.id === EXT_TARGET) {
            const t = TARGETS[ext.zint];
            if (t === undefined) throw new DecodeError(`unknown query target ${ext.zint}`);
            m.target = t;
          } else if (ext.id === EXT_BUDGET) m.budget = ext.zint;
          else if (ext.id === EXT_TIMEOUT) m.timeoutMs = ext.zint;
          else if (ext.id !== EXT_NODEID) unknownExt(ext);
        }
      }
      const zh = r.u8();
      const mid = zh & MID_MASK;
      if (mid === MID_Z_QUERY) m.body = { kind: "query", query: decodeQuery(r, zh) };
      else if (mid === MID_Z_PUT || mid === MID_Z_DEL) m.body = { kind: "push", push: decodePushBody(r, zh) };
      else throw new DecodeError(`unknown request body 0x${mid.toString(16)}`);
      return m;
    }
    case MID_N_RESPONSE: {
      const id = r.vle(0xffff_ffff);
      const key = readWireExpr(r, (h & FLAG_N) !== 0, (h & FLAG_M) !== 0);
      let qos = DEFAULT_QOS_BYTE;
      let timestamp: Timestamp | undefined;
      let responder: { zid: string; eid: number } | undefined;
      let exts: Buffer[] | undefined;
      if ((h & FLAG_Z) !== 0) {
        let more = true;
        while (more) {
          const start = r.pos;
          const ext = readExt(r);
          more = ext.more;
          if (ext.id === EXT_QOS) qos = ext.zint & 0xff;
          else if (ext.id === EXT_TIMESTAMP) {
            timestamp = readTimestamp(new Reader(ext.zbuf));
            exts = carry(r, start, exts);
          } else if (ext.id === EXT_RESPONDER) {
            const er = new Reader(ext.zbuf);
            const zid = readZid(er, (er.u8() >> 4) + 1);
            responder = { zid, eid: er.vle(0xffff_ffff) };
            exts = carry(r, start, exts);
          } else if (ext.id === EXT_TS_STACK) exts = carry(r, start, exts);
          else unknownExt(ext);
        }
      }
      const zh = r.u8();
      const mid = zh & MID_MASK;
      let body: ResponseMsg["body"];
      if (mid === MID_Z_REPLY) {
        const reply = decodeReply(r, zh);
        body = { kind: "reply", consolidation: reply.consolidation, push: reply.body };
      } else if (mid === MID_Z_ERR) body = { kind: "err", err: decodeErr(r, zh) };
      else throw new DecodeError(`unknown response body 0x${mid.toString(16)}`);
      const m: ResponseMsg = { kind: "response", id, key, qos, body };
      if (timestamp) m.timestamp = timestamp;
      if (responder) m.responder = responder;
      if (exts) m.exts = exts;
      return m;
    }
    case MID_N_RESPONSE_FINAL: {
      const id = r.vle(0xffff_ffff);
      if ((h & FLAG_Z) !== 0) skip(r);
      return { kind: "responseFinal", id };
    }
    case MID_N_DECLARE: {
      const interestId = (h & FLAG_DECLARE_I) !== 0 ? r.vle(0xffff_ffff) : undefined;
      if ((h & FLAG_Z) !== 0) {
        let more = true;
        while (more) {
          const ext = readExt(r);
          more = ext.more;
          if (ext.id !== EXT_QOS && ext.id !== EXT_TIMESTAMP) unknownExt(ext);
        }
      }
      const decl = decodeDeclaration(r);
      return interestId === undefined ? { kind: "declare", decl } : { kind: "declare", interestId, decl };
    }
    case MID_N_INTEREST: {
      const id = r.vle(0xffff_ffff);
      const current = (h & FLAG_INTEREST_C) !== 0;
      const future = (h & FLAG_INTEREST_F) !== 0;
      const m: InterestMsg = { kind: "interest", id, current, future, options: 0 };
      if (current || future) {
        const flags = r.u8();
        m.options = flags & 0x9f;
        if ((flags & InterestOption.RESTRICTED) !== 0)
          m.key = readWireExpr(r, (flags & 0x20) !== 0, (flags & 0x40) !== 0);
      }
      if ((h & FLAG_Z) !== 0) skip(r);
      return m;
    }
    case MID_N_OAM: {
      r.vle(0xffff);
      if ((h & FLAG_Z) !== 0) skip(r);
      const enc = h & 0x60;
      if (enc === EXT_ZINT) r.vle64();
      else if (enc === EXT_ZBUF) r.lenBytes();
      return { kind: "oam" };
    }
    default:
      throw new DecodeError(`unknown network message id 0x${(h & MID_MASK).toString(16)}`);
  }
}

function skip(r: BinaryReader): void {
  let more = true;
  while (more) {
    const ext = readExt(r);
    more = ext.more;
    unknownExt(ext);
  }
}

function keyHeader(mid: number, key: WireExpr): number {
  return mid | (key.suffix !== "" ? FLAG_N : 0) | (key.senderMapping ? FLAG_M : 0);
}

/**
 * Writes a PUSH. A QoS byte other than the default travels in its extension; `exts` are carried
 * network extensions (`PushMsg.exts`).
 */
export function encodePush(
  w: BinaryWriter,
  key: WireExpr,
  body: PushBodyOut,
  qos = DEFAULT_QOS_BYTE,
  exts?: readonly Buffer[],
): void {
  w.u8(keyHeader(MID_N_PUSH, key) | (hasNetworkExts(qos, exts) ? FLAG_Z : 0));
  writeWireExpr(w, key);
  writeNetworkExts(w, qos, exts);
  encodePushBody(w, body);
}

/**
 * The bytes of a sample's common PUSH up to its payload, for one receiver's key (`WireKey`),
 * timestamp id, encoding, kind and QoS, with room for the time (`timeAt`): a subscriber's PUSHes
 * mostly repeat all five, and one copy of these bytes costs less than writing them piece by piece.
 */
interface PushTemplate {
  readonly key: WireKey;
  readonly zid: string;
  readonly encoding: string;
  readonly put: boolean;
  /** The QoS byte: other than the default, the PUSH carries its QoS extension. */
  readonly qos: number;
  readonly bytes: Buffer;
  readonly timeAt: number;
}

/** Templates by receiver's key (each `WireKey` is made once), bounded; the one used last is tried first. */
const templates = new Map<WireKey, PushTemplate>();
const TEMPLATES_MAX = 4096;
let lastTemplate: PushTemplate | undefined;

function templateOf(key: WireKey, zid: string, encoding: string, put: boolean, qos: number): PushTemplate {
  const last = lastTemplate;
  if (
    last !== undefined &&
    last.key === key &&
    last.zid === zid &&
    last.encoding === encoding &&
    last.put === put &&
    last.qos === qos
  )
    return last;
  let t = templates.get(key);
  if (t === undefined || t.zid !== zid || t.encoding !== encoding || t.put !== put || t.qos !== qos) {
    const w = new Writer(32 + key.bytes.length);
    w.u8(MID_N_PUSH | key.flags | (qos !== DEFAULT_QOS_BYTE ? FLAG_Z : 0));
    w.bytes(key.bytes);
    writeNetworkExts(w, qos, undefined);
    const withEncoding = put && encoding !== "";
    w.u8((put ? MID_Z_PUT : MID_Z_DEL) | FLAG_PUT_T | (withEncoding ? FLAG_PUT_E : 0));
    const timeAt = w.pos;
    w.bytes(NTP64_ROOM);
    w.bytes(cachedZid(zid));
    if (withEncoding) w.bytes(encodingBytesOf(encoding));
    t = { key, zid, encoding, put, qos, bytes: w.finish(), timeAt };
    if (templates.size >= TEMPLATES_MAX) templates.clear();
    templates.set(key, t);
  }
  lastTemplate = t;
  return t;
}

/** The nine bytes an NTP64 time of this era takes, written over in each PUSH. */
const NTP64_ROOM = new Uint8Array(9);

/** Payloads up to this long are copied byte by byte, longer ones with `set` (one builtin call). */
const SMALL_PAYLOAD = 8;

/**
 * Writes the common PUSH of a sample straight into the writer's buffer, sized once: any QoS, a
 * timestamp of this era, no attachment, its key as `to` (kept: `wire-key.ts`). Its bytes up to
 * the payload are a copy of the key's template with the time written in. The same bytes as
 * `encodePush`. Returns false, writing nothing, for any other sample.
 */
function writeCommonSamplePush(w: BinaryWriter, s: Sample, qos: number, to: WireKey): boolean {
  const ts = s.timestamp;
  if (
    ts === undefined ||
    s.attachment !== undefined ||
    s.sourceInfo !== undefined ||
    s.extensions !== undefined ||
    s.key === "" ||
    to.expr.suffix.length > LONGEST_CACHED_KEY
  )
    return false;
  const put = s.kind === "put";
  const t = templateOf(to, ts.id, put ? s.encoding : "", put, qos);
  const head = t.bytes;
  const payload = s.payload;
  const n = put ? payload.length : 0;
  const buf = w.room(head.length + 9 + n);
  const start = w.pos;
  buf.set(head, start);
  // An earlier time than this era's takes fewer bytes: the generic encoder writes it (`pos` unmoved).
  if (putNtp64(buf, start + t.timeAt, ts.time) < 0) return false;
  let at = start + head.length;
  if (put) {
    let v = n;
    while (v >= 0x80) {
      buf[at++] = (v & 0x7f) | 0x80;
      v >>>= 7;
    }
    buf[at++] = v;
    if (n <= SMALL_PAYLOAD) for (let i = 0; i < n; i++) buf[at++] = payload[i] as number;
    else {
      buf.set(payload, at);
      at += n;
    }
  }
  w.pos = at;
  return true;
}

/**
 * Where the PUSH of the sample written last is (`encodeSamplePush`): its writer, that writer's
 * generation then, and its byte range. Holds one sample (its payload) until the next is written.
 */
let lastSample: Sample | undefined;
let lastSampleQos = -1;
let lastSampleKey: WireKey | undefined;
let lastSampleWriter: BinaryWriter | undefined;
let lastSampleGeneration = -1;
let lastSampleStart = 0;
let lastSampleEnd = 0;

/**
 * Writes a PUSH of `sample`: what the router sends a subscriber. Its key is `to`, as the receiver
 * reads it (`wire-key.ts`: one of the receiver's own key-expression ids), or else named in full. A
 * sample reaching several subscribers (of one session or many) is encoded once: the next
 * subscriber's PUSH is a copy of the bytes written for the one before, while those are intact and
 * name the key the same way.
 */
export function encodeSamplePush(w: BinaryWriter, sample: Sample, qos: number, to?: WireKey): void {
  const key = to ?? namedWireKey(sample.key);
  const from = lastSampleWriter;
  if (
    sample === lastSample &&
    qos === lastSampleQos &&
    key === lastSampleKey &&
    from !== undefined &&
    from.generation === lastSampleGeneration
  ) {
    w.append(from, lastSampleStart, lastSampleEnd);
    return;
  }
  const start = w.pos;
  if (!writeCommonSamplePush(w, sample, qos, key)) {
    const exts = sample.extensions?.network;
    w.u8(MID_N_PUSH | key.flags | (hasNetworkExts(qos, exts) ? FLAG_Z : 0));
    w.bytes(key.bytes);
    writeNetworkExts(w, qos, exts);
    encodePushBody(w, sample);
  }
  lastSample = sample;
  lastSampleQos = qos;
  lastSampleKey = key;
  lastSampleWriter = w;
  lastSampleGeneration = w.generation;
  lastSampleStart = start;
  lastSampleEnd = w.pos;
}

/** Writes a REQUEST carrying a QUERY. */
export function encodeRequest(
  w: BinaryWriter,
  m: {
    id: number;
    key: WireExpr;
    target?: WireTarget;
    timeoutMs?: number;
    budget?: number;
    qos?: number;
    /** Carried network extensions (`RequestMsg.exts`). */
    exts?: readonly Buffer[] | undefined;
    query: QueryBody;
  },
): void {
  const exts: Array<[number, number]> = [];
  if (m.qos !== undefined && m.qos !== DEFAULT_QOS_BYTE) exts.push([EXT_QOS, m.qos]);
  if (m.target !== undefined && m.target !== "best_matching") exts.push([EXT_TARGET, TARGETS.indexOf(m.target)]);
  if (m.budget) exts.push([EXT_BUDGET, m.budget]);
  if (m.timeoutMs) exts.push([EXT_TIMEOUT, m.timeoutMs]);
  const carried = m.exts !== undefined && m.exts.length > 0;
  w.u8(keyHeader(MID_N_REQUEST, m.key) | (exts.length > 0 || carried ? FLAG_Z : 0)).vle(m.id);
  writeWireExpr(w, m.key);
  exts.forEach(([id, v], i) => {
    extHeader(w, id, i < exts.length - 1 || carried);
    w.vle(v);
  });
  if (carried) writeCarriedExts(w, m.exts ?? [], false);
  encodeQuery(w, m.query);
}

/** Writes a RESPONSE with a reply (a PUT or DEL); `exts` are carried network extensions. */
export function encodeResponseReply(
  w: BinaryWriter,
  id: number,
  key: WireExpr,
  push: PushBodyOut,
  qos = DEFAULT_QOS_BYTE,
  exts?: readonly Buffer[],
): void {
  w.u8(keyHeader(MID_N_RESPONSE, key) | (hasNetworkExts(qos, exts) ? FLAG_Z : 0)).vle(id);
  writeWireExpr(w, key);
  writeNetworkExts(w, qos, exts);
  encodeReply(w, push);
}

/**
 * Writes a RESPONSE answering request `id` with a reply sample, its key named in full: its
 * timestamp, encoding, attachment, QoS, source info and carried extensions as they came.
 */
export function encodeSampleResponse(w: BinaryWriter, id: number, sample: Sample): void {
  encodeResponseReply(
    w,
    id,
    { scope: 0, suffix: sample.key, senderMapping: false },
    sample,
    qosByte(sample.qos),
    sample.extensions?.network,
  );
}

/** Writes a RESPONSE with an error. */
export function encodeResponseErr(w: BinaryWriter, id: number, key: WireExpr, err: ErrBody): void {
  w.u8(keyHeader(MID_N_RESPONSE, key)).vle(id);
  writeWireExpr(w, key);
  encodeErr(w, err);
}

export function encodeResponseFinal(w: BinaryWriter, id: number): void {
  w.u8(MID_N_RESPONSE_FINAL).vle(id);
}

/** Writes a DECLARE; `interestId` marks it as an answer to that INTEREST's current part. */
export function encodeDeclare(w: BinaryWriter, decl: Declaration, interestId?: number): void {
  w.u8(MID_N_DECLARE | (interestId !== undefined ? FLAG_DECLARE_I : 0));
  if (interestId !== undefined) w.vle(interestId);
  encodeDeclaration(w, decl);
}

/** Writes an INTEREST (tests and the bench client use it). */
export function encodeInterest(w: BinaryWriter, m: Omit<InterestMsg, "kind">): void {
  w.u8(MID_N_INTEREST | (m.current ? FLAG_INTEREST_C : 0) | (m.future ? FLAG_INTEREST_F : 0)).vle(m.id);
  if (!m.current && !m.future) return;
  let flags = m.options & 0x8f;
  if (m.key) {
    flags |= InterestOption.RESTRICTED | (m.key.suffix !== "" ? 0x20 : 0) | (m.key.senderMapping ? 0x40 : 0);
    w.u8(flags);
    writeWireExpr(w, m.key);
  } else w.u8(flags);
}

export { MID_Z_DEL, MID_Z_PUT };

/**
 * The extensions a sample or query carries from a zenoh message: its network message's (`exts`,
 * with this router's ROUTE record, stamped by `stamp`, in an instrumented timestamp stack) and its
 * body's unknown ones; undefined when there are none (most messages).
 */
export function carriedExtensions(
  received: readonly Buffer[] | undefined,
  body: readonly Buffer[] | undefined,
  stamp: () => Timestamp,
): WireExtensions | undefined {
  if (received === undefined && body === undefined) return undefined;
  // Passing this router: a timestamp stack instrumented for ROUTE gets its record here.
  const network = withRouteRecord(received, stamp);
  return body === undefined ? { network: network ?? [] } : network === undefined ? { body } : { network, body };
}
