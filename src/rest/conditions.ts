/**
 * Conditional requests (docs/rest-gateway.md §A.4): ETags made from storage versions, and the
 * `If-Match` / `If-None-Match` headers turned into write conditions or GET answers.
 */
import { MAX_MATCH_VERSIONS, type WriteIf } from "../core/conditional-write.js";
import { ZestError } from "../core/errors.js";
import type { Reply } from "../core/reply.js";
import type { Timestamp } from "../core/timestamp.js";
import { isWild } from "../keyexpr/index.js";

/** Longest opaque part of an ETag we accept (a version is far shorter). */
export const MAX_ETAG_LENGTH = 256;
/** Most ETags an `If-Match` or `If-None-Match` list may name: as many versions as the core takes. */
export const MAX_ETAG_LIST = MAX_MATCH_VERSIONS;

/** The strong ETag of a stored sample: its version (the timestamp's encoding), quoted. */
export function etagOf(timestamp: Timestamp): string {
  return `"${timestamp.encode()}"`;
}

/**
 * The ETag of a whole answer (docs/long-poll.md): what a long-poll on a key expression, or on a
 * key that holds nothing, compares. It covers the set of (key, version) pairs the answer holds:
 * two order-independent 32-bit sums of FNV-1a hashes (two seeds) over each entry's key and
 * timestamp, and the entry count. A put changes a pair, a delete removes one, so either changes
 * the tag (barring a 64-bit collision); computing it is one pass over the replies, no sort.
 * Entries without a timestamp (computed replies) count by key only. Undefined when a reply is an
 * error (an error is never "not modified").
 */
export function answerEtagOf(replies: readonly Reply[]): string | undefined {
  let count = 0;
  let a = 0;
  let b = 0;
  for (const r of replies) {
    if (r.kind !== "ok") return undefined;
    const s = r.sample;
    const version = s.timestamp?.encode() ?? "";
    a = (a + fnv1a(s.key, version, 0x811c9dc5)) >>> 0;
    b = (b + fnv1a(s.key, version, 0x050c5d1f)) >>> 0;
    count++;
  }
  return `"w${count.toString(16)}-${hex8(a)}${hex8(b)}"`;
}

/** FNV-1a (32 bits) of `key`, a separator, and `version`, from `seed`. */
function fnv1a(key: string, version: string, seed: number): number {
  let h = seed;
  for (let i = 0; i < key.length; i++) h = Math.imul(h ^ key.charCodeAt(i), 0x01000193);
  h = Math.imul(h ^ 0xff, 0x01000193);
  for (let i = 0; i < version.length; i++) h = Math.imul(h ^ version.charCodeAt(i), 0x01000193);
  return h >>> 0;
}

function hex8(n: number): string {
  return n.toString(16).padStart(8, "0");
}

/** True when a request carries a condition header. */
export function hasConditions(headers: { "if-match"?: string; "if-none-match"?: string }): boolean {
  return headers["if-match"] !== undefined || headers["if-none-match"] !== undefined;
}

/**
 * The write condition of a PUT, PATCH or DELETE on `key`, from its condition headers, as the
 * core takes it (`Session.putIf`, docs/conditional-writes.md): `If-Match` is `ifMatch` (its
 * strong ETags, or `*`), `If-None-Match: *` is `ifAbsent`. Undefined when there are none.
 * Throws `bad_input` for malformed or unsupported ones, `precondition_failed` for an `If-Match`
 * that can never hold (only weak ETags: If-Match compares strongly).
 */
export function writePrecondition(
  method: "PUT" | "PATCH" | "DELETE",
  key: string,
  ifMatch: string | undefined,
  ifNoneMatch: string | undefined,
): WriteIf | undefined {
  if (ifMatch === undefined && ifNoneMatch === undefined) return undefined;
  if (ifMatch !== undefined && ifNoneMatch !== undefined)
    throw ZestError.badRequest("give either If-Match or If-None-Match, not both");
  if (isWild(key))
    throw ZestError.badRequest(
      `If-Match and If-None-Match need a single key, not a key expression with wildcards (${key})`,
    );
  if (ifNoneMatch !== undefined) {
    if (ifNoneMatch.trim() !== "*")
      throw ZestError.badRequest("on a write, If-None-Match takes only * (create only if absent)");
    if (method === "DELETE") throw ZestError.badRequest("If-None-Match: * applies to PUT and PATCH, not DELETE");
    return IF_ABSENT;
  }
  const tags = parseEtagList(ifMatch!, "If-Match");
  if (tags === "any") return IF_MATCH_ANY;
  // RFC 9110 §13.1.1: If-Match compares strongly, so a weak ETag never matches.
  const strong: string[] = [];
  for (const t of tags) if (!t.weak) strong.push(t.opaque);
  if (strong.length === 0)
    throw new ZestError(
      "precondition_failed",
      "write condition failed: If-Match compares strong ETags, and a weak one (W/) never matches",
    );
  return { ifMatch: strong };
}

const IF_ABSENT: WriteIf = Object.freeze({ ifAbsent: true });
const IF_MATCH_ANY: WriteIf = Object.freeze({ ifMatch: "*" });

/** One entity tag of a condition header: its opaque part (without quotes) and weakness. */
interface EntityTag {
  readonly opaque: string;
  readonly weak: boolean;
}

/**
 * `*` or a comma-separated list of entity tags (RFC 9110 §8.8.3): `"opaque"` or `W/"opaque"`.
 * Throws `bad_input` with a one-line reason for anything else.
 */
export function parseEtagList(header: string, name: string): EntityTag[] | "any" {
  const text = header.trim();
  if (text === "*") return "any";
  const tags: EntityTag[] = [];
  let i = 0;
  while (i < text.length) {
    let weak = false;
    if (text.startsWith("W/", i)) {
      weak = true;
      i += 2;
    }
    if (text[i] !== '"')
      throw ZestError.badRequest(`${name} takes * or quoted ETags ("..."), as the ETag header gives them`);
    const end = text.indexOf('"', i + 1);
    if (end === -1) throw ZestError.badRequest(`${name} has an ETag without its closing quote`);
    const opaque = text.slice(i + 1, end);
    if (opaque.length > MAX_ETAG_LENGTH)
      throw ZestError.badRequest(`${name} has an ETag longer than ${MAX_ETAG_LENGTH} characters`);
    if (!ETAG_CHARS.test(opaque)) throw ZestError.badRequest(`${name} has an ETag with characters an ETag cannot hold`);
    tags.push({ opaque, weak });
    if (tags.length > MAX_ETAG_LIST) throw ZestError.badRequest(`${name} names more than ${MAX_ETAG_LIST} ETags`);
    i = end + 1;
    while (text[i] === " " || text[i] === "\t") i++;
    if (i < text.length) {
      if (text[i] !== ",") throw ZestError.badRequest(`${name} takes * or a comma-separated list of quoted ETags`);
      i++;
      while (text[i] === " " || text[i] === "\t") i++;
      if (i === text.length) throw ZestError.badRequest(`${name} ends with a comma`);
    }
  }
  if (tags.length === 0) throw ZestError.badRequest(`${name} is empty: give * or a quoted ETag`);
  return tags;
}

/** etagc of RFC 9110: visible ASCII except `"`, and bytes above 0x7F. */
const ETAG_CHARS = /^[\x21\x23-\x7e\x80-\xff]*$/;

/**
 * How a single-key GET answers its condition headers (RFC 9110 §13.2.2): 412 when `If-Match`
 * fails, 304 when `If-None-Match` matches, otherwise 200. `etag` is the current ETag (none: the
 * key holds nothing). Malformed headers are a `bad_input`.
 */
export function readPrecondition(
  etag: string | undefined,
  ifMatch: string | undefined,
  ifNoneMatch: string | undefined,
): 200 | 304 | 412 {
  if (ifMatch !== undefined) {
    const tags = parseEtagList(ifMatch, "If-Match");
    const holds = etag !== undefined && (tags === "any" || tags.some((t) => !t.weak && `"${t.opaque}"` === etag));
    if (!holds) return 412;
  }
  if (ifNoneMatch !== undefined) {
    const tags = parseEtagList(ifNoneMatch, "If-None-Match");
    // Weak comparison: W/"x" matches "x".
    const matches = etag !== undefined && (tags === "any" || tags.some((t) => `"${t.opaque}"` === etag));
    if (matches) return 304;
  }
  return 200;
}
