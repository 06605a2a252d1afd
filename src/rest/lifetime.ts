/**
 * A write's lifetime over HTTP (docs/ttl-and-leases.md): `?_ttl=<duration>` and
 * `?_lease=<id>` on a PUT or PATCH, in both variants, and the `Zest-Expires` header that shows a
 * single-key GET's deadline.
 */
import { ZestError } from "../core/errors.js";
import { checkLeaseId, parseDuration } from "../core/lifetime.js";
import type { Reply } from "../core/reply.js";
import type { Sample } from "../core/sample.js";
import { Parameters } from "../core/selector.js";

/** What a write's query string asks of its lifetime. */
export interface WriteLifetime {
  /** Milliseconds the value lives. */
  readonly ttl?: number;
  /** The lease the key is attached to. */
  readonly lease?: string;
}

/** Longest query string a write reads (its parameters are a few short words). */
const MAX_WRITE_QUERY = 1024;

/**
 * The lifetime asked by a write's query string (`parameters`: as the variant's codec gives it),
 * or undefined when it asks none. Throws `bad_input` with a one-line reason for a bad duration
 * or lease id, or for `_ttl`/`_lease` on a DELETE.
 */
export function writeLifetime(method: "PUT" | "PATCH" | "DELETE", parameters: string): WriteLifetime | undefined {
  if (parameters.length > MAX_WRITE_QUERY)
    throw ZestError.badRequest(`a write's query string is at most ${MAX_WRITE_QUERY} characters`);
  let ttlText: string | undefined;
  let lease: string | undefined;
  if (isPlainQuery(parameters)) {
    // One pass over the entries (split at `&` and `;`), as `Parameters.get` reads them: the first
    // entry of a name wins, and a name without `=` has the value "".
    const n = parameters.length;
    let start = 0;
    while (start < n) {
      let end = start;
      let eq = -1;
      for (; end < n; end++) {
        const c = parameters.charCodeAt(end);
        if (c === 38 || c === 59) break;
        if (c === 61 && eq === -1) eq = end;
      }
      const nameEnd = eq === -1 ? end : eq;
      if (ttlText === undefined && isName(parameters, start, nameEnd, "_ttl"))
        ttlText = eq === -1 ? "" : parameters.slice(eq + 1, end);
      else if (lease === undefined && isName(parameters, start, nameEnd, "_lease"))
        lease = eq === -1 ? "" : parameters.slice(eq + 1, end);
      start = end + 1;
    }
  } else {
    const p = new Parameters(parameters);
    ttlText = p.get("_ttl");
    lease = p.get("_lease");
  }
  if (ttlText === undefined && lease === undefined) return undefined;
  if (method === "DELETE") throw ZestError.badRequest("_ttl and _lease apply to PUT and PATCH, not DELETE");
  const ttl = ttlText === undefined ? undefined : parseDuration(ttlText, "_ttl");
  if (lease !== undefined) checkLeaseId(lease, "_lease");
  return ttl === undefined ? { lease } : lease === undefined ? { ttl } : { ttl, lease };
}

/**
 * True when `query` reads the same with or without `Parameters`' decoding: printable ASCII with
 * no space to trim, no `%` or `+` to decode, no `(...)` form and no `[...]` (a `_time` range).
 * The writes' query strings are that (`_ttl=30s`), and a PUT with a TTL is a hot path
 * (docs/ttl-and-leases.md, "Cost"): they are read in one pass rather than into a parsed map.
 */
function isPlainQuery(query: string): boolean {
  for (let i = 0; i < query.length; i++) {
    const c = query.charCodeAt(i);
    // Space and controls, `%` `(` `)` `+`, `[` `]`, DEL and beyond.
    if (c <= 0x20 || c === 0x25 || c === 0x28 || c === 0x29 || c === 0x2b || c === 0x5b || c === 0x5d || c >= 0x7f)
      return false;
  }
  return true;
}

/** True when `text` from `start` to `end` is `name`. */
function isName(text: string, start: number, end: number, name: string): boolean {
  if (end - start !== name.length) return false;
  for (let i = 0; i < name.length; i++) if (text.charCodeAt(start + i) !== name.charCodeAt(i)) return false;
  return true;
}

/** The response header naming a value's deadline on a single-key GET. */
export const EXPIRES_HEADER = "zest-expires";

/** A deadline (Unix ms) as the `Zest-Expires` header shows it: RFC 3339, UTC, milliseconds. */
export function expiresValue(deadline: number): string {
  return new Date(deadline).toISOString();
}

/** A deadline as an entry's `"expires"` field shows it (`?_expires=true`): the header's text, or null. */
export function expiresJson(deadline: number | undefined): string {
  return deadline === undefined ? "null" : `"${expiresValue(deadline)}"`;
}

/**
 * `_expires` on a GET (docs/ttl-and-leases.md): `true`, `false` or empty (true); anything else
 * is a 400.
 */
export function expiresWanted(value: string | undefined): boolean {
  if (value === undefined || value === "false") return false;
  if (value === "true" || value === "") return true;
  throw ZestError.badRequest(`_expires takes true or false, not ${JSON.stringify(value.slice(0, 32))}`);
}

/**
 * `cors` plus the `Zest-Expires` header when the newest reply for exactly `key` (the one a
 * single-key GET shows) has a deadline; `cors` itself otherwise (no copy on the common path).
 */
export function withExpires(
  cors: Record<string, string>,
  key: string,
  replies: readonly Reply[],
): Record<string, string> {
  let newest: Sample | undefined;
  for (const r of replies) {
    if (r.kind !== "ok" || r.sample.key !== key || r.sample.timestamp === undefined) continue;
    if (newest === undefined || r.sample.timestamp.compare(newest.timestamp!) > 0) newest = r.sample;
  }
  const deadline = newest?.deadline;
  return deadline === undefined ? cors : { ...cors, [EXPIRES_HEADER]: expiresValue(deadline) };
}
