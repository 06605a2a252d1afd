/**
 * Timestamps as Zenoh makes them: an NTP64 time (upper 32 bits = Unix seconds, lower 32 bits =
 * fraction of a second) plus the id of the clock that made it. Ordering is by time, then id,
 * so two routers never produce equal timestamps.
 */

import { performance } from "node:perf_hooks";
import { endianness } from "node:os";

const FRAC = 0x1_0000_0000n;
const NANOS = 1_000_000_000n;

/** A point in time from a hybrid logical clock, unique per router. */
export class Timestamp {
  /** NTP64 time. */
  readonly time: bigint;
  /** Uppercase hex id of the clock (router id). */
  readonly id: string;
  private text: string | undefined;

  constructor(time: bigint, id: string) {
    this.time = time;
    this.id = id;
  }

  /** Negative, zero or positive as this is before, equal to or after `other`. */
  compare(other: Timestamp): number {
    if (this.time !== other.time) return this.time < other.time ? -1 : 1;
    return this.id < other.id ? -1 : this.id > other.id ? 1 : 0;
  }

  /** Nanoseconds since the Unix epoch (floor of the NTP64 fraction, as Zenoh prints it). */
  get unixNanos(): bigint {
    return ntp64ToUnixNanos(this.time);
  }

  /** `2022-03-29T10:19:38.988830998Z`: RFC 3339, UTC, exactly 9 fraction digits. */
  toRfc3339(): string {
    // The cached `toString` form starts with it; one cached string per timestamp keeps stored
    // values small (a million stored keys hold a million timestamps).
    const s = this.toString();
    return s.slice(0, s.lastIndexOf("/"));
  }

  /** `<RFC 3339>/<ID>`, the Variant A `time` field (computed once: timestamps never change). */
  toString(): string {
    this.text ??= `${ntp64ToRfc3339(this.time)}/${this.id}`;
    return this.text;
  }

  /** Compact form for storage: `<time as 16 hex digits>/<id>`; sorts like `compare`. */
  encode(): string {
    return `${this.time.toString(16).padStart(16, "0")}/${this.id}`;
  }

  /** Inverse of `encode`. */
  static decode(s: string): Timestamp {
    const slash = s.indexOf("/");
    if (slash <= 0) throw new Error(`malformed timestamp "${s}"`);
    return new Timestamp(BigInt(`0x${s.slice(0, slash)}`), s.slice(slash + 1));
  }

  /** Parses the `toString` form back (`<RFC 3339>/<ID>`). */
  static parse(s: string): Timestamp {
    const slash = s.lastIndexOf("/");
    if (slash <= 0) throw new Error(`malformed timestamp "${s}"`);
    return new Timestamp(unixNanosToNtp64(rfc3339ToUnixNanos(s.slice(0, slash))), s.slice(slash + 1));
  }
}

/** NTP64 → nanoseconds since the Unix epoch. */
export function ntp64ToUnixNanos(t: bigint): bigint {
  return (t >> 32n) * NANOS + (((t & (FRAC - 1n)) * NANOS) >> 32n);
}

/** Nanoseconds since the Unix epoch → NTP64 (rounded up so the round trip is exact). */
export function unixNanosToNtp64(ns: bigint): bigint {
  const secs = ns / NANOS;
  const rem = ns % NANOS;
  return (secs << 32n) + ((rem << 32n) + NANOS - 1n) / NANOS;
}

/**
 * NTP64 → `YYYY-MM-DDTHH:MM:SS.nnnnnnnnnZ`, as `unixNanosToRfc3339(ntp64ToUnixNanos(t))` spells
 * it. Every entry of a GET answer prints its time, so this makes no BigInt (the two halves are
 * read back from memory), uses exact double arithmetic, reuses the date part while the day
 * does not change, and spells the fraction from a table of three-digit groups.
 */
export function ntp64ToRfc3339(t: bigint): string {
  split64[0] = t;
  const secs = split32[HIGH]!;
  const frac = split32[LOW]!;
  // floor(frac * 1e9 / 2^32) without a product past 2^53: with frac = hi * 2^16 + lo,
  // floor((hi * 1e9 + floor(lo * 1e9 / 2^16)) / 2^16); every step is an exact integer below 2^53.
  const hi = Math.floor(frac / 65536);
  const lo = frac - hi * 65536;
  const nanos = Math.floor((hi * 1e9 + Math.floor((lo * 1e9) / 65536)) / 65536);
  // The date is read from a cache of the last day; the time of day is spelled from tables (the
  // entries of a wide answer come in key order, so their seconds seldom repeat one after another).
  const day = Math.floor(secs / 86400);
  if (day !== lastDay) {
    lastDay = day;
    lastDayText = new Date(day * 86_400_000).toISOString().slice(0, 11);
  }
  const inDay = secs - day * 86400;
  const hour = Math.floor(inDay / 3600);
  const minute = Math.floor(inDay / 60) - hour * 60;
  const second = inDay - hour * 3600 - minute * 60;
  const ms = Math.floor(nanos / 1e6);
  const us = Math.floor(nanos / 1e3) - ms * 1000;
  return `${lastDayText}${DIGITS2[hour]}:${DIGITS2[minute]}:${DIGITS2[second]}.${DIGITS3[ms]}${DIGITS3[us]}${DIGITS3[nanos % 1000]}Z`;
}

/**
 * NTP64 → Unix milliseconds (floor), read from the two halves as `ntp64ToRfc3339` reads them: no
 * BigInt made (every write with a TTL computes its deadline from its timestamp this way).
 */
export function ntp64Ms(t: bigint): number {
  split64[0] = t;
  return split32[HIGH]! * 1000 + Math.floor(split32[LOW]! / 4_294_967.296);
}

/** Where `ntp64ToRfc3339` splits a time into its seconds (`HIGH`) and its fraction (`LOW`). */
const split64 = new BigUint64Array(1);
const split32 = new Uint32Array(split64.buffer);
const [HIGH, LOW] = endianness() === "LE" ? [1, 0] : [0, 1];
/** `000` to `999`. */
const DIGITS3 = Array.from({ length: 1000 }, (_, i) => String(i).padStart(3, "0"));

/** `00` to `99`. */
const DIGITS2 = DIGITS3.slice(0, 100).map((d) => d.slice(1));

/** The day (since the epoch) `ntp64ToRfc3339` printed last, and its `YYYY-MM-DDT`. */
let lastDay = -1;
let lastDayText = "";

/** Unix nanoseconds → `YYYY-MM-DDTHH:MM:SS.nnnnnnnnnZ`. */
export function unixNanosToRfc3339(ns: bigint): string {
  const secs = ns / NANOS;
  const nanos = ns % NANOS;
  const iso = new Date(Number(secs) * 1000).toISOString(); // ...T..:..:..SSS Z
  return `${iso.slice(0, 19)}.${nanos.toString().padStart(9, "0")}Z`;
}

const RFC3339 = /^(\d{4}-\d{2}-\d{2})[Tt ](\d{2}:\d{2}:\d{2})(?:\.(\d{1,9}))?(Z|z|[+-]\d{2}:\d{2})$/;

/** Parses an RFC 3339 instant with up to nanosecond precision; throws on anything else. */
export function rfc3339ToUnixNanos(s: string): bigint {
  const m = RFC3339.exec(s);
  if (!m) throw new Error(`"${s}" is not an RFC 3339 time`);
  const [, day, clock, frac = "", zone] = m;
  const ms = Date.parse(`${day}T${clock}${zone === "z" ? "Z" : zone}`);
  if (Number.isNaN(ms)) throw new Error(`"${s}" is not an RFC 3339 time`);
  return BigInt(ms) * 1_000_000n + BigInt(frac.padEnd(9, "0"));
}

/** The process's start, in Unix milliseconds: fixed, and a call into the runtime each time it is read. */
const TIME_ORIGIN = performance.timeOrigin;

/** Current wall-clock time in Unix nanoseconds, with sub-millisecond resolution. */
export function nowUnixNanos(): bigint {
  const ms = TIME_ORIGIN + performance.now();
  return BigInt(Math.floor(ms * 1000)) * 1000n;
}

/** Current wall-clock time as NTP64, computed with as few BigInt operations as possible (hot path). */
export function nowNtp64(): bigint {
  const ms = TIME_ORIGIN + performance.now();
  const secs = Math.floor(ms / 1000);
  return ntp64FromMicros(secs, Math.min(999_999, Math.floor((ms - secs * 1000) * 1000)));
}

/**
 * NTP64 of `secs` seconds and `micros` microseconds since the epoch, rounded exactly as
 * `unixNanosToNtp64` rounds (so the time prints and parses back to the same value), with two
 * BigInt operations instead of BigInt division: micros * 2^32 < 2^53 is exact in a double.
 */
export function ntp64FromMicros(secs: number, micros: number): bigint {
  const x = micros * 4294967296;
  let q = Math.floor(x / 1e6);
  let r = x - q * 1e6;
  if (r < 0) {
    q--;
    r += 1e6;
  } else if (r >= 1e6) {
    q++;
    r -= 1e6;
  }
  return secondsNtp64(secs) | BigInt(r > 0 ? q + 1 : q);
}

/** `secs << 32` as a BigInt, cached: it changes once a second, and the clock asks for it on every put. */
let cachedSecs = -1;
let cachedSecsNtp64 = 0n;
function secondsNtp64(secs: number): bigint {
  if (secs !== cachedSecs) {
    cachedSecsNtp64 = BigInt(secs) << 32n;
    cachedSecs = secs;
  }
  return cachedSecsNtp64;
}

/** At most this many stamps share one reading of the wall clock (`HLC.newTimestampInTurn`). */
const STAMPS_PER_READING = 1024;

/**
 * Hybrid logical clock: wall-clock time, made strictly monotonic per clock, and advanced past
 * any remote timestamp it observes (so causality holds across routers).
 */
export class HLC {
  /** Uppercase hex id stamped on every timestamp. */
  readonly id: string;
  private last = 0n;

  constructor(id: string) {
    this.id = id;
  }

  /** A new timestamp, strictly greater than every one this clock made or observed. */
  newTimestamp(): Timestamp {
    const now = nowNtp64();
    this.last = now > this.last ? now : this.last + 1n;
    return new Timestamp(this.last, this.id);
  }

  /**
   * A new timestamp as `newTimestamp` gives, reading the wall clock once per event-loop turn (and
   * at least every `STAMPS_PER_READING` stamps): the turn's later stamps are each one tick
   * (2^-32 s) past the last, so they stay unique and strictly increasing. For a door that stamps a
   * whole batch of writes in one turn (the zenoh door): the clock read and its conversion were a
   * tenth of its cost per write.
   */
  newTimestampInTurn(): Timestamp {
    if (this.turnStamps > 0) {
      this.turnStamps--;
      this.last += 1n;
      return new Timestamp(this.last, this.id);
    }
    const ts = this.newTimestamp();
    this.turnStamps = STAMPS_PER_READING - 1;
    if (!this.turnEndQueued) {
      this.turnEndQueued = true;
      queueMicrotask(this.endTurn);
    }
    return ts;
  }

  /** Stamps `newTimestampInTurn` may still give without reading the clock. */
  private turnStamps = 0;
  private turnEndQueued = false;
  private readonly endTurn = (): void => {
    this.turnStamps = 0;
    this.turnEndQueued = false;
  };

  /** Observes a timestamp from elsewhere, so later local ones order after it. */
  observe(ts: Timestamp): void {
    if (ts.time > this.last) this.last = ts.time;
  }
}

/**
 * A zest id (1 to 16 bytes of hex) as Zenoh's 16-byte ZenohId. Zenoh treats the id as a
 * little-endian u128 and prints it most significant byte first, so the hex is read as a number:
 * `AB12` becomes the bytes `12 AB 00 … 00`, which Zenoh prints `…00ab12`. See docs/remote-api.md.
 */
export function idToZenohId(id: string): Uint8Array {
  const out = new Uint8Array(16);
  const hex = id.length % 2 === 0 ? id : `0${id}`;
  const n = Math.min(16, hex.length / 2);
  for (let i = 0; i < n; i++) out[i] = Number.parseInt(hex.slice(hex.length - 2 * (i + 1), hex.length - 2 * i), 16);
  return out;
}

/** A 16-byte ZenohId → zest id: uppercase hex of the number, without leading zero bytes (at least one byte). */
export function idFromZenohId(zid: Uint8Array): string {
  let top = zid.length - 1;
  while (top > 0 && zid[top] === 0) top--;
  let s = "";
  for (let i = top; i >= 0; i--) s += zid[i]!.toString(16).padStart(2, "0");
  return s.toUpperCase();
}
