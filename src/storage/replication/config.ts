/**
 * A storage's `replication` section, with zenoh 1.x's names and meanings (docs/replication.md):
 * `interval` (seconds), `sub_intervals`, `hot`, `warm` (counts of intervals) and
 * `propagation_delay` (milliseconds); `tombstone_retention` (seconds) is zest's own.
 */
import { ZestError } from "../../core/errors.js";

/** The replication settings of one storage, in milliseconds and counts. */
export interface ReplicationSettings {
  /** Length of one interval, the unit of the warm era (ms). */
  readonly intervalMs: number;
  /** Sub-intervals per interval, the unit of the hot era. */
  readonly subIntervals: number;
  /** Intervals in the hot era (the newest; compared sub-interval by sub-interval). */
  readonly hot: number;
  /** Intervals in the warm era (before the hot one; compared interval by interval). */
  readonly warm: number;
  /** Differences newer than this are left to the ordinary write path (ms). */
  readonly propagationDelayMs: number;
  /** How long a deletion is remembered, so that no replica brings the key back (ms). */
  readonly tombstoneRetentionMs: number;
}

/** zenoh 1.x's defaults, and a day of tombstones. */
export const DEFAULT_REPLICATION: ReplicationSettings = {
  intervalMs: 10_000,
  subIntervals: 5,
  hot: 6,
  warm: 30,
  propagationDelayMs: 250,
  tombstoneRetentionMs: 86_400_000,
};

/** Bounds on every field: a config value outside them is refused. */
const LIMITS = {
  interval: [0.1, 3_600],
  sub_intervals: [1, 100],
  hot: [1, 100],
  warm: [0, 1_000],
  propagation_delay: [0, 60_000],
  tombstone_retention: [1, 365 * 86_400],
} as const;

type Field = keyof typeof LIMITS;
const FIELDS = Object.keys(LIMITS) as Field[];

/**
 * Reads a storage's `replication` value: `false` turns replication off, `true` or absent takes
 * the defaults, an object overrides them field by field. Returns undefined when off. Throws a
 * `bad_input` ZestError naming the field at fault.
 */
export function parseReplication(raw: unknown, storage: string): ReplicationSettings | undefined {
  if (raw === false) return undefined;
  if (raw === undefined || raw === true) return DEFAULT_REPLICATION;
  if (typeof raw !== "object" || raw === null || Array.isArray(raw))
    throw ZestError.badRequest(`\`replication\` of storage ${storage} must be true, false or an object`);
  const obj = raw as Record<string, unknown>;
  for (const k of Object.keys(obj))
    if (!(FIELDS as string[]).includes(k) && k !== "enabled")
      throw ZestError.badRequest(
        `unknown field \`${k}\` in \`replication\` of storage ${storage} (known: enabled, ${FIELDS.join(", ")})`,
      );
  if (Object.hasOwn(obj, "enabled")) {
    if (typeof obj.enabled !== "boolean")
      throw ZestError.badRequest(`\`replication.enabled\` of storage ${storage} must be a boolean`);
    if (!obj.enabled) return undefined;
  }
  const num = (f: Field, integer: boolean): number | undefined => {
    if (!Object.hasOwn(obj, f)) return undefined;
    const v = obj[f];
    const [min, max] = LIMITS[f];
    if (typeof v !== "number" || !Number.isFinite(v) || v < min || v > max || (integer && !Number.isInteger(v)))
      throw ZestError.badRequest(
        `\`replication.${f}\` of storage ${storage} must be ${integer ? "an integer" : "a number"} from ${min} to ${max}`,
      );
    return v;
  };
  const d = DEFAULT_REPLICATION;
  const interval = num("interval", false);
  const settings: ReplicationSettings = {
    intervalMs: interval === undefined ? d.intervalMs : Math.round(interval * 1000),
    subIntervals: num("sub_intervals", true) ?? d.subIntervals,
    hot: num("hot", true) ?? d.hot,
    warm: num("warm", true) ?? d.warm,
    propagationDelayMs: num("propagation_delay", true) ?? d.propagationDelayMs,
    tombstoneRetentionMs: (num("tombstone_retention", false) ?? d.tombstoneRetentionMs / 1000) * 1000,
  };
  if (settings.intervalMs < settings.subIntervals)
    throw ZestError.badRequest(`\`replication.sub_intervals\` of storage ${storage} must be below the interval in ms`);
  if (settings.propagationDelayMs >= settings.intervalMs)
    throw ZestError.badRequest(
      `\`replication.propagation_delay\` of storage ${storage} must be shorter than its interval (as in zenoh)`,
    );
  const eraMs = (settings.hot + settings.warm) * settings.intervalMs;
  if (settings.tombstoneRetentionMs < eraMs)
    throw ZestError.badRequest(
      `\`replication.tombstone_retention\` of storage ${storage} must cover the hot and warm eras (${eraMs / 1000} s)`,
    );
  return settings;
}
