import type { Buffer } from "node:buffer";
import { Encoding } from "../core/encoding.js";
import { ZestError } from "../core/errors.js";
import type { Reply } from "../core/reply.js";

/** The media types a Prometheus scraper sends: a GET of a metrics key asking for one reads it raw. */
const SCRAPER_TYPES = /text\/plain|application\/openmetrics-text/i;

/**
 * Whether a GET asks for the bare value of its first reply (docs/raw.md): `_raw=true` (or a bare
 * `_raw`), or a metrics key (`@/router/<zid>/metrics`) read with `Accept: text/plain`.
 */
export function wantsRaw(raw: string | undefined, key: string, accept: string | undefined): boolean {
  if (raw !== undefined) return raw === "" || raw === "true";
  return accept !== undefined && key.startsWith("@/router/") && key.endsWith("/metrics") && SCRAPER_TYPES.test(accept);
}

/** A raw response: the first reply's payload, with its encoding as the content type. */
export interface RawResponse {
  readonly contentType: string;
  readonly body: Buffer;
}

/**
 * The first value among `replies` (they are sorted by key) as a raw response. No value is a
 * not-found (never an empty 200); only error replies give the first error's kind and message.
 */
export function rawResponse(replies: readonly Reply[], key: string): RawResponse {
  for (const r of replies) {
    if (r.kind === "ok")
      return {
        contentType: r.sample.encoding === Encoding.EMPTY ? Encoding.APP_OCTET_STREAM : r.sample.encoding,
        body: r.sample.payload,
      };
  }
  const err = replies.find((r) => r.kind === "err");
  if (err && err.kind === "err") throw new ZestError(err.errorKind, err.payload.toString("utf8"));
  throw ZestError.notFound(`no value matches ${key}`);
}

/** True when a request carries a body (a declared length above 0, or a chunked one). */
export function hasBody(headers: { "content-length"?: string; "transfer-encoding"?: string }): boolean {
  const len = headers["content-length"];
  if (len !== undefined) return len !== "0";
  return headers["transfer-encoding"] !== undefined;
}
