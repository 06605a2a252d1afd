/**
 * Message ids and the composite values of the remote API (zenoh-ts 1.10): encodings,
 * timestamps, samples, and the QoS and query-settings bytes. See docs/remote-api.md.
 */
import type { ConsolidationMode } from "../core/consolidate.js";
import { type Encoding, fromZenohEncoding, toZenohEncoding } from "../core/encoding.js";
import type { Locality } from "../core/locality.js";
import type { QueryTarget } from "../core/query-target.js";
import type { Qos } from "../core/qos.js";
import type { Sample } from "../core/sample.js";
import { idFromZenohId, idToZenohId, Timestamp } from "../core/timestamp.js";
import { CloseCode, ProtocolError, type Reader, type Writer } from "./wire.js";

/** Client → server message ids. */
export const In = {
  DeclarePublisher: 0,
  UndeclarePublisher: 1,
  DeclareSubscriber: 2,
  UndeclareSubscriber: 3,
  DeclareQueryable: 4,
  UndeclareQueryable: 5,
  DeclareQuerier: 6,
  UndeclareQuerier: 7,
  DeclareLivelinessToken: 8,
  UndeclareLivelinessToken: 9,
  DeclareLivelinessSubscriber: 10,
  UndeclareLivelinessSubscriber: 11,
  GetSessionInfo: 12,
  GetTimestamp: 13,
  Put: 14,
  Delete: 15,
  PublisherPut: 16,
  PublisherDelete: 17,
  Get: 18,
  QuerierGet: 19,
  LivelinessGet: 20,
  ReplyOk: 21,
  ReplyDel: 22,
  ReplyErr: 23,
  QueryResponseFinal: 24,
  Ping: 25,
  PublisherDeclareMatchingListener: 26,
  UndeclareMatchingListener: 27,
  PublisherGetMatchingStatus: 28,
  QuerierDeclareMatchingListener: 29,
  QuerierGetMatchingStatus: 30,
  GetTransports: 31,
  GetLinks: 32,
  DeclareTransportEventsListener: 33,
  UndeclareTransportEventsListener: 34,
  DeclareLinkEventsListener: 35,
  UndeclareLinkEventsListener: 36,
} as const;

/** Names by id, for logs and the access-control hook. */
export const IN_NAMES: readonly string[] = Object.keys(In);

/** Server → client message ids. */
export const Out = {
  ResponsePing: 0,
  ResponseOk: 1,
  ResponseError: 2,
  ResponseTimestamp: 3,
  ResponseSessionInfo: 4,
  InSample: 5,
  InQuery: 6,
  InReply: 7,
  QueryResponseFinal: 8,
  ResponseMatchingStatus: 9,
  MatchingStatusUpdate: 10,
  ResponseTransports: 11,
  ResponseLinks: 12,
  InTransportEventUpdate: 13,
  InLinkEventUpdate: 14,
} as const;

/** Header byte flag: a u32 sequence id follows (a request, or the response to one). */
export const SEQ_FLAG = 0x80;

/** The QoS byte `llrecppp`, decoded. */
export interface WireQos extends Qos {
  readonly locality: Locality;
}

const LOCALITIES: readonly Locality[] = ["session_local", "remote", "any"];

/** A locality byte (0 session-local, 1 remote, 2 any). */
export function readLocality(v: number): Locality {
  const l = LOCALITIES[v];
  if (l === undefined) throw new ProtocolError(CloseCode.INVALID_PAYLOAD, `invalid locality ${v}`);
  return l;
}

export function decodeQos(v: number): WireQos {
  const priority = v & 0b111;
  if (priority === 0) throw new ProtocolError(CloseCode.INVALID_PAYLOAD, "invalid priority 0 in a QoS byte");
  return {
    priority,
    congestionControl: (v >> 3) & 1 ? "block" : "drop",
    express: ((v >> 4) & 1) === 1,
    locality: readLocality((v >> 6) & 0b11),
  };
}

/** The QoS byte of a sample sent to a client: reliable, locality any (the client ignores both). */
export function encodeQos(qos: Qos | undefined): number {
  if (qos === undefined) return 0xa5;
  return qos.priority | (qos.congestionControl === "block" ? 0x08 : 0) | (qos.express ? 0x10 : 0) | 0x20 | 0x80;
}

/** The query-settings byte `rcctt`, decoded. */
export interface QuerySettings {
  readonly target: QueryTarget;
  readonly consolidation: ConsolidationMode;
  /** True for MATCHING_QUERY (replies must intersect the query), false for ANY (`_anyke`). */
  readonly matchingReplies: boolean;
}

const TARGETS: readonly QueryTarget[] = ["best_matching", "all", "all_complete"];
const CONSOLIDATIONS: readonly ConsolidationMode[] = ["auto", "none", "monotonic", "latest"];

export function decodeQuerySettings(v: number): QuerySettings {
  const target = TARGETS[v & 0b11];
  if (target === undefined || v > 0x1f)
    throw new ProtocolError(CloseCode.INVALID_PAYLOAD, `invalid query settings byte ${v}`);
  return { target, consolidation: CONSOLIDATIONS[(v >> 2) & 0b11]!, matchingReplies: ((v >> 4) & 1) === 1 };
}

export function readEncoding(r: Reader): Encoding {
  const id = r.u16();
  return fromZenohEncoding(id, r.string());
}

export function writeEncoding(w: Writer, encoding: Encoding): void {
  const { id, schema } = toZenohEncoding(encoding);
  w.u16(id).string(schema);
}

export function readZenohId(r: Reader): string {
  const b = r.bytes();
  if (b.length !== 16) throw new ProtocolError(CloseCode.INVALID_PAYLOAD, `a ZenohId has ${b.length} bytes, not 16`);
  return idFromZenohId(b);
}

/** ZenohId bytes per zest id, cached (a router writes its own id on every timestamp). */
const zidBytes = new Map<string, Uint8Array>();
export function writeZenohId(w: Writer, id: string): void {
  let b = zidBytes.get(id);
  if (b === undefined) {
    if (zidBytes.size > 1024) zidBytes.clear();
    b = idToZenohId(id);
    zidBytes.set(id, b);
  }
  w.bytes(b);
}

export function readTimestamp(r: Reader): Timestamp {
  const time = r.u64();
  return new Timestamp(time, readZenohId(r));
}

export function writeTimestamp(w: Writer, ts: Timestamp): void {
  w.u64(ts.time);
  writeZenohId(w, ts.id);
}

const EMPTY = new Uint8Array(0);

/** Sample layout: key, payload, kind, encoding, opt attachment, opt timestamp, qos. */
export function writeSample(w: Writer, sample: Sample, qos: number = encodeQos(sample.qos)): void {
  w.string(sample.key);
  w.bytes(sample.kind === "delete" ? EMPTY : sample.payload);
  w.u8(sample.kind === "delete" ? 1 : 0);
  writeEncoding(w, sample.kind === "delete" ? "" : sample.encoding);
  if (sample.attachment) w.bool(true).bytes(sample.attachment);
  else w.bool(false);
  if (sample.timestamp) {
    w.bool(true);
    writeTimestamp(w, sample.timestamp);
  } else w.bool(false);
  w.u8(qos);
}
