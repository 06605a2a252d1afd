import { ZestError } from "./errors.js";
import { nowUnixNanos, rfc3339ToUnixNanos } from "./timestamp.js";

/** One end of a time range, in Unix nanoseconds. */
export interface TimeBound {
  readonly ns: bigint;
  readonly inclusive: boolean;
}

/** A range of time asked for by `_time` (either end may be open). */
export interface TimeRange {
  readonly start?: TimeBound;
  readonly end?: TimeBound;
}

const UNIT_NS: Record<string, number> = {
  ns: 1,
  u: 1e3,
  us: 1e3,
  ms: 1e6,
  s: 1e9,
  m: 60e9,
  h: 3600e9,
  d: 86400e9,
  w: 604800e9,
};
const DURATION = /^([+-]?\d+(?:\.\d+)?)(ns|us|u|ms|s|m|h|d|w)$/;

/** Parses a duration such as `1h`, `-30m`, `1.5s` into nanoseconds. */
export function parseDuration(s: string): bigint {
  const m = DURATION.exec(s.trim());
  if (!m)
    throw ZestError.badRequest(`invalid duration "${s}": expected a number and a unit (ns, u, ms, s, m, h, d, w)`);
  return BigInt(Math.round(Number(m[1]) * (UNIT_NS[m[2]!] ?? 1)));
}

/**
 * Parses a time expression: an RFC 3339 instant, `now()`, `now(-1h)` (the `_time` RFC), or
 * `now()-1h` (the InfluxDB form Variant B uses). `now` is read once per call.
 */
export function parseInstant(s: string, now: bigint = nowUnixNanos()): bigint {
  const t = plusFromForm(s.trim());
  if (t.startsWith("now(")) {
    const close = t.indexOf(")");
    if (close === -1) throw ZestError.badRequest(`invalid time "${s}": missing ")"`);
    const inner = t.slice(4, close).trim();
    let ns = now + (inner === "" ? 0n : parseDuration(inner));
    const rest = t.slice(close + 1).trim();
    if (rest !== "") {
      if (rest[0] !== "+" && rest[0] !== "-") throw ZestError.badRequest(`invalid time "${s}"`);
      ns += parseDuration(rest.replace(/^([+-])\s*/, "$1"));
    }
    return ns;
  }
  try {
    return rfc3339ToUnixNanos(t);
  } catch {
    throw ZestError.badRequest(`invalid time "${s}": expected an RFC 3339 instant, now() or now(<duration>)`);
  }
}

/**
 * Form decoding (`?_time=...&x=1`) turns an unescaped `+` into a space. Where a space can never
 * stand, the `+` is read back: before an RFC 3339 offset (`T00:00:00 02:00`) and between `now()`
 * and a shift (`now() 1h`). A space that separates date and time is left alone.
 */
function plusFromForm(t: string): string {
  if (!t.includes(" ")) return t;
  return t.replace(OFFSET_AFTER_SPACE, "$1+$2").replace(SHIFT_AFTER_SPACE, "$1+");
}
const OFFSET_AFTER_SPACE = /(\d{2}:\d{2}(?:\.\d+)?) (\d{2}:\d{2})$/;
const SHIFT_AFTER_SPACE = /^(now\([^)]*\)) +(?=\d)/;

/**
 * Parses a `_time` value: `[start..end]` (either end may be empty), `[start;duration]`, with
 * `[`/`]` for inclusive and `]`/`[` for exclusive bounds; a bare instant means exactly that time.
 */
export function parseTimeRange(s: string, now: bigint = nowUnixNanos()): TimeRange {
  const t = s.trim();
  if (t.length < 2 || !"[]".includes(t[0]!) || !"[]".includes(t[t.length - 1]!)) {
    const at = parseInstant(t, now);
    return { start: { ns: at, inclusive: true }, end: { ns: at, inclusive: true } };
  }
  const startInclusive = t[0] === "[";
  const endInclusive = t[t.length - 1] === "]";
  const body = t.slice(1, -1);
  const dots = body.indexOf("..");
  if (dots !== -1) {
    const a = body.slice(0, dots).trim();
    const b = body.slice(dots + 2).trim();
    const range: { start?: TimeBound; end?: TimeBound } = {};
    if (a !== "") range.start = { ns: parseInstant(a, now), inclusive: startInclusive };
    if (b !== "") range.end = { ns: parseInstant(b, now), inclusive: endInclusive };
    return range;
  }
  const semi = body.indexOf(";");
  if (semi !== -1) {
    const start = parseInstant(body.slice(0, semi), now);
    const end = start + parseDuration(body.slice(semi + 1));
    return { start: { ns: start, inclusive: startInclusive }, end: { ns: end, inclusive: endInclusive } };
  }
  throw ZestError.badRequest(`invalid time range "${s}": expected [start..end] or [start;duration]`);
}

/** True when `ns` falls inside `range`. */
export function inTimeRange(range: TimeRange, ns: bigint): boolean {
  const { start, end } = range;
  if (start && (start.inclusive ? ns < start.ns : ns <= start.ns)) return false;
  if (end && (end.inclusive ? ns > end.ns : ns >= end.ns)) return false;
  return true;
}
