/**
 * Writing answers: a whole body with its length (`send`), a large one streamed as the client
 * takes it (`streamAnswer`), and an error turned into its status and one-line reason
 * (`sendError`), the one place where a `ZestError` becomes an HTTP answer.
 */
import { Buffer } from "node:buffer";
import type { IncomingMessage, ServerResponse } from "node:http";
import { errorMessage, toZestError } from "../core/errors.js";
import type { Logger } from "../core/log.js";
import { CORS_PLAIN } from "./cors.js";
import { httpStatus } from "../access/http-status.js";
import { type Layout, streamLayout, streamLayouts } from "./layout.js";

const CHALLENGE = 'Basic realm="zest", charset="UTF-8"';

/** A whole GET answer: status, CORS, content type and ETag, the body with its length (none for HEAD). */
export function send(
  res: ServerResponse,
  method: string,
  cors: Record<string, string>,
  status: number,
  contentType: string | undefined,
  body: Buffer,
  etag?: string,
): void {
  const headers = answerHeaders(cors, contentType, etag);
  headers["content-length"] = body.length;
  res.writeHead(status, headers);
  res.end(method === "HEAD" ? undefined : body);
}

/** The headers of a GET answer (without its length): CORS, content type, ETag. */
function answerHeaders(
  cors: Record<string, string>,
  contentType: string | undefined,
  etag: string | undefined,
): Record<string, string | number> {
  const headers: Record<string, string | number> = { ...cors };
  if (contentType) headers["content-type"] = contentType;
  if (etag) {
    headers.etag = etag;
    // A page on another origin may read the ETag, to send it back in If-Match.
    if (cors !== CORS_PLAIN) headers["access-control-expose-headers"] = "ETag";
  }
  return headers;
}

/** The batches of an answer still to write out after its head, laid out one by one. */
export interface ScannedRest {
  /** The next batch's layout, or undefined at the end. */
  next(): Promise<Layout | undefined>;
  /** Stops the scan (called once the answer is written, or cut). */
  release(): void;
}

/**
 * A large GET answer, streamed: the status and headers (decided from the replies, as for
 * `send`) go out first, with chunked transfer encoding instead of a Content-Length, then the body
 * in chunks rendered as the client takes them (`streamLayout`). A client that goes away stops the
 * rendering. HEAD sends the headers only.
 */
export async function streamAnswer(
  res: ServerResponse,
  method: string,
  cors: Record<string, string>,
  status: number,
  layout: Layout,
  etag: string | undefined,
  idleMs: number,
  rest?: ScannedRest,
): Promise<void> {
  try {
    res.writeHead(status, answerHeaders(cors, layout.contentType, etag));
    if (method === "HEAD") {
      res.end();
      return;
    }
    // A client that stops reading holds the replies and a chunk: after `idleMs` it is dropped.
    const whole = rest ? await streamLayouts(layout, rest.next, res, idleMs) : await streamLayout(layout, res, idleMs);
    if (whole) res.end();
    else res.destroy();
  } catch {
    // Past the headers there is no status left to answer with: cut the response short, so the
    // client sees a truncated body rather than a complete-looking one.
    res.destroy();
  } finally {
    rest?.release();
  }
}

/**
 * Answers `err` with its status (`httpStatus`) and a one-line reason, a Basic challenge with a
 * 401; a failure of the router's own (5xx) is logged. Past the headers the connection is cut.
 */
export function sendError(
  req: IncomingMessage,
  res: ServerResponse,
  cors: Record<string, string>,
  err: unknown,
  logger: Logger,
): void {
  const e = toZestError(err);
  const status = httpStatus(e.kind);
  if (status >= 500) logger.warn({ method: req.method, url: req.url, status, err: errorMessage(e) }, "request failed");
  if (res.headersSent) {
    res.destroy();
    return;
  }
  const body = `${errorMessage(e)}\n`;
  const headers: Record<string, string | number> = {
    ...cors,
    "content-type": "text/plain; charset=utf-8",
    "content-length": Buffer.byteLength(body),
  };
  if (e.kind === "unauthenticated") headers["www-authenticate"] = CHALLENGE;
  // An unread (or too large) body cannot be skipped safely: close the connection after answering.
  if (!req.complete && req.httpVersionMajor !== 2) headers.connection = "close";
  res.writeHead(status, headers);
  res.end(body, () => {
    if (!req.complete) req.destroy();
  });
}
