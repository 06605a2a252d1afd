/**
 * The remote API's client messages, decoded (docs/remote-api.md): one binary frame into one
 * typed message, a discriminated union by name, before anything acts on it. A malformed frame is
 * a `ProtocolError` here (the connection is closed); what a well-formed message asks is decided
 * by the connection and its face afterwards.
 */
import { Buffer } from "node:buffer";
import type { Encoding } from "../core/encoding.js";
import type { Locality } from "../core/locality.js";
import type { Timestamp } from "../core/timestamp.js";
import {
  decodeQos,
  decodeQuerySettings,
  type In,
  IN_NAMES,
  type QuerySettings,
  readEncoding,
  readLocality,
  readTimestamp,
  SEQ_FLAG,
  type WireQos,
} from "./protocol.js";
import { CloseCode, ProtocolError, type Reader } from "./wire.js";

/** Name of a client message (`Put`, `DeclareSubscriber`...). */
export type RemoteMessageName = keyof typeof In;

type Id = { readonly id: number };
type Optional = {
  readonly attachment: Buffer | undefined;
  readonly timestamp: Timestamp | undefined;
};
type GetContent = {
  readonly getId: number;
  readonly parameters: string;
  readonly payload: Buffer | undefined;
  readonly encoding: Encoding | undefined;
  readonly attachment: Buffer | undefined;
};

/** The fields of each message, by name. */
interface Fields {
  DeclarePublisher: Id & { readonly key: string; readonly encoding: Encoding; readonly qos: WireQos };
  UndeclarePublisher: Id;
  DeclareSubscriber: Id & { readonly key: string; readonly origin: Locality };
  UndeclareSubscriber: Id;
  DeclareQueryable: Id & { readonly key: string; readonly complete: boolean; readonly origin: Locality };
  UndeclareQueryable: Id;
  DeclareQuerier: Id & {
    readonly key: string;
    readonly qos: WireQos;
    readonly settings: QuerySettings;
    readonly timeoutMs: number;
  };
  UndeclareQuerier: Id;
  DeclareLivelinessToken: Id & { readonly key: string };
  UndeclareLivelinessToken: Id;
  DeclareLivelinessSubscriber: Id & { readonly key: string; readonly history: boolean };
  UndeclareLivelinessSubscriber: Id;
  GetSessionInfo: object;
  GetTimestamp: object;
  Put: Optional & {
    readonly key: string;
    readonly payload: Buffer;
    readonly encoding: Encoding;
    readonly qos: WireQos;
  };
  Delete: Optional & { readonly key: string; readonly qos: WireQos };
  PublisherPut: Id & Optional & { readonly payload: Buffer; readonly encoding: Encoding | undefined };
  PublisherDelete: Id & Optional;
  Get: GetContent & {
    readonly key: string;
    readonly qos: WireQos;
    readonly settings: QuerySettings;
    readonly timeoutMs: number;
  };
  QuerierGet: GetContent & { readonly querierId: number };
  LivelinessGet: { readonly getId: number; readonly key: string };
  ReplyOk: Optional & {
    readonly queryId: number;
    readonly key: string;
    readonly payload: Buffer;
    readonly encoding: Encoding;
    readonly qos: WireQos;
  };
  ReplyDel: Optional & { readonly queryId: number; readonly key: string; readonly qos: WireQos };
  ReplyErr: { readonly queryId: number; readonly payload: Buffer; readonly encoding: Encoding };
  QueryResponseFinal: { readonly queryId: number };
  Ping: object;
  PublisherDeclareMatchingListener: Id & { readonly ownerId: number };
  UndeclareMatchingListener: Id;
  PublisherGetMatchingStatus: { readonly ownerId: number };
  QuerierDeclareMatchingListener: Id & { readonly ownerId: number };
  QuerierGetMatchingStatus: { readonly ownerId: number };
  GetTransports: object;
  GetLinks: object;
  DeclareTransportEventsListener: Id & { readonly history: boolean };
  UndeclareTransportEventsListener: Id;
  DeclareLinkEventsListener: Id & { readonly history: boolean };
  UndeclareLinkEventsListener: Id;
}

/** One client message: its name, and its fields. */
export type InMessage = { [N in RemoteMessageName]: { readonly name: N } & Fields[N] }[RemoteMessageName];

/** A decoded frame: the message, and the sequence number of a request that expects a response. */
export interface InFrame {
  readonly message: InMessage;
  readonly seq: number | undefined;
}

const bytes = (r: Reader): Buffer => Buffer.from(r.bytes());
const optBytes = (r: Reader): Buffer | undefined => r.optional(() => bytes(r));
const optional = (r: Reader): Optional => ({
  attachment: optBytes(r),
  timestamp: r.optional(() => readTimestamp(r)),
});

/** Decodes one frame; throws a `ProtocolError` for an unknown message or a malformed one. */
export function decodeFrame(r: Reader): InFrame {
  const header = r.u8();
  const seq = header & SEQ_FLAG ? r.u32() : undefined;
  const message = decodeMessage(header & ~SEQ_FLAG, r);
  r.end();
  return { message, seq };
}

function decodeMessage(id: number, r: Reader): InMessage {
  const name = IN_NAMES[id] as RemoteMessageName | undefined;
  switch (name) {
    case "Ping":
    case "GetSessionInfo":
    case "GetTimestamp":
    case "GetTransports":
    case "GetLinks":
      return { name };
    case "UndeclarePublisher":
    case "UndeclareSubscriber":
    case "UndeclareQueryable":
    case "UndeclareQuerier":
    case "UndeclareLivelinessToken":
    case "UndeclareLivelinessSubscriber":
    case "UndeclareMatchingListener":
    case "UndeclareTransportEventsListener":
    case "UndeclareLinkEventsListener":
      return { name, id: r.u32() };
    case "DeclarePublisher":
      return { name, id: r.u32(), key: r.string(), encoding: readEncoding(r), qos: decodeQos(r.u8()) };
    case "DeclareSubscriber":
      return { name, id: r.u32(), key: r.string(), origin: readLocality(r.u8()) };
    case "DeclareQueryable":
      return { name, id: r.u32(), key: r.string(), complete: r.bool(), origin: readLocality(r.u8()) };
    case "DeclareQuerier":
      return {
        name,
        id: r.u32(),
        key: r.string(),
        qos: decodeQos(r.u8()),
        settings: decodeQuerySettings(r.u8()),
        timeoutMs: r.u32(),
      };
    case "DeclareLivelinessToken":
      return { name, id: r.u32(), key: r.string() };
    case "DeclareLivelinessSubscriber":
      return { name, id: r.u32(), key: r.string(), history: r.bool() };
    case "Put": {
      const key = r.string();
      const payload = bytes(r);
      const encoding = readEncoding(r);
      const opt = optional(r);
      return { name, key, payload, encoding, ...opt, qos: decodeQos(r.u8()) };
    }
    case "Delete": {
      const key = r.string();
      const opt = optional(r);
      return { name, key, ...opt, qos: decodeQos(r.u8()) };
    }
    case "PublisherPut": {
      const id = r.u32();
      const payload = bytes(r);
      const encoding = r.optional(() => readEncoding(r));
      return { name, id, payload, encoding, ...optional(r) };
    }
    case "PublisherDelete":
      return { name, id: r.u32(), ...optional(r) };
    case "Get": {
      const getId = r.u32();
      const key = r.string();
      const content = getContent(r);
      return {
        name,
        getId,
        key,
        ...content,
        qos: decodeQos(r.u8()),
        settings: decodeQuerySettings(r.u8()),
        timeoutMs: r.u32(),
      };
    }
    case "QuerierGet": {
      const getId = r.u32();
      const querierId = r.u32();
      return { name, getId, querierId, ...getContent(r) };
    }
    case "LivelinessGet": {
      const getId = r.u32();
      const key = r.string();
      r.u32(); // timeout: the answer is local and immediate
      return { name, getId, key };
    }
    case "ReplyOk": {
      const queryId = r.u32();
      const key = r.string();
      const payload = bytes(r);
      const encoding = readEncoding(r);
      const opt = optional(r);
      return { name, queryId, key, payload, encoding, ...opt, qos: decodeQos(r.u8()) };
    }
    case "ReplyDel": {
      const queryId = r.u32();
      const key = r.string();
      const opt = optional(r);
      return { name, queryId, key, ...opt, qos: decodeQos(r.u8()) };
    }
    case "ReplyErr":
      return { name, queryId: r.u32(), payload: bytes(r), encoding: readEncoding(r) };
    case "QueryResponseFinal":
      return { name, queryId: r.u32() };
    case "PublisherDeclareMatchingListener":
    case "QuerierDeclareMatchingListener":
      return { name, id: r.u32(), ownerId: r.u32() };
    case "PublisherGetMatchingStatus":
    case "QuerierGetMatchingStatus":
      return { name, ownerId: r.u32() };
    case "DeclareTransportEventsListener":
    case "DeclareLinkEventsListener":
      return { name, id: r.u32(), history: r.bool() };
    case undefined:
      throw new ProtocolError(CloseCode.PROTOCOL_ERROR, `unknown message id ${id}`);
  }
}

/** The part of a get after its key: parameters, payload and encoding, attachment. */
function getContent(r: Reader): Omit<GetContent, "getId"> {
  const parameters = r.string();
  const payload = optBytes(r);
  const encoding = r.optional(() => readEncoding(r));
  return { parameters, payload, encoding, attachment: optBytes(r) };
}
