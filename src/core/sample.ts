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

/** Builds a sample; the payload is converted to a Buffer once here. */
export function makeSample(
  key: string,
  kind: SampleKind,
  payload: Buffer | Uint8Array | string,
  encoding: Encoding,
  timestamp?: Timestamp,
): Sample {
  const buf =
    typeof payload === "string"
      ? Buffer.from(payload, "utf8")
      : Buffer.isBuffer(payload)
        ? payload
        : Buffer.from(payload.buffer, payload.byteOffset, payload.byteLength);
  return timestamp === undefined
    ? { key, kind, payload: buf, encoding }
    : { key, kind, payload: buf, encoding, timestamp };
}

/** The sample with an attachment and QoS added, when given (the same object otherwise). */
export function withSampleExtras(sample: Sample, extras: { attachment?: Buffer; qos?: Qos }): Sample {
  if (extras.attachment === undefined && extras.qos === undefined) return sample;
  return {
    ...sample,
    ...(extras.attachment ? { attachment: extras.attachment } : {}),
    ...(extras.qos ? { qos: extras.qos } : {}),
  };
}
