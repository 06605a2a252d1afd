/**
 * Conditional writes over HTTP: a single-key GET answers an `ETag` made from the stored sample's
 * version (its timestamp), and `If-Match: "<etag>"` / `If-None-Match: *` on PUT, PATCH and
 * DELETE become the write's condition (docs/storage-contract.md). Without these headers a write
 * is unconditional, in both variants.
 */
import type { IncomingHttpHeaders } from "node:http";
import { ZestError } from "../core/errors.js";
import type { Reply } from "../core/reply.js";
import type { ConditionOptions } from "../core/session.js";
import { isWild } from "../keyexpr/index.js";

/** The longest ETag accepted in `If-Match` (a version is about 50 characters). */
const MAX_ETAG = 256;

/** The strong ETag of a version. */
export function etagOf(version: string): string {
  return `"${version}"`;
}

/**
 * The ETag of a GET's answer: set when the GET named one key and one stored sample (with a
 * timestamp) answered it; undefined otherwise.
 */
export function etagOfReplies(key: string, replies: readonly Reply[]): string | undefined {
  if (replies.length !== 1 || isWild(key)) return undefined;
  const r = replies[0]!;
  if (r.kind !== "ok" || r.sample.key !== key || !r.sample.timestamp) return undefined;
  return etagOf(r.sample.timestamp.encode());
}

/**
 * The condition a write's headers ask for: `If-Match: "<etag>"` (one strong ETag) or
 * `If-None-Match: *`; none when neither is given. Anything else is a `bad_input` naming what to
 * send instead.
 */
export function writeCondition(headers: IncomingHttpHeaders): ConditionOptions | undefined {
  const ifMatch = headers["if-match"];
  const ifNoneMatch = headers["if-none-match"];
  if (ifMatch === undefined && ifNoneMatch === undefined) return undefined;
  if (ifMatch !== undefined && ifNoneMatch !== undefined) throw ZestError.badRequest("give either If-Match or If-None-Match, not both");
  if (ifNoneMatch !== undefined) {
    if (ifNoneMatch.trim() !== "*") throw ZestError.badRequest('If-None-Match on a write must be "*" (create only if absent)');
    return { ifAbsent: true };
  }
  const tag = ifMatch!.trim();
  if (tag.length > MAX_ETAG + 2 || !/^"[\x21\x23-\x7e]+"$/.test(tag)) {
    throw ZestError.badRequest('If-Match must be one ETag as a GET answered it, e.g. If-Match: "<etag>"');
  }
  return { ifVersion: tag.slice(1, -1) };
}
