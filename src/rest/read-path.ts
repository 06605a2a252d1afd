/**
 * The read paths of the REST gateway (docs/rest-gateway.md), fastest first: a GET answered from
 * the read cache (`serveCached`), a plain single-key GET read synchronously from local storages
 * (`serveStored`), then the full pipeline (`handle`): authentication, SSE, conditions, `_raw`,
 * a GET body as the query's payload, wide answers scanned and streamed, and the cache filled.
 * `handle` also answers what is no read: a preflight, and a method the gateway does not take.
 */
import type { PathOptions } from "./path-options.js";
import { Buffer } from "node:buffer";
import { performance } from "node:perf_hooks";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { AccessControl, Principal } from "../access/access.js";
import { newestTimestamp } from "../core/conditional-write.js";
import { ZestError } from "../core/errors.js";
import type { Logger } from "../core/log.js";
import { OkReply, type Reply } from "../core/reply.js";
import type { Sample } from "../core/sample.js";
import { Parameters } from "../core/selector.js";
import type { Session } from "../core/session.js";
import { isWild } from "../keyexpr/index.js";
import {
  type AdminPermissions,
  checkAdminRead as checkRead,
  isAdminKey as isAdmin,
} from "../access/admin-permissions.js";
import { type BodyWatch, readBodyAsync } from "./body.js";
import type { RestCodec } from "./codec.js";
import type { Rendered } from "./layout.js";
import { answerEtagOf, etagOf, hasConditions, readPrecondition } from "./conditions.js";
import { ALLOWED_METHODS, corsHeaders, type OriginPolicy, preflight } from "./cors.js";
import { httpCredentials as credentialsOf } from "../access/client.js";
import { serveExplorer } from "./explorer/index.js";
import { httpStatus } from "../access/http-status.js";
import { expiresWanted, withExpires } from "./lifetime.js";
import { renderLayout } from "./layout.js";
import { type LongPollHub, type LongPollReader, type LongPollTicket, parseWait } from "./long-poll.js";
import { hasBody, rawResponse, wantsRaw } from "./raw.js";
import { type CachedResponse, cacheableReplies, type ReadCache } from "./read-cache.js";
import { type ScannedRest, send, sendError, streamAnswer } from "./respond.js";
import { lastEventIdOf, type SseHub } from "./sse.js";

/**
 * Answers with more entries than this are streamed (`streamAnswer`); smaller ones are sent whole,
 * with a Content-Length, and may be cached.
 */
export const STREAM_ENTRIES = 2048;

/**
 * Keys whose last remote answer `serveRemote` keeps rendered (then it starts over), and the
 * largest value kept: bounded at a few MiB, whatever keys and values clients read.
 */
const REMOTE_ANSWERS_MAX = 4096;
const REMOTE_ANSWER_VALUE_MAX = 1024;

/** What the read paths work with, built once by the server. */
export interface ReadPathOptions extends PathOptions {
  /** The read cache; absent when off, or on a router with a fabric. */
  readonly cache: ReadCache | undefined;
  readonly sse: SseHub;
  /** Parked long-poll GETs (docs/long-poll.md). */
  readonly polls: LongPollHub;
  /** Who may write, for the preflight's answer. */
  readonly origins: OriginPolicy;
  /** Milliseconds a streamed answer may wait for the client to take a chunk. */
  readonly responseIdleMs: number;
  readonly logger: Logger;
}

/** GET and HEAD, from the read cache to the full pipeline; OPTIONS and unsupported methods. */
export class ReadPath implements LongPollReader {
  private readonly session: Session;
  private readonly codec: RestCodec;
  private readonly access: AccessControl;
  private readonly permissions: AdminPermissions;
  private readonly bodyLimit: number;
  private readonly bodyWatch: BodyWatch;
  private readonly cache: ReadCache | undefined;
  private readonly sse: SseHub;
  private readonly polls: LongPollHub;
  private readonly origins: OriginPolicy;
  private readonly responseIdleMs: number;
  private readonly logger: Logger;
  /** A stored sample's rendered single-key answer, kept while the storage holds the sample. */
  private readonly stored = new WeakMap<Sample, StoredAnswer>();
  /** Key → the last single-value answer `serveRemote` rendered, with the sample it names. */
  private readonly remoteAnswers = new Map<string, RemoteAnswer>();
  /** Read-request paths → key expressions, for the cached-GET access check (emptied when full). */
  private readonly readKeys = new Map<string, string>();

  constructor(options: ReadPathOptions) {
    this.session = options.session;
    this.codec = options.codec;
    this.access = options.access;
    this.permissions = options.permissions;
    this.bodyLimit = options.bodyLimit;
    this.bodyWatch = options.bodyWatch;
    this.cache = options.cache;
    this.sse = options.sse;
    this.polls = options.polls;
    this.origins = options.origins;
    this.responseIdleMs = options.responseIdleMs;
    this.logger = options.logger;
  }

  /**
   * The fast path: a GET whose rendered response is cached and still valid is answered here,
   * synchronously, without a query. Returns false when the request needs the full pipeline.
   */
  serveCached(req: IncomingMessage, res: ServerResponse): boolean {
    if (!this.cache) return false;
    const method = req.method;
    if (method !== "GET" && method !== "HEAD") return false;
    // A conditional GET may answer 304 or 412: the full pipeline decides.
    if (hasConditions(req.headers)) return false;
    const cacheKey = cacheKeyOf(method, req.url ?? "/", firstAccept(req.headers.accept));
    if (cacheKey === undefined) return false;
    const hit = this.cache.get(cacheKey);
    if (!hit) return false;
    // Under access control the cached (unfiltered) answer is served only to a client that may
    // read all of it; anyone else takes the full pipeline, which filters or refuses.
    if (this.access.enabled && !this.mayReadAll(req)) return false;
    if (req.headers.origin) {
      res.writeHead(200, { ...hit.headers, "access-control-allow-credentials": "false" });
    } else {
      res.writeHead(200, hit.headers);
    }
    res.end(method === "HEAD" ? undefined : hit.body);
    return true;
  }

  /**
   * The synchronous single-key path: a plain GET of one key, with no parameters, body or
   * conditions, held only by local storages that read synchronously (`readStored`), is answered
   * here, without a query, a promise or a slice. The answer is the one `handle` gives, byte for
   * byte. Returns false when the full pipeline must answer, errors included (it words them).
   */
  serveStored(req: IncomingMessage, res: ServerResponse): boolean {
    // On a fabric other routers may hold any key: `readStored` never answers there.
    if (this.session.interest.clustered) return false;
    const plain = this.plainRead(req);
    if (plain === undefined) return false;
    const { method, url, accept, key } = plain;
    const codec = this.codec;
    const renderNow = codec.renderNow;
    if (renderNow === undefined) return false;
    const session = this.session;
    let replies: Reply[] | undefined;
    try {
      replies = session.interest.readStored?.(key);
    } catch {
      return false; // a storage that cannot read now: the full pipeline words the failure
    }
    if (replies === undefined) return false;
    for (const r of replies) if (r.kind !== "ok") return false;
    // One stored sample (the common case): its answer is rendered once and kept with the sample,
    // which a storage hands out again until the key is written (docs/rest-gateway.md §A.4).
    const only = replies.length === 1 ? (replies[0] as Reply & { kind: "ok" }).sample : undefined;
    let answer = only && this.stored.get(only);
    if (answer === undefined) {
      const rendered = renderNow.call(codec, replies);
      const ts = codec.etags ? newestTimestamp(key, replies) : undefined;
      answer = { rendered, body: Buffer.from(rendered.body), etag: ts && etagOf(ts) };
      if (only !== undefined && only.key === key) this.stored.set(only, answer);
    }
    const { rendered, body, etag } = answer;
    if (this.cache !== undefined && cacheableReplies(replies)) {
      const cacheKey = cacheKeyOf(method, url, accept);
      if (cacheKey !== undefined) this.cache.set(cacheKey, cacheEntry(this.cache.version, key, rendered, body, etag));
    }
    send(res, method, withExpires(corsHeaders(req), key, replies), 200, rendered.contentType, body, etag);
    return true;
  }

  /**
   * The one-key remote path: a plain GET as `serveStored` takes it (one key, no parameters, body
   * or conditions, JSON), of a key no queryable on this router reaches, so only other routers
   * answer (`readRemote`: the fabric's query alone, without the local dispatch). The answer,
   * errors and status included, is the one `handle` gives, rendered at once when the replies
   * arrive. Returns false, having done nothing, when the full pipeline must answer.
   */
  serveRemote(req: IncomingMessage, res: ServerResponse): boolean {
    if (!this.session.interest.clustered) return false;
    const plain = this.plainRead(req);
    // `@` keys (the admin space, the routers' own) take the full pipeline, which checks them.
    if (plain === undefined || plain.key.charCodeAt(0) === 64) return false;
    const { method, key } = plain;
    let pending: Promise<Reply[]> | undefined;
    try {
      pending = this.session.interest.readRemote?.(key);
    } catch {
      return false;
    }
    if (pending === undefined) return false;
    pending
      .then((replies) => {
        const { rendered, body, etag, status } = this.remoteAnswer(key, replies);
        send(res, method, withExpires(corsHeaders(req), key, replies), status, rendered.contentType, body, etag);
      })
      .catch((err: unknown) => sendError(req, res, corsHeaders(req), err, this.logger));
    return true;
  }

  /**
   * The answer `handle` gives to `replies`, a plain key's: an error reply (a router that timed
   * out or cannot be reached) sets the status and leaves the ETag out. One value is rendered once
   * per write: its answer is kept while the replies name the same sample (same timestamp, kind,
   * encoding and bytes), as `serveStored` keeps a stored sample's.
   */
  private remoteAnswer(key: string, replies: readonly Reply[]): StoredAnswer & { status: number } {
    const codec = this.codec;
    const one = replies.length === 1 && replies[0]!.kind === "ok" ? replies[0]!.sample : undefined;
    const kept = one !== undefined ? this.remoteAnswers.get(key) : undefined;
    if (kept !== undefined && sameWrite(kept.sample, one!)) return kept.answer;
    const err = replies.find((r) => r.kind === "err");
    const rendered = codec.renderNow!(replies);
    const ts = err === undefined && codec.etags ? newestTimestamp(key, replies) : undefined;
    const status = err?.kind === "err" ? httpStatus(err.errorKind) : 200;
    const answer = { rendered, body: Buffer.from(rendered.body), etag: ts && etagOf(ts), status };
    if (one?.timestamp !== undefined && one.key === key && one.payload.length <= REMOTE_ANSWER_VALUE_MAX) {
      if (this.remoteAnswers.size >= REMOTE_ANSWERS_MAX) this.remoteAnswers.clear();
      this.remoteAnswers.set(key, { sample: one, answer });
    }
    return answer;
  }

  /**
   * A GET or HEAD that the synchronous paths may answer: no query string, body or conditions, a
   * JSON answer, one plain key outside the admin space that the client may read whole (known
   * credentials). Undefined otherwise, errors included (the full pipeline words them).
   */
  private plainRead(
    req: IncomingMessage,
  ): { method: string; url: string; accept: string | undefined; key: string } | undefined {
    const method = req.method;
    if (method !== "GET" && method !== "HEAD") return undefined;
    const url = req.url;
    if (this.codec.renderNow === undefined || url === undefined || url.length < 2 || url.includes("?"))
      return undefined;
    const headers = req.headers;
    const accept = firstAccept(headers.accept);
    if (accept !== undefined && accept !== "*/*" && accept !== "application/json") return undefined;
    if (hasConditions(headers) || hasBody(headers)) return undefined;
    try {
      const key = this.codec.pathToKey(url, this.session.zid, false, this.session.keyExprLimits);
      if (isWild(key) || isAdmin(key)) return undefined;
      if (this.access.enabled) {
        const p = this.access.knownPrincipal(credentialsOf(req));
        if (p === undefined || this.access.decide(p, "query", key) !== "allow") return undefined;
      }
      return { method, url, accept, key };
    } catch {
      return undefined;
    }
  }

  /** True when the client is known (credentials checked recently) and may read the whole of the GET's key. */
  private mayReadAll(req: IncomingMessage): boolean {
    try {
      const p = this.access.knownPrincipal(credentialsOf(req));
      if (p === undefined) return false; // the full pipeline checks the credentials and answers
      // Cached GETs have no query string: the URL is the path.
      const url = req.url ?? "/";
      let key = this.readKeys.get(url);
      if (key === undefined) {
        key = this.codec.pathToKey(url, this.session.zid, false);
        if (this.readKeys.size >= 4096) this.readKeys.clear();
        this.readKeys.set(url, key);
      }
      return this.access.decide(p, "query", key) === "allow";
    } catch {
      return false;
    }
  }

  /**
   * The full pipeline of a request that is no write: a preflight, a GET or HEAD (SSE included),
   * or a 405. Errors are answered here (`sendError`). `deadline` (`performance.now()` time):
   * a long-poll read again after a change or its timer, with the end of its `_wait`.
   */
  async handle(req: IncomingMessage, res: ServerResponse, deadline?: number): Promise<void> {
    const cors = corsHeaders(req);
    let ticket: LongPollTicket | undefined;
    try {
      const method = req.method ?? "GET";
      if (method === "OPTIONS") return preflight(req, res, this.origins);
      let principal: Principal | undefined;
      if (this.access.enabled) {
        const p = this.access.authenticate(credentialsOf(req));
        principal = p instanceof Promise ? await p : p;
      }
      const url = req.url ?? "/";
      const q = url.indexOf("?");
      const path = q === -1 ? url : url.slice(0, q);
      const query = q === -1 ? "" : url.slice(q + 1);
      const { codec, session, permissions } = this;
      switch (method) {
        case "GET":
        case "HEAD": {
          // The explorer page (docs/explorer.md): `/` for a browser, in a variant that has it (A).
          if (codec.explorer && serveExplorer(req, res)) return;
          const accept = firstAccept(req.headers.accept);
          const html = accept === "text/html";
          const cacheKey = this.cache ? cacheKeyOf(method, url, accept) : undefined;
          const version = this.cache?.version ?? 0;
          const key = codec.pathToKey(path, session.zid, false, session.keyExprLimits);
          checkRead(permissions, key);
          const parameters = new Parameters(codec.parameters(query));
          const sse = accept === "text/event-stream" && codec.sseEvent !== undefined && method === "GET";
          const expires = expiresWanted(parameters.get("_expires"));
          const decision =
            principal === undefined
              ? "allow"
              : this.access.decide(principal, sse ? "declare_subscriber" : "query", key);
          if (decision === "deny") throw this.access.refusal(principal!, `${sse ? "subscribe to" : "read"} ${key}`);
          if (sse) {
            // A partly readable subscription delivers only the samples whose keys the user may read.
            const filter = decision === "partial" ? this.keyFilter(principal!) : undefined;
            this.sse.open(
              key,
              res,
              cors,
              lastEventIdOf(req.headers["last-event-id"], parameters),
              filter,
              snapshotWanted(parameters.get("_snapshot")),
              expires,
            );
            return;
          }
          // A long-poll (docs/long-poll.md): its whole answer is read (no scan, no cache), for its ETag.
          const waitText = parameters.get("_wait");
          if (waitText !== undefined && deadline === undefined) {
            deadline = performance.now() + parseWait(waitText, this.polls.limits.maxWaitMs);
            if (hasBody(req.headers)) throw ZestError.badRequest("a long-poll GET (_wait) takes no body");
          }
          // A malformed `_time` is the client's mistake, in either variant: a 400 here, before any
          // queryable runs (only storages read it, so it would otherwise be a 200 or an ERROR entry).
          parameters.timeRange();
          // A GET body is the query's payload, with its content type (docs/raw.md).
          const payload = hasBody(req.headers) ? await readBodyAsync(req, this.bodyLimit, this.bodyWatch) : undefined;
          // A plain key with no parameters, held only by local storages that read synchronously, is
          // read straight from them (`readStored`): the same answer without building a query.
          // A wide one answered by one local storage alone is read in batches as it is written out.
          const reader = decision === "partial" ? principal : undefined;
          // A long-poll that may park watches its key expression from before the read on: a
          // change landing during the read sends it to read again (docs/long-poll.md, "Waking").
          const conditional = hasConditions(req.headers);
          if (deadline !== undefined && conditional) ticket = this.polls.begin(key);
          const scanned =
            payload === undefined && deadline === undefined
              ? await this.scanStored(key, parameters, req.headers.accept, html, reader, expires)
              : undefined;
          let replies =
            scanned?.head ??
            ((query === "" && payload === undefined && session.interest.readStored?.(key)) ||
              (await session.get(
                { key, parameters },
                payload && { payload, encoding: codec.encodingFor(req.headers["content-type"]) },
              )));
          if (reader !== undefined && scanned === undefined)
            replies = replies.filter((r) => r.kind !== "ok" || this.access.mayRead(reader, "query", r.sample.key));
          const err = replies.find((r) => r.kind === "err");
          // The ETag of a single key (docs/rest-gateway.md §A.4); Variant B answers one only to
          // a client that sends condition headers, and keeps its 0.4 replies otherwise.
          const etag =
            !err && (codec.etags || conditional) && !parameters.has("_time")
              ? newestTimestamp(key, replies)
              : undefined;
          // A long-poll compares the whole answer's ETag when no single version names it.
          const wholeAnswer = deadline !== undefined && !parameters.has("_time") && etag === undefined;
          const etagHeader = etag ? etagOf(etag) : wholeAnswer ? answerEtagOf(replies) : undefined;
          if (conditional && (!isWild(key) || wholeAnswer)) {
            // If-Match on a key expression keeps being ignored, as before; `*` matches a
            // representation that exists, never the empty answer's ETag.
            const ifMatch = isWild(key) ? undefined : req.headers["if-match"];
            const ifNoneMatch = req.headers["if-none-match"];
            const star = wholeAnswer && replies.length === 0 && ifNoneMatch?.trim() === "*";
            const outcome = readPrecondition(star ? undefined : etagHeader, ifMatch, ifNoneMatch);
            if (
              outcome === 304 &&
              ticket !== undefined &&
              deadline !== undefined &&
              deadline - performance.now() >= 1
            ) {
              this.polls.park(ticket, req.socket?.remoteAddress ?? "", req, res, deadline, this);
              return;
            }
            if (outcome === 304) {
              res.writeHead(304, etagHeader ? { ...cors, etag: etagHeader } : cors);
              res.end();
              return;
            }
            if (outcome === 412)
              throw new ZestError(
                "precondition_failed",
                etagHeader
                  ? `If-Match does not match the current ETag ${etagHeader}`
                  : `If-Match failed: ${key} holds nothing`,
              );
          }
          // A single key's deadline, when it has one (docs/ttl-and-leases.md).
          const answerCors = isWild(key) ? cors : withExpires(cors, key, replies);
          if (wantsRaw(parameters.get("_raw"), key, req.headers.accept)) {
            const raw = rawResponse(replies, key);
            return send(res, method, answerCors, 200, raw.contentType, raw.body, etagHeader);
          }
          const status = err && err.kind === "err" ? httpStatus(err.errorKind) : 200;
          const layout = await codec.layout(replies, html, expires);
          // A large answer is streamed as it is rendered (never one big string), and not cached.
          if (layout.count > STREAM_ENTRIES || scanned?.rest !== undefined)
            return streamAnswer(res, method, cors, status, layout, etagHeader, this.responseIdleMs, scanned?.rest);
          const rendered = await renderLayout(layout);
          const body = Buffer.from(rendered.body);
          if (
            cacheKey !== undefined &&
            decision === "allow" &&
            cacheableReplies(replies) &&
            session.interest.storagesOnly(key)
          ) {
            this.cache!.set(cacheKey, cacheEntry(version, key, rendered, body, etagHeader));
          }
          return send(res, method, answerCors, status, rendered.contentType, body, etagHeader);
        }
        default:
          res.setHeader("allow", ALLOWED_METHODS);
          throw new ZestError("not_supported", `method ${method} is not supported: use GET, PUT, PATCH or DELETE`);
      }
    } catch (err) {
      sendError(req, res, cors, err, this.logger);
    } finally {
      if (ticket !== undefined) this.polls.release(ticket);
    }
  }

  /** Reads a parked long-poll again (`LongPollReader`). */
  retry(req: IncomingMessage, res: ServerResponse, deadline: number): void {
    void this.handle(req, res, deadline);
  }

  /**
   * A GET of a wild key expression that one local storage answers alone (`Router.scanStored`),
   * read in batches sorted by key: `head` holds the first entries, and `rest`, when there are
   * more than `STREAM_ENTRIES`, lays out each further batch only as the answer is written out,
   * so a wide answer is never held whole. `reader`: a user who may read part of the keys only.
   * Undefined when the GET runs a query instead (parameters a storage reads, `_raw`, a variant
   * that orders entries otherwise, several answerers).
   */
  private async scanStored(
    key: string,
    parameters: Parameters,
    accept: string | undefined,
    html: boolean,
    reader: Principal | undefined,
    expires: boolean,
  ): Promise<Scanned | undefined> {
    const { codec, session } = this;
    const layoutSamples = codec.layoutSamples;
    if (!layoutSamples || !isWild(key) || parameters.has("_time") || wantsRaw(parameters.get("_raw"), key, accept))
      return undefined;
    const batches = session.interest.scanStored?.(key);
    if (batches === undefined) return undefined;
    const it = batches[Symbol.asyncIterator]();
    const nextBatch = async (): Promise<readonly Sample[] | undefined> => {
      const next = await it.next();
      if (next.done) return undefined;
      return reader === undefined ? next.value : next.value.filter((s) => this.access.mayRead(reader, "query", s.key));
    };
    const head: Reply[] = [];
    try {
      while (head.length <= STREAM_ENTRIES) {
        const batch = await nextBatch();
        if (batch === undefined) return { head };
        for (const sample of batch) head.push(new OkReply(sample));
      }
    } catch (err) {
      stopIterator(it);
      throw err;
    }
    return {
      head,
      rest: {
        next: async () => {
          const batch = await nextBatch();
          return batch && layoutSamples.call(codec, batch, html, expires);
        },
        release: () => stopIterator(it),
      },
    };
  }

  /** The filter of a partly readable SSE stream. */
  private keyFilter(principal: Principal): (key: string) => boolean {
    return (key) => this.access.mayRead(principal, "declare_subscriber", key);
  }
}

/** `_snapshot` on an SSE GET (docs/sse.md): `true`, `false` or empty (true); anything else is a 400. */
function snapshotWanted(value: string | undefined): boolean {
  if (value === undefined || value === "false") return false;
  if (value === "true" || value === "") return true;
  throw ZestError.badRequest(`_snapshot takes true or false, not "${value.slice(0, 32)}"`);
}

/** Ends an iteration early; what the iterator's own cleanup throws is of no use to anyone here. */
function stopIterator(it: AsyncIterator<unknown>): void {
  it.return?.().catch(() => {});
}

/** The first entries of a GET answered by one storage's scan (`ReadPath.scanStored`), and the rest. */
interface Scanned {
  readonly head: Reply[];
  /** Absent when `head` is the whole answer. */
  readonly rest?: ScannedRest;
}

/** What `serveStored` sends for one stored sample. */
interface StoredAnswer {
  readonly rendered: Rendered;
  readonly body: Buffer;
  readonly etag: string | undefined;
}

/** What `serveRemote` keeps of a key's last single-value answer. */
interface RemoteAnswer {
  readonly sample: Sample;
  readonly answer: StoredAnswer & { readonly status: number };
}

/** True when `a` and `b` are the same write: a timestamp names one write, the rest is checked too. */
function sameWrite(a: Sample, b: Sample): boolean {
  return (
    a.timestamp !== undefined &&
    b.timestamp !== undefined &&
    a.timestamp.compare(b.timestamp) === 0 &&
    a.kind === b.kind &&
    a.encoding === b.encoding &&
    a.payload.equals(b.payload)
  );
}

/** A read-cache entry: the response as `send` writes it to a client without an Origin. */
function cacheEntry(
  version: number,
  keyExpr: string,
  rendered: Rendered,
  body: Buffer,
  etag: string | undefined,
): CachedResponse {
  const headers: Record<string, string | number> = {
    "access-control-allow-origin": "*",
    "content-length": body.length,
  };
  if (rendered.contentType) headers["content-type"] = rendered.contentType;
  if (etag) headers.etag = etag;
  return { version, keyExpr, headers, body };
}

/**
 * The cache key of a GET: representation and path. Requests with parameters (which may hold
 * `now()`) and SSE subscriptions are never cached.
 */
function cacheKeyOf(_method: string, url: string, accept: string | undefined): string | undefined {
  if (url.includes("?") || accept === "text/event-stream") return undefined;
  // A URL starts with `/`, so the JSON key (the URL itself: no string built per request) never
  // meets an HTML one.
  return accept === "text/html" ? `h${url}` : url;
}

/** The first media type of an `Accept` header, without parameters. */
function firstAccept(accept: string | undefined): string | undefined {
  if (!accept) return undefined;
  let end = accept.length;
  const semi = accept.indexOf(";");
  const comma = accept.indexOf(",");
  if (semi !== -1) end = semi;
  if (comma !== -1 && comma < end) end = comma;
  return accept.slice(0, end).trim().toLowerCase();
}
