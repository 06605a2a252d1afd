import { Buffer } from "node:buffer";
import type { Encoding } from "./encoding.js";
import type { Qos } from "./qos.js";
import type { Timestamp } from "./timestamp.js";

/**
 * Who first sent a sample, a query or a reply (zenoh's source info): the sending entity (its
 * session's ZenohId and the entity's id within it) and that entity's sequence number. The router
 * carries it unchanged from the door it came in by to every door it leaves by.
 */
export interface SourceInfo {
  /** The source session's ZenohId, lowercase hex. */
  readonly zid: string;
  /** The entity (publisher, querier, queryable...) within that session. */
  readonly eid: number;
  readonly sn: number;
}

/**
 * Protocol extensions a door forwards without reading them, as zenoh's router does
 * (docs/zenoh-protocol.md, "Extensions carried"): each one whole, as it came on the wire (its
 * header byte with the "more" flag cleared, then its body). `network`: those of the network
 * message (PUSH, REQUEST, RESPONSE: zenoh's timestamp stack and network timestamp); `body`: those
 * of the message inside it (PUT, DEL, QUERY) that the door does not know. Only a door of the
 * same protocol writes them out again.
 */
export interface WireExtensions {
  readonly network?: readonly Buffer[];
  readonly body?: readonly Buffer[];
}

/** What travels beside a sample's payload, when given: the extras `makeSample` and `withSampleExtras` add. */
export interface SampleExtras {
  readonly attachment?: Buffer;
  readonly qos?: Qos;
  readonly sourceInfo?: SourceInfo;
  readonly extensions?: WireExtensions;
}

/** What a sample does to its key. */
export type SampleKind = "put" | "delete";

/**
 * One write travelling through the router: parsed once at the edge, then delivered to every
 * matching subscriber and storage unchanged.
 */
export interface Sample {
  /** Canonical key expression (usually a plain key; a wildcard put/delete applies to matching keys). */
  readonly key: string;
  readonly kind: SampleKind;
  readonly payload: Buffer;
  readonly encoding: Encoding;
  /** Absent only for replies computed on demand (evals, admin entries). */
  readonly timestamp?: Timestamp;
  /** User bytes travelling beside the payload (Zenoh 1.x attachment). */
  readonly attachment?: Buffer;
  /** Priority, congestion control and express as the sender gave them (default: none given). */
  readonly qos?: Qos;
  /**
   * When the value expires, in Unix milliseconds (puts only; absent: never). Absolute and
   * computed from the write's timestamp, so every router and storage agrees on it
   * (docs/ttl-and-leases.md).
   */
  readonly deadline?: number;
  /** Who sent it first (zenoh's source info), carried unchanged. */
  readonly sourceInfo?: SourceInfo;
  /** Wire extensions carried unchanged to the subscribers of the same protocol. */
  readonly extensions?: WireExtensions;
  /**
   * Between routers only: the shared stores (`StorageBackend.store`) that the sending router's
   * own storages write this sample to, its write failing if they cannot. A storage of one of
   * them on the receiving router has nothing to write (docs/conditional-writes.md, "Shared
   * stores"). Set by the router on the copy it sends; plain keys only.
   */
  readonly heldIn?: readonly string[];
}

/**
 * A condition on a write, checked by each storage holding the key atomically with the write
 * (see docs/storage-contract.md). `ifVersion`: only when the key holds that version (from a
 * previous read). `ifAbsent`: only when the key holds no value (nothing, or a tombstone).
 */
export interface WriteCondition {
  readonly ifVersion?: string;
  readonly ifAbsent?: boolean;
}

/**
 * Builds a sample; the payload is converted to a Buffer once here. `extras`: its attachment and
 * QoS, when given (the sample `withSampleExtras` would make, made at once).
 */
export function makeSample(
  key: string,
  kind: SampleKind,
  payload: Buffer | Uint8Array | string,
  encoding: Encoding,
  timestamp?: Timestamp,
  extras?: SampleExtras,
): Sample {
  const buf =
    typeof payload === "string"
      ? Buffer.from(payload, "utf8")
      : Buffer.isBuffer(payload)
        ? payload
        : Buffer.from(payload.buffer, payload.byteOffset, payload.byteLength);
  if (
    extras !== undefined &&
    (extras.attachment !== undefined ||
      extras.qos !== undefined ||
      extras.sourceInfo !== undefined ||
      extras.extensions !== undefined)
  ) {
    // Field by field, in `withSampleExtras`'s order: the same shape as the samples it makes.
    const out: { -readonly [K in keyof Sample]: Sample[K] } = { key, kind, payload: buf, encoding };
    if (timestamp !== undefined) out.timestamp = timestamp;
    if (extras.attachment !== undefined) out.attachment = extras.attachment;
    if (extras.qos !== undefined) out.qos = extras.qos;
    if (extras.sourceInfo !== undefined) out.sourceInfo = extras.sourceInfo;
    if (extras.extensions !== undefined) out.extensions = extras.extensions;
    return out;
  }
  return timestamp === undefined
    ? { key, kind, payload: buf, encoding }
    : { key, kind, payload: buf, encoding, timestamp };
}

/**
 * The sample with an attachment, QoS, deadline, source info and wire extensions added, when
 * given (the same object otherwise).
 */
export function withSampleExtras(sample: Sample, extras: SampleExtras & { readonly deadline?: number }): Sample {
  const { attachment, qos, deadline, sourceInfo, extensions } = extras;
  if (
    attachment === undefined &&
    qos === undefined &&
    deadline === undefined &&
    sourceInfo === undefined &&
    extensions === undefined
  )
    return sample;
  // Built field by field: every put of a zenoh-ts publisher carries QoS, and spreading the sample
  // with conditional objects took 1.2 µs a call, 15 ns this way (a tenth of the router's work per
  // remote put, in the profile).
  const out: { -readonly [K in keyof Sample]: Sample[K] } = {
    key: sample.key,
    kind: sample.kind,
    payload: sample.payload,
    encoding: sample.encoding,
  };
  if (sample.timestamp !== undefined) out.timestamp = sample.timestamp;
  const a = attachment ?? sample.attachment;
  if (a !== undefined) out.attachment = a;
  const q = qos ?? sample.qos;
  if (q !== undefined) out.qos = q;
  const d = deadline ?? sample.deadline;
  if (d !== undefined && sample.kind === "put") out.deadline = d;
  const si = sourceInfo ?? sample.sourceInfo;
  if (si !== undefined) out.sourceInfo = si;
  const x = extensions ?? sample.extensions;
  if (x !== undefined) out.extensions = x;
  return out;
}

/**
 * The sample with a deadline (a put's; a delete is returned as it is), in one object literal:
 * what `withSampleExtras` makes for a deadline alone, without its extras object (every write with
 * a TTL makes one).
 */
export function withDeadline(sample: Sample, deadline: number): Sample {
  if (
    sample.kind !== "put" ||
    sample.attachment !== undefined ||
    sample.qos !== undefined ||
    sample.sourceInfo !== undefined ||
    sample.extensions !== undefined
  )
    return withSampleExtras(sample, { deadline });
  const { key, kind, payload, encoding, timestamp } = sample;
  return timestamp === undefined
    ? { key, kind, payload, encoding, deadline }
    : { key, kind, payload, encoding, timestamp, deadline };
}
