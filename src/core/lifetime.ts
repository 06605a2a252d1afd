/**
 * Keys with a lifetime (docs/ttl-and-leases.md): durations as users write them, the absolute
 * deadline a write carries, and the timestamp of the delete that ends it.
 */
import { ZestError } from "./errors.js";
import { ntp64Ms, Timestamp } from "./timestamp.js";

/** Shortest TTL accepted: 1 ms (a zero TTL would write a value nobody can read). */
export const MIN_TTL_MS = 1;
/** Longest TTL accepted: 365 days (longer lifetimes are permanent values in practice). */
export const MAX_TTL_MS = 365 * 24 * 3600 * 1000;
/** Longest duration text read (`8760h` is 5 characters; more is not a duration). */
const MAX_DURATION_TEXT = 24;

/**
 * A duration as users write it: a whole number and a unit, `500ms`, `30s`, `5m`, `2h`, `7d`
 * (a bare number is refused: `10` could mean seconds or milliseconds). Throws `bad_input` with a one-line reason for anything else, or outside
 * `MIN_TTL_MS`..`MAX_TTL_MS`. `what` names the field in the message (`_ttl`, `ttl`...).
 * Read with character codes (no slices, no map): every PUT with a TTL parses one.
 */
export function parseDuration(text: string, what: string): number {
  if (text.length === 0 || text.length > MAX_DURATION_TEXT)
    throw ZestError.badRequest(`${what} must be a duration such as 500ms, 30s, 5m or 2h`);
  let i = 0;
  let n = 0;
  for (; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 48 || c > 57) break;
    n = n * 10 + (c - 48);
  }
  const unit = unitMs(text, i);
  if (i === 0 || i > 12 || unit === 0)
    throw ZestError.badRequest(
      `${what} must be a duration such as 500ms, 30s, 5m or 2h (got ${JSON.stringify(text.slice(0, MAX_DURATION_TEXT))})`,
    );
  const ms = n * unit;
  if (ms < MIN_TTL_MS || ms > MAX_TTL_MS)
    throw ZestError.badRequest(`${what} must be between 1ms and 365d (got ${text})`);
  return ms;
}

/** Milliseconds of the unit `text` ends with from `at` (`ms`, `s`, `m`, `h`, `d`), 0 for any other. */
function unitMs(text: string, at: number): number {
  const left = text.length - at;
  if (left === 2) return text.charCodeAt(at) === 109 && text.charCodeAt(at + 1) === 115 ? 1 : 0;
  if (left !== 1) return 0;
  switch (text.charCodeAt(at)) {
    case 115: // s
      return 1000;
    case 109: // m
      return 60_000;
    case 104: // h
      return 3_600_000;
    case 100: // d
      return 86_400_000;
    default:
      return 0;
  }
}

/** A duration option that may be a string (`"10s"`) or a number of milliseconds. */
export function durationValue(value: unknown, what: string): number {
  if (typeof value === "string") return parseDuration(value, what);
  if (typeof value === "number" && Number.isSafeInteger(value) && value >= MIN_TTL_MS && value <= MAX_TTL_MS)
    return value;
  throw ZestError.badRequest(`${what} must be a duration such as "500ms", "30s", "5m" or "2h"`);
}

/** Unix milliseconds of a timestamp (floor). */
export function timestampMs(ts: Timestamp): number {
  return ntp64Ms(ts.time);
}

/**
 * The deadline of a write stamped `ts` living `ttlMs`: absolute (Unix milliseconds), computed
 * from the write's own timestamp, so every router and replica agrees on it.
 */
export function deadlineOf(ts: Timestamp, ttlMs: number): number {
  return timestampMs(ts) + ttlMs;
}

/** Longest deadline a peer may send (year 9999): bounds what the fabric decodes. */
export const MAX_DEADLINE_MS = 253_402_300_799_000;

/** True when `deadline` (Unix ms) is a deadline a write may carry. */
export function validDeadline(deadline: number): boolean {
  return Number.isFinite(deadline) && deadline > 0 && deadline <= MAX_DEADLINE_MS;
}

/**
 * The timestamp of the delete that expires the value written at `written`: one NTP64 tick after
 * it, with the writer's clock id. Every router holding the value makes the same delete, and any
 * later write on the key (a refresh, a new value) is newer than it, so last-writer-wins keeps it.
 */
export function expiryTimestamp(written: Timestamp): Timestamp {
  return new Timestamp(written.time + 1n, written.id);
}

/** True when a value with `deadline` (undefined or 0: none) has expired at `now` (Unix ms). */
export function isExpired(deadline: number | undefined, now: number): boolean {
  return deadline !== undefined && deadline !== 0 && deadline <= now;
}

/** Longest lease id: leases are named by users, and the name is part of an admin key. */
export const MAX_LEASE_ID = 128;
const LEASE_ID = /^[A-Za-z0-9_.-]+$/;

/** Checks a lease id (1 to 128 of `A-Z a-z 0-9 _ . -`); throws `bad_input` otherwise. */
export function checkLeaseId(id: string, what = "lease id"): string {
  if (id.length === 0 || id.length > MAX_LEASE_ID || !LEASE_ID.test(id))
    throw ZestError.badRequest(`${what} must be 1 to ${MAX_LEASE_ID} characters of A-Z, a-z, 0-9, _, . and -`);
  return id;
}

/**
 * What a zenoh client's attachment asks of a put's lifetime (docs/ttl-and-leases.md): an
 * attachment that starts with `zest:` is read as `;`-separated words, `session` (the value is
 * deleted when the writer's session closes), `ttl=<duration>`, `lease=<id>`, and is not handed
 * on to subscribers. Any other attachment is user data and undefined is returned.
 */
export interface AttachedLifetime {
  readonly ttl?: number;
  readonly lease?: string;
  readonly sessionBound?: boolean;
}

const ATTACHMENT_PREFIX = "zest:";
/** Longest lifetime attachment read (`zest:session;ttl=...;lease=<128>` fits well). */
const MAX_LIFETIME_ATTACHMENT = 256;

/** The lifetime an attachment asks, or undefined when it is not a `zest:` one; throws `bad_input` for a malformed one. */
export function attachedLifetime(attachment: Uint8Array | undefined): AttachedLifetime | undefined {
  if (attachment === undefined || attachment.length < ATTACHMENT_PREFIX.length) return undefined;
  for (let i = 0; i < ATTACHMENT_PREFIX.length; i++)
    if (attachment[i] !== ATTACHMENT_PREFIX.charCodeAt(i)) return undefined;
  if (attachment.length > MAX_LIFETIME_ATTACHMENT)
    throw ZestError.badRequest(`a zest: attachment is at most ${MAX_LIFETIME_ATTACHMENT} bytes`);
  const text = new TextDecoder().decode(attachment.subarray(ATTACHMENT_PREFIX.length));
  let ttl: number | undefined;
  let lease: string | undefined;
  let sessionBound = false;
  for (const word of text.split(";")) {
    const eq = word.indexOf("=");
    const name = eq < 0 ? word : word.slice(0, eq);
    const value = eq < 0 ? undefined : word.slice(eq + 1);
    if (name === "session" && value === undefined) sessionBound = true;
    else if (name === "ttl" && value !== undefined) ttl = parseDuration(value, "ttl");
    else if (name === "lease" && value !== undefined) lease = checkLeaseId(value, "lease");
    else
      throw ZestError.badRequest(
        `a zest: attachment holds session, ttl=<duration> or lease=<id>, not ${JSON.stringify(word.slice(0, 64))}`,
      );
  }
  if (sessionBound && lease !== undefined)
    throw ZestError.badRequest("a zest: attachment binds to the session or to a lease, not both");
  const out: { ttl?: number; lease?: string; sessionBound?: boolean } = {};
  if (ttl !== undefined) out.ttl = ttl;
  if (lease !== undefined) out.lease = lease;
  if (sessionBound) out.sessionBound = true;
  return out;
}
