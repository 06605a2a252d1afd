/**
 * The write path of the REST gateway (docs/rest-gateway.md): PUT, PATCH and DELETE, with
 * callbacks rather than an async pipeline. Writes are the hot path, and the response goes out
 * as soon as every storage has the sample: in the same turn when every one took it at once.
 * The order: the page's origin, the key, admin permissions and `Host`, authentication, the
 * access decision, the conditions, then the body. Conditional writes are the core's
 * (`Session.putIf`, docs/conditional-writes.md).
 */
import type { Buffer } from "node:buffer";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { AccessControl, Principal } from "../access/access.js";
import type { PathOptions } from "./path-options.js";
import { isAllowedHost } from "../access/origin.js";
import type { WriteIf } from "../core/conditional-write.js";
import { ZestError } from "../core/errors.js";
import type { Logger } from "../core/log.js";
import type { CanonicalKey } from "../core/key.js";
import type { PutOptions, Session } from "../core/session.js";
import { SETTLED } from "../core/settled.js";
import type { Timestamp } from "../core/timestamp.js";
import { type AdminPermissions, checkAdminWrite, isAdminKey as isAdmin } from "../access/admin-permissions.js";
import { isLoopbackRequest } from "../access/client.js";
import { type WriteLifetime, writeLifetime } from "./lifetime.js";
import { type BodyWatch, readBody } from "./body.js";
import type { RestCodec } from "./codec.js";
import { etagOf, writePrecondition } from "./conditions.js";
import { CORS_ORIGIN, CORS_PLAIN, NO_CORS, type OriginPolicy, writeCorsHeaders, writeOriginAllowed } from "./cors.js";
import { httpCredentials as credentialsOf } from "../access/client.js";
import { sendError } from "./respond.js";

/** Request metrics of the writes: `served` once a write is answered, with the time it came. */
export interface WriteMetrics {
  served(req: IncomingMessage, res: ServerResponse, start: number): void;
}

/** What the write path works with, built once by the server. */
export interface WritePathOptions extends PathOptions {
  /** Which pages may write, and which `Host` names the router. */
  readonly origins: OriginPolicy;
  readonly metrics: WriteMetrics | undefined;
  readonly logger: Logger;
  /**
   * Calls a write's answer once the events its sample made for the SSE streams have left (at
   * once when there are none), so a watcher sees the change no later than the writer's answer.
   */
  readonly afterEvents: (answer: () => void) => void;
}

const WRITE_HEADERS: Readonly<Record<string, string | number>> = Object.freeze({ ...CORS_PLAIN, "content-length": 0 });
const WRITE_HEADERS_NO_CORS: Readonly<Record<string, string | number>> = Object.freeze({ "content-length": 0 });

/** PUT, PATCH and DELETE, each counted once answered (`answered` or `writeFailed`). */
export class WritePath {
  private readonly session: Session;
  private readonly codec: RestCodec;
  private readonly access: AccessControl;
  private readonly permissions: AdminPermissions;
  private readonly bodyLimit: number;
  private readonly bodyWatch: BodyWatch;
  private readonly origins: OriginPolicy;
  private readonly metrics: WriteMetrics | undefined;
  private readonly logger: Logger;
  private readonly afterEvents: (answer: () => void) => void;
  /** The last write query read (Variant A), and the lifetime it asks (`lifetimeOf`). */
  private lastQuery: string | undefined;
  private lastLifetime: WriteLifetime | undefined;

  constructor(options: WritePathOptions) {
    this.session = options.session;
    this.codec = options.codec;
    this.access = options.access;
    this.permissions = options.permissions;
    this.bodyLimit = options.bodyLimit;
    this.bodyWatch = options.bodyWatch;
    this.origins = options.origins;
    this.metrics = options.metrics;
    this.logger = options.logger;
    this.afterEvents = options.afterEvents;
  }

  /**
   * A write, from its arrival (`begun`: `performance.now()` then, 0 without metrics) to its
   * answer: the checks that need no client identity, then authentication, then `writeAllowed`.
   */
  write(req: IncomingMessage, res: ServerResponse, method: "PUT" | "PATCH" | "DELETE", begun: number): void {
    const { codec, session, permissions } = this;
    const cors = writeCorsHeaders(req, codec);
    const url = req.url ?? "/";
    const q = url.indexOf("?");
    let key: string;
    let principal: Principal | Promise<Principal> | undefined;
    let lifetime: WriteLifetime | undefined;
    try {
      const origin = req.headers.origin;
      if (origin !== undefined && !writeOriginAllowed(this.origins, origin, req.headers.host)) {
        throw ZestError.forbidden(
          `writes from pages on ${origin.slice(0, 200)} are refused: add the origin to plugins.rest.cors.allowed_origins`,
        );
      }
      const path = q === -1 ? url : url.slice(0, q);
      key = codec.pathToKey(path, session.zid, true, session.keyExprLimits);
      // `?_ttl=` and `?_lease=` (docs/ttl-and-leases.md); other parameters of a write are ignored.
      if (q !== -1) lifetime = this.lifetimeOf(method, url, q);
      if (isAdmin(key)) {
        checkAdminWrite(permissions, key, isLoopbackRequest(req));
        // A page that rebinds its own domain name to this router's address passes every
        // same-origin check; it cannot make the Host header name the router.
        if (!isAllowedHost(req.headers.host, this.origins.allowedHosts)) {
          throw ZestError.forbidden(
            `admin writes need a Host header naming this router (an IP address, localhost, or a name in plugins.rest.allowed_hosts), not ${JSON.stringify((req.headers.host ?? "").slice(0, 200))}`,
          );
        }
      }
      if (this.access.enabled) principal = this.access.authenticate(credentialsOf(req));
    } catch (err) {
      this.writeFailed(req, res, cors, err, begun);
      return;
    }
    if (principal instanceof Promise) {
      principal.then(
        (p) => this.writeAllowed(req, res, method, key, cors, p, begun, lifetime),
        (err: unknown) => this.writeFailed(req, res, cors, err, begun),
      );
    } else this.writeAllowed(req, res, method, key, cors, principal, begun, lifetime);
  }

  /**
   * The lifetime the query string of `url` (from its `?` at `q`) asks. The last query read and
   * its lifetime are kept: a client refreshing keys with `?_ttl=30s` sends the same one each time,
   * and it is then compared in place, neither sliced nor parsed again (docs/ttl-and-leases.md,
   * "Cost"). Only a lifetime read without error is kept, and only for a codec that hands the
   * query on as it is (`verbatimParameters`, Variant A).
   */
  private lifetimeOf(method: "PUT" | "PATCH" | "DELETE", url: string, q: number): WriteLifetime | undefined {
    const last = this.lastQuery;
    // A DELETE is read afresh, so that `writeLifetime` alone says which methods take a lifetime.
    if (method !== "DELETE" && last !== undefined && url.length - q - 1 === last.length && url.startsWith(last, q + 1))
      return this.lastLifetime;
    const query = url.slice(q + 1);
    const lifetime = writeLifetime(method, this.codec.parameters(query));
    if (this.codec.verbatimParameters) {
      this.lastQuery = query;
      this.lastLifetime = lifetime;
    }
    return lifetime;
  }

  /** Counts a write's answer, just ended. */
  private answered(req: IncomingMessage, res: ServerResponse, begun: number): void {
    this.metrics?.served(req, res, begun);
  }

  /** Answers a write with its error, and counts it. */
  private writeFailed(
    req: IncomingMessage,
    res: ServerResponse,
    cors: Record<string, string>,
    err: unknown,
    begun: number,
  ): void {
    sendError(req, res, cors, err, this.logger);
    this.answered(req, res, begun);
  }

  /** The rest of a write, once the client is known: the access decision, then the body. */
  private writeAllowed(
    req: IncomingMessage,
    res: ServerResponse,
    method: "PUT" | "PATCH" | "DELETE",
    key: string,
    cors: Readonly<Record<string, string>>,
    principal: Principal | undefined,
    begun: number,
    lifetime: WriteLifetime | undefined,
  ): void {
    const { codec, session } = this;
    let precondition: WriteIf | undefined;
    try {
      if (principal !== undefined) {
        const message = method === "DELETE" ? "delete" : "put";
        const decision = this.access.decide(principal, message, key);
        // A write that reaches outside the user's rules is refused whole: nothing is written.
        if (decision !== "allow")
          throw this.access.refusal(
            principal,
            `${message} ${key}${decision === "partial" ? " (it reaches keys outside the allowed ones)" : ""}`,
          );
      }
      // Never a silent 200 (docs/rest-gateway.md §A.4): an admin write nobody takes (a typo in
      // the path, a router that does not exist) is refused. Another router's admin space,
      // reached through the fabric, takes writes to its own `@/router/<zid>/...`.
      if (isAdmin(key) && !session.interest.hasSubscriber(key)) {
        const path = (req.url ?? "/").split("?")[0]!;
        throw ZestError.notFound(
          `no admin key takes writes at ${path}: storages are configured under ${codec.adminConfigPath(session.zid)}`,
        );
      }
      // The condition comes after the access decision: a refused client learns nothing of the key.
      precondition = writePrecondition(method, key, req.headers["if-match"], req.headers["if-none-match"]);
    } catch (err) {
      this.writeFailed(req, res, cors, err, begun);
      return;
    }
    readBody(req, this.bodyLimit, this.bodyWatch, (err, body) => {
      if (err) {
        this.writeFailed(req, res, cors, err, begun);
        return;
      }
      if (precondition) {
        const written =
          method === "DELETE"
            ? session.deleteIf(key, precondition)
            : session.putIf(key, body!, precondition, {
                encoding: codec.encodingFor(req.headers["content-type"]),
                ttl: lifetime?.ttl,
                lease: lifetime?.lease,
              });
        // Every storage took the write at once (the memory volume): answer in this turn, not a
        // microtask later.
        if (!(written instanceof Promise))
          this.afterEvents(() => this.conditionalAnswer(req, res, method, cors, written, begun));
        else
          written.then(
            (ts) => this.afterEvents(() => this.conditionalAnswer(req, res, method, cors, ts, begun)),
            (e: unknown) => this.writeFailed(req, res, cors, e, begun),
          );
        return;
      }
      const done =
        method === "DELETE"
          ? codec.canonicalKeys
            ? session.deleteKey(key as CanonicalKey)
            : session.delete(key)
          : lifetime === undefined
            ? this.put(key, body!, { encoding: codec.encodingFor(req.headers["content-type"]) })
            : this.put(key, body!, {
                encoding: codec.encodingFor(req.headers["content-type"]),
                ttl: lifetime.ttl,
                lease: lifetime.lease,
              });
      const answer = (): void => {
        res.writeHead(
          codec.writeStatus,
          cors === CORS_PLAIN
            ? WRITE_HEADERS
            : cors === NO_CORS
              ? WRITE_HEADERS_NO_CORS
              : { ...cors, "content-length": 0 },
        );
        res.end();
        this.answered(req, res, begun);
      };
      // Every storage took the write synchronously (the memory volume): answer in this turn, not
      // a microtask later.
      if (done === SETTLED) this.afterEvents(answer);
      else
        done.then(
          () => this.afterEvents(answer),
          (e: unknown) => this.writeFailed(req, res, cors, e, begun),
        );
    });
  }

  /** A put of a key from `codec.pathToKey`, not canonized again when the codec made it canonical. */
  private put(key: string, body: Buffer, options: PutOptions): Promise<void> {
    return this.codec.canonicalKeys
      ? this.session.putKey(key as CanonicalKey, body, options)
      : this.session.put(key, body, options);
  }

  /**
   * The answer of a conditional write that took effect: the new ETag, made from the written
   * sample's timestamp (none for a DELETE: a deleted key has no representation).
   */
  private conditionalAnswer(
    req: IncomingMessage,
    res: ServerResponse,
    method: "PUT" | "PATCH" | "DELETE",
    cors: Readonly<Record<string, string>>,
    written: Timestamp,
    begun: number,
  ): void {
    const etag = method === "DELETE" ? undefined : etagOf(written);
    res.writeHead(
      this.codec.writeStatus,
      etag === undefined
        ? { ...cors, "content-length": 0 }
        : cors === CORS_ORIGIN
          ? { ...cors, "content-length": 0, etag, "access-control-expose-headers": "ETag" }
          : { ...cors, "content-length": 0, etag },
    );
    res.end();
    this.answered(req, res, begun);
  }
}
