/**
 * Zenoh messages, the bodies network messages carry (docs/zenoh-protocol.md): PUT and DEL (in
 * PUSH, REQUEST and REPLY), QUERY (in REQUEST), REPLY and ERR (in RESPONSE).
 */
import { Buffer } from "node:buffer";
import { type BinaryReader, BinaryReader as Reader, type BinaryWriter, DecodeError } from "../../core/binary.js";
import type { Encoding } from "../../core/encoding.js";
import type { Timestamp } from "../../core/timestamp.js";
import type { WireExtensions } from "../../core/sample.js";
import {
  EXT_MANDATORY,
  EXT_ZBUF,
  extHeader,
  FLAG_Z,
  MAX_SUFFIX_BYTES,
  MAX_CARRIED_EXTS,
  MID_MASK,
  rawExt,
  readEncoding,
  readExt,
  readSourceInfo,
  readTimestamp,
  type SourceInfo,
  unknownExt,
  writeEncoding,
  writeCarriedExts,
  writeSourceInfoExt,
  writeTimestamp,
} from "./core.js";

export const MID_Z_PUT = 0x01;
export const MID_Z_DEL = 0x02;
export const MID_Z_QUERY = 0x03;
export const MID_Z_REPLY = 0x04;
export const MID_Z_ERR = 0x05;

const FLAG_T = 0x20; // PUT, DEL: timestamp
const FLAG_E = 0x40; // PUT, ERR: encoding
const FLAG_C = 0x20; // QUERY, REPLY: consolidation
const FLAG_P = 0x40; // QUERY: parameters

const EXT_SOURCE_INFO = 0x01 | EXT_ZBUF;
const EXT_ATTACHMENT = 0x03 | EXT_ZBUF; // PUT, DEL
const EXT_QUERY_BODY = 0x03 | EXT_ZBUF;
const EXT_QUERY_ATTACHMENT = 0x05 | EXT_ZBUF;

/** The largest payload one message may carry once reassembled (bytes); the session limit is lower. */
export const MAX_PAYLOAD = 64 * 1024 * 1024;

/** A PUT or DEL. */
export interface PushBody {
  kind: "put" | "delete";
  timestamp?: Timestamp;
  /** PUT only; `""` when absent on the wire (zenoh's default, `zenoh/bytes`). */
  encoding: Encoding;
  /** True when the encoding was on the wire. */
  hasEncoding: boolean;
  sourceInfo?: SourceInfo;
  /** Decoded: a copy of its own, as the payload. */
  attachment?: Buffer;
  /**
   * Extensions the codec does not know and that are not mandatory, each whole (`rawExt`): zenoh's
   * router forwards them unchanged, and so does zest.
   */
  unknownExts?: Buffer[];
  /** Decoded: a copy of its own, never a view into the batch. */
  payload: Buffer;
}

/**
 * Consolidation on the wire (zenoh-rust's codec): 0 auto, 1 none, 2 monotonic, 3 latest.
 */
export type WireConsolidation = "auto" | "none" | "monotonic" | "latest";
const CONSOLIDATIONS: readonly WireConsolidation[] = ["auto", "none", "monotonic", "latest"];

/** An unknown value is read as `auto`, as zenoh reads it. */
function consolidationOf(b: number): WireConsolidation {
  return CONSOLIDATIONS[b] ?? "auto";
}

export interface QueryBody {
  consolidation: WireConsolidation;
  parameters: string;
  /** The query's payload and its encoding, when it has one. */
  body?: { encoding: Encoding; payload: Buffer };
  sourceInfo?: SourceInfo;
  attachment?: Buffer;
  /** Unknown extensions that are not mandatory, carried whole (as a PUT's). */
  unknownExts?: readonly Buffer[] | undefined;
}

export interface ErrBody {
  encoding: Encoding;
  sourceInfo?: SourceInfo;
  /** Decoded: a copy of its own. */
  payload: Buffer;
}

const EMPTY = Buffer.alloc(0);

/** A PUT or DEL body with every field present (one object shape), for `decodePushBodyInto` to fill. */
export function emptyPushBody(): PushBody {
  return {
    kind: "put",
    timestamp: undefined,
    encoding: "",
    hasEncoding: false,
    sourceInfo: undefined,
    attachment: undefined,
    unknownExts: undefined,
    payload: EMPTY,
  };
}

/**
 * Keeps an extension nobody here reads, to forward it (zenoh keeps a zenoh message's unknown
 * extensions); a mandatory one refuses the message, as `unknownExt` does.
 */
function carryUnknown(r: BinaryReader, start: number, id: number, into: Buffer[] | undefined): Buffer[] | undefined {
  if ((id & EXT_MANDATORY) !== 0) unknownExt({ id, more: false, zint: 0, zbuf: EMPTY });
  const list = into ?? [];
  if (list.length < MAX_CARRIED_EXTS) list.push(rawExt(r, start));
  return list;
}

/** Decodes a PUT or DEL whose header `h` was read. */
export function decodePushBody(r: BinaryReader, h: number): PushBody {
  return decodePushBodyInto(r, h, emptyPushBody());
}

/**
 * Decodes a PUT or DEL whose header `h` was read into `body`, every field set again: a link
 * decodes each PUSH of a batch into the same objects (docs/zenoh-protocol.md, "Cost per message").
 * What it sets may be kept (the payload and attachment are copies, the timestamp is new); the
 * body object itself is the caller's to reuse.
 */
export function decodePushBodyInto(r: BinaryReader, h: number, body: PushBody): PushBody {
  const mid = h & MID_MASK;
  if (mid !== MID_Z_PUT && mid !== MID_Z_DEL)
    throw new DecodeError(`expected PUT or DEL, got zenoh message 0x${mid.toString(16)}`);
  const put = mid === MID_Z_PUT;
  body.kind = put ? "put" : "delete";
  body.timestamp = (h & FLAG_T) !== 0 ? readTimestamp(r) : undefined;
  if (put && (h & FLAG_E) !== 0) {
    body.encoding = readEncoding(r);
    body.hasEncoding = true;
  } else {
    body.encoding = "";
    body.hasEncoding = false;
  }
  body.sourceInfo = undefined;
  body.attachment = undefined;
  body.unknownExts = undefined;
  if ((h & FLAG_Z) !== 0) {
    let more = true;
    while (more) {
      const start = r.pos;
      const ext = readExt(r, MAX_PAYLOAD);
      more = ext.more;
      if (ext.id === EXT_SOURCE_INFO) body.sourceInfo = readSourceInfo(new Reader(ext.zbuf));
      else if (ext.id === EXT_ATTACHMENT) body.attachment = Buffer.from(ext.zbuf);
      else body.unknownExts = carryUnknown(r, start, ext.id, body.unknownExts);
    }
  }
  // Copied out of the batch as it is read (one buffer, not a view and then a copy): a stored
  // value must not keep its whole batch alive.
  body.payload = put ? r.lenBytesCopy(MAX_PAYLOAD) : EMPTY;
  return body;
}

/**
 * What `encodePushBody` writes: a PushBody, or a sample as it is (no encoding on the wire for
 * an empty one, as `hasEncoding` false says; its carried extensions in `extensions.body`).
 */
export type PushBodyOut = Omit<PushBody, "hasEncoding" | "unknownExts"> & {
  hasEncoding?: boolean;
  unknownExts?: readonly Buffer[] | undefined;
  extensions?: WireExtensions | undefined;
};

/** Writes a PUT or DEL. */
export function encodePushBody(w: BinaryWriter, b: PushBodyOut): void {
  const put = b.kind === "put";
  const carried = b.unknownExts ?? b.extensions?.body;
  const withCarried = carried !== undefined && carried.length > 0;
  const hasExt = b.sourceInfo !== undefined || b.attachment !== undefined || withCarried;
  const withEncoding = put && (b.hasEncoding === true || b.encoding !== "");
  w.u8(
    (put ? MID_Z_PUT : MID_Z_DEL) |
      (b.timestamp !== undefined ? FLAG_T : 0) |
      (withEncoding ? FLAG_E : 0) |
      (hasExt ? FLAG_Z : 0),
  );
  if (b.timestamp !== undefined) writeTimestamp(w, b.timestamp);
  if (withEncoding) writeEncoding(w, b.encoding);
  if (b.sourceInfo !== undefined) {
    extHeader(w, EXT_SOURCE_INFO, b.attachment !== undefined || withCarried);
    writeSourceInfoExt(w, b.sourceInfo);
  }
  if (b.attachment !== undefined) {
    extHeader(w, EXT_ATTACHMENT, withCarried);
    w.lenBytes(b.attachment);
  }
  if (withCarried) writeCarriedExts(w, carried, false);
  if (put) w.lenBytes(b.payload);
}

/** Decodes a QUERY whose header `h` was read. */
export function decodeQuery(r: BinaryReader, h: number): QueryBody {
  const q: QueryBody = { consolidation: "auto", parameters: "" };
  let carried: Buffer[] | undefined;
  if ((h & FLAG_C) !== 0) q.consolidation = consolidationOf(r.u8());
  if ((h & FLAG_P) !== 0) q.parameters = r.lenString(MAX_SUFFIX_BYTES);
  if ((h & FLAG_Z) !== 0) {
    let more = true;
    while (more) {
      const start = r.pos;
      const ext = readExt(r, MAX_PAYLOAD);
      more = ext.more;
      if (ext.id === EXT_SOURCE_INFO) q.sourceInfo = readSourceInfo(new Reader(ext.zbuf));
      else if (ext.id === EXT_QUERY_BODY) {
        const br = new Reader(ext.zbuf);
        const encoding = readEncoding(br);
        q.body = { encoding, payload: br.bytes(br.remaining) };
      } else if (ext.id === EXT_QUERY_ATTACHMENT) q.attachment = ext.zbuf;
      else carried = carryUnknown(r, start, ext.id, carried);
    }
  }
  if (carried !== undefined) q.unknownExts = carried;
  return q;
}

export function encodeQuery(w: BinaryWriter, q: QueryBody): void {
  const exts: number[] = [];
  if (q.body !== undefined) exts.push(EXT_QUERY_BODY);
  if (q.sourceInfo !== undefined) exts.push(EXT_SOURCE_INFO);
  if (q.attachment !== undefined) exts.push(EXT_QUERY_ATTACHMENT);
  const carried = q.unknownExts;
  const withCarried = carried !== undefined && carried.length > 0;
  if (withCarried) exts.push(-1);
  const c = q.consolidation !== "auto";
  w.u8(MID_Z_QUERY | (c ? FLAG_C : 0) | (q.parameters !== "" ? FLAG_P : 0) | (exts.length > 0 ? FLAG_Z : 0));
  if (c) w.u8(CONSOLIDATIONS.indexOf(q.consolidation));
  if (q.parameters !== "") w.lenString(q.parameters);
  exts.forEach((id, i) => {
    if (id === -1) {
      writeCarriedExts(w, carried ?? [], false);
      return;
    }
    extHeader(w, id, i < exts.length - 1);
    if (id === EXT_QUERY_BODY && q.body !== undefined) {
      // The body extension: its length, then the encoding and the payload up to that length.
      const start = w.pos;
      writeEncoding(w, q.body.encoding);
      const enc = Buffer.from(w.view().subarray(start));
      w.truncate(start);
      w.vle(enc.length + q.body.payload.length)
        .bytes(enc)
        .bytes(q.body.payload);
    } else if (id === EXT_SOURCE_INFO && q.sourceInfo !== undefined) writeSourceInfoExt(w, q.sourceInfo);
    else if (id === EXT_QUERY_ATTACHMENT && q.attachment !== undefined) w.lenBytes(q.attachment);
  });
}

/** Decodes a REPLY whose header `h` was read: its consolidation and the PUT or DEL it carries. */
export function decodeReply(r: BinaryReader, h: number): { consolidation: WireConsolidation; body: PushBody } {
  const consolidation = (h & FLAG_C) !== 0 ? consolidationOf(r.u8()) : "auto";
  if ((h & FLAG_Z) !== 0) {
    let more = true;
    while (more) {
      const ext = readExt(r);
      more = ext.more;
      unknownExt(ext);
    }
  }
  return { consolidation, body: decodePushBody(r, r.u8()) };
}

export function encodeReply(w: BinaryWriter, body: PushBodyOut, consolidation: WireConsolidation = "auto"): void {
  const c = consolidation !== "auto";
  w.u8(MID_Z_REPLY | (c ? FLAG_C : 0));
  if (c) w.u8(CONSOLIDATIONS.indexOf(consolidation));
  encodePushBody(w, body);
}

/** Decodes an ERR whose header `h` was read. */
export function decodeErr(r: BinaryReader, h: number): ErrBody {
  const e: ErrBody = { encoding: "", payload: EMPTY };
  if ((h & FLAG_E) !== 0) e.encoding = readEncoding(r);
  if ((h & FLAG_Z) !== 0) {
    let more = true;
    while (more) {
      const ext = readExt(r);
      more = ext.more;
      if (ext.id === EXT_SOURCE_INFO) e.sourceInfo = readSourceInfo(new Reader(ext.zbuf));
      else unknownExt(ext);
    }
  }
  e.payload = r.lenBytesCopy(MAX_PAYLOAD);
  return e;
}

export function encodeErr(w: BinaryWriter, e: ErrBody): void {
  const withEncoding = e.encoding !== "";
  const withInfo = e.sourceInfo !== undefined;
  w.u8(MID_Z_ERR | (withEncoding ? FLAG_E : 0) | (withInfo ? FLAG_Z : 0));
  if (withEncoding) writeEncoding(w, e.encoding);
  if (e.sourceInfo !== undefined) {
    extHeader(w, EXT_SOURCE_INFO, false);
    writeSourceInfoExt(w, e.sourceInfo);
  }
  w.lenBytes(e.payload);
}
