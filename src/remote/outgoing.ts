/**
 * The remote API's server messages, encoded (docs/remote-api.md): each function makes one whole
 * frame to send, the counterpart of messages.ts's decoding of client frames.
 */
import { Buffer } from "node:buffer";
import type { Query } from "../core/query.js";
import type { Reply } from "../core/reply.js";
import type { Sample } from "../core/sample.js";
import { TurnMemo } from "../core/turn-memo.js";
import {
  encodeQos,
  Out,
  SEQ_FLAG,
  type WireQos,
  writeEncoding,
  writeSample,
  writeTimestamp,
  writeZenohId,
} from "./protocol.js";
import { Writer } from "./wire.js";
import type { Timestamp } from "../core/timestamp.js";

const EMPTY = Buffer.alloc(0);
/** The bytes after the header of an InSample, shared by every subscriber a sample reaches in its delivery. */
const sampleBodies = new TurnMemo<Sample, Buffer>();

/** A frame of message `id`, with the sequence number of the request it answers, if any. */
export function frame(id: number, seq?: number): Writer {
  const w = new Writer();
  if (seq === undefined) w.u8(id);
  else w.u8(id | SEQ_FLAG).u32(seq);
  return w;
}

/** InSample for subscriber `subscriberId`: the sample's body is encoded once per delivery, whatever the subscribers. */
export function sampleFrame(subscriberId: number, sample: Sample): Buffer {
  let body = sampleBodies.get(sample);
  if (body === undefined) {
    const w = new Writer(64 + sample.payload.length);
    writeSample(w, sample);
    body = Buffer.from(w.finish());
    sampleBodies.set(sample, body);
  }
  const out = Buffer.allocUnsafe(5 + body.length);
  out[0] = Out.InSample;
  out.writeUInt32LE(subscriberId, 1);
  body.copy(out, 5);
  return out;
}

/** InReply: reply samples take priority and congestion control from the get, express from the reply. */
export function replyFrame(getId: number, reply: Reply, getQos: WireQos | undefined): Buffer {
  const w = frame(Out.InReply).u32(getId);
  if (reply.kind === "err") {
    w.bool(false).bytes(reply.payload);
    writeEncoding(w, reply.encoding);
  } else {
    const s = reply.sample;
    const qos = getQos
      ? { priority: getQos.priority, congestionControl: getQos.congestionControl, express: s.qos?.express ?? false }
      : s.qos;
    w.bool(true);
    writeSample(w, s, encodeQos(qos));
  }
  return w.finish();
}

/** QueryResponseFinal of get `getId`. */
export function finalFrame(getId: number): Buffer {
  return frame(Out.QueryResponseFinal).u32(getId).finish();
}

/** InQuery: a router query for the client's queryable, named `queryId` in the client's replies. */
export function queryFrame(queryableId: number, queryId: number, query: Query): Buffer {
  const w = frame(Out.InQuery).u32(queryableId).u32(queryId).string(query.key).string(query.parameters.raw);
  if (query.payload !== undefined || query.encoding !== undefined) {
    w.bool(true)
      .bytes(query.payload ?? EMPTY)
      .bool(true);
    writeEncoding(w, query.encoding ?? "");
  } else w.bool(false).bool(false);
  if (query.attachment) w.bool(true).bytes(query.attachment);
  else w.bool(false);
  w.u8(query.parameters.has("_anyke") ? 0 : 1);
  return w.finish();
}

/** MatchingStatusUpdate of listener `listenerId`. */
export function matchingFrame(listenerId: number, matching: boolean): Buffer {
  return frame(Out.MatchingStatusUpdate).u32(listenerId).bool(matching).finish();
}

/** ResponseSessionInfo: the router's zid and the routers it reaches (no peers). */
export function sessionInfoFrame(seq: number | undefined, zid: string, routers: readonly string[]): Buffer {
  const w = frame(Out.ResponseSessionInfo, seq);
  writeZenohId(w, zid);
  w.varint(routers.length);
  for (const z of routers) writeZenohId(w, z);
  w.varint(0);
  return w.finish();
}

/** ResponseTimestamp. */
export function timestampFrame(seq: number | undefined, ts: Timestamp): Buffer {
  const w = frame(Out.ResponseTimestamp, seq);
  writeTimestamp(w, ts);
  return w.finish();
}

/** A transport to another router, as zenoh describes one: a router, no QoS lanes, unicast. */
export function writeTransport(w: Writer, zid: string): void {
  writeZenohId(w, zid);
  w.u8(1).bool(false).bool(false);
}

/** The link to another router: over NATS, from `own` (this router's zid) to `server`. */
export function writeLink(w: Writer, zid: string, own: string, server: string): void {
  writeZenohId(w, zid);
  w.string(`nats/${own}`).string(`nats/${server}`);
  w.bool(false).u16(0xffff).bool(true).varint(0).bool(false).bool(false).bool(false);
}
