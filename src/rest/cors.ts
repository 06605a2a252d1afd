/**
 * CORS (docs/rest-gateway.md §A.4, docs/security.md): every answer may be read cross-origin, with
 * no credentials; writes from a page on another origin need that origin allowed; a preflight
 * reflects only allowed origins, with a fixed list of headers. The header records are frozen and
 * shared, so the write path can pick its answer's headers by identity.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { originAllowed } from "../access/origin.js";
import type { RestCodec } from "./codec.js";

/** The methods the gateway answers (the `Allow` header of a preflight and of a 405). */
export const ALLOWED_METHODS = "GET, HEAD, PUT, PATCH, DELETE, OPTIONS";
const CORS_METHODS = "GET, PUT, PATCH, DELETE";
/** The request headers a preflight allows: a fixed list, never the client's own. */
const CORS_HEADERS = "accept, authorization, content-type, if-match, if-none-match, last-event-id";

/** The CORS headers of an answer to a request without an `Origin`. */
export const CORS_PLAIN: Readonly<Record<string, string>> = Object.freeze({ "access-control-allow-origin": "*" });
/** The CORS headers of an answer to a request with an `Origin`. */
export const CORS_ORIGIN: Readonly<Record<string, string>> = Object.freeze({
  "access-control-allow-origin": "*",
  "access-control-allow-credentials": "false",
});
/** A request with no `Origin` is no CORS request: Variant A's write answers then carry no CORS headers. */
export const NO_CORS: Readonly<Record<string, string>> = Object.freeze({});

/** Every response may be read cross-origin; the data carries no credentials. */
export function corsHeaders(req: IncomingMessage): Readonly<Record<string, string>> {
  return req.headers.origin ? CORS_ORIGIN : CORS_PLAIN;
}

/**
 * The CORS headers of a write's answer, refusals included: a request with no `Origin` is no CORS
 * request, and Variant A then answers none, as zenoh 0.6's CORS middleware did; Variant B keeps
 * 0.4's header on every write (docs/rest-gateway.md §A.4, §B.4).
 */
export function writeCorsHeaders(req: IncomingMessage, codec: RestCodec): Readonly<Record<string, string>> {
  return req.headers.origin ? CORS_ORIGIN : codec.corsOnEveryWrite ? CORS_PLAIN : NO_CORS;
}

/** Which pages may write: the router's own origin (from its scheme and names) and the configured ones. */
export interface OriginPolicy {
  readonly scheme: "http" | "https";
  /** Origins whose pages may write, lower case, without a trailing `/`. */
  readonly allowedOrigins: ReadonlySet<string>;
  /** Host names that name this router besides IP literals and `localhost`, lower case. */
  readonly allowedHosts: ReadonlySet<string>;
}

/** The policy of `plugins.rest.cors.allowed_origins` and `plugins.rest.allowed_hosts`, normalized once. */
export function originPolicy(
  scheme: "http" | "https",
  allowedOrigins: readonly string[] | undefined,
  allowedHosts: readonly string[] | undefined,
): OriginPolicy {
  return {
    scheme,
    allowedOrigins: new Set((allowedOrigins ?? []).map((o) => o.toLowerCase().replace(/\/$/, ""))),
    allowedHosts: new Set((allowedHosts ?? []).map((h) => h.toLowerCase())),
  };
}

/** True when a page on `origin` may write to this router (reached as `host`). */
export function writeOriginAllowed(policy: OriginPolicy, origin: string, host: string | undefined): boolean {
  return originAllowed(origin, host, policy.scheme, policy.allowedOrigins, policy.allowedHosts);
}

/** CORS preflight: only allowed origins are reflected, with a fixed list of headers. */
export function preflight(req: IncomingMessage, res: ServerResponse, policy: OriginPolicy): void {
  const origin = req.headers.origin;
  const headers: Record<string, string | number> = { allow: ALLOWED_METHODS, "content-length": 0, vary: "Origin" };
  if (origin !== undefined && writeOriginAllowed(policy, origin, req.headers.host)) {
    headers["access-control-allow-origin"] = origin;
    headers["access-control-allow-methods"] = CORS_METHODS;
    headers["access-control-allow-headers"] = CORS_HEADERS;
    headers["access-control-max-age"] = 600;
    headers["access-control-allow-credentials"] = "false";
  } else if (origin !== undefined) {
    // Reads need no preflight; this lets a page on any origin send the headers a read may carry.
    headers["access-control-allow-origin"] = "*";
    headers["access-control-allow-methods"] = "GET";
    headers["access-control-allow-headers"] = "accept, last-event-id";
  }
  res.writeHead(204, headers);
  res.end();
}
