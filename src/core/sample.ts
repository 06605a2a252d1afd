import { Buffer } from "node:buffer";
import type { Encoding } from "./encoding.js";
import type { Qos } from "./qos.js";
import type { Timestamp } from "./timestamp.js";

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
  extras?: { readonly attachment?: Buffer; readonly qos?: Qos },
): Sample {
  const buf =
    typeof payload === "string"
      ? Buffer.from(payload, "utf8")
      : Buffer.isBuffer(payload)
        ? payload
        : Buffer.from(payload.buffer, payload.byteOffset, payload.byteLength);
  if (extras !== undefined && (extras.attachment !== undefined || extras.qos !== undefined)) {
    // Field by field, in `withSampleExtras`'s order: the same shape as the samples it makes.
    const out: { -readonly [K in keyof Sample]: Sample[K] } = { key, kind, payload: buf, encoding };
    if (timestamp !== undefined) out.timestamp = timestamp;
    if (extras.attachment !== undefined) out.attachment = extras.attachment;
    if (extras.qos !== undefined) out.qos = extras.qos;
    return out;
  }
  return timestamp === undefined
    ? { key, kind, payload: buf, encoding }
    : { key, kind, payload: buf, encoding, timestamp };
}

/** The sample with an attachment and QoS added, when given (the same object otherwise). */
export function withSampleExtras(
  sample: Sample,
  extras: { attachment?: Buffer; qos?: Qos; deadline?: number },
): Sample {
  const { attachment, qos, deadline } = extras;
  if (attachment === undefined && qos === undefined && deadline === undefined) return sample;
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
  return out;
}

/**
 * The sample with a deadline (a put's; a delete is returned as it is), in one object literal:
 * what `withSampleExtras` makes for a deadline alone, without its extras object (every write with
 * a TTL makes one).
 */
export function withDeadline(sample: Sample, deadline: number): Sample {
  if (sample.kind !== "put" || sample.attachment !== undefined || sample.qos !== undefined)
    return withSampleExtras(sample, { deadline });
  const { key, kind, payload, encoding, timestamp } = sample;
  return timestamp === undefined
    ? { key, kind, payload, encoding, deadline }
    : { key, kind, payload, encoding, timestamp, deadline };
}
