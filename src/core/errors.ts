/**
 * Typed errors. Every failure a user can cause or act on is a `ZestError` carrying what kind of
 * failure it is, never how a particular front door spells it: each door maps kinds to its wire in
 * one place (HTTP statuses in `access/http-status.ts` for the doors that answer in HTTP, the remote
 * API's and the zenoh door's error replies in `door/errors.ts`), and the NATS fabric carries the kind on the wire.
 */

/** What went wrong, by meaning. */
export type ErrorKind =
  /** The request itself is wrong: bad key expression, bad JSON, bad config. */
  | "bad_input"
  /** Credentials are missing or wrong where they are required. */
  | "unauthenticated"
  /** The caller may not do this. */
  | "forbidden"
  /** The named thing does not exist. */
  | "not_found"
  /** The operation is not supported on this target (a method, a write on a read-only thing). */
  | "not_supported"
  /** Conflicts with existing state (a duplicate name, a bucket with another replica count). */
  | "conflict"
  /** A condition attached to a write (a version, "must not exist") does not hold. */
  | "precondition_failed"
  /** A body, value or message is larger than its limit. */
  | "too_large"
  /** A key expression or request line is longer than its limit. */
  | "too_long"
  /** A storage's quota is full. */
  | "insufficient_storage"
  /** A backend or the fabric is unavailable (retrying later may work). */
  | "unavailable"
  /** An operation did not complete in time. */
  | "timeout"
  /** A bug or an unexpected failure. */
  | "internal";

/** Every kind, in a fixed order: a kind's wire code is its index plus one (0 means "no error"). */
export const ERROR_KINDS: readonly ErrorKind[] = [
  "bad_input",
  "unauthenticated",
  "forbidden",
  "not_found",
  "not_supported",
  "conflict",
  "precondition_failed",
  "too_large",
  "too_long",
  "insufficient_storage",
  "unavailable",
  "timeout",
  "internal",
];

const KINDS: ReadonlySet<string> = new Set<string>(ERROR_KINDS);

/** True when `s` names an error kind (for kinds read off a wire). */
export function isErrorKind(s: string): s is ErrorKind {
  return KINDS.has(s);
}

/** The one-byte wire code of a kind (never 0). */
export function errorKindCode(kind: ErrorKind): number {
  return ERROR_KINDS.indexOf(kind) + 1;
}

/** The kind of a wire code; an unknown code (a newer peer's) reads as `internal`. */
export function errorKindOfCode(code: number): ErrorKind {
  return ERROR_KINDS[code - 1] ?? "internal";
}

export class ZestError extends Error {
  /** What went wrong, by meaning. */
  readonly kind: ErrorKind;

  constructor(kind: ErrorKind, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "ZestError";
    this.kind = kind;
  }

  /** The request itself is wrong (bad key expression, bad JSON, bad config). */
  static badRequest(message: string, cause?: unknown): ZestError {
    return new ZestError("bad_input", message, { cause });
  }
  /** The caller may not do this (admin write without permission). */
  static forbidden(message: string): ZestError {
    return new ZestError("forbidden", message);
  }
  /** The named thing does not exist. */
  static notFound(message: string): ZestError {
    return new ZestError("not_found", message);
  }
  /** Conflicts with existing state (duplicate storage name). */
  static conflict(message: string): ZestError {
    return new ZestError("conflict", message);
  }
  /** A backend or the fabric is unavailable. */
  static unavailable(message: string, cause?: unknown): ZestError {
    return new ZestError("unavailable", message, { cause });
  }
  /** A query did not complete in time. */
  static timeout(message: string): ZestError {
    return new ZestError("timeout", message);
  }
  /** A body or value is larger than its limit. */
  static tooLarge(message: string): ZestError {
    return new ZestError("too_large", message);
  }
}

/** True for kinds that say the router or a backend failed, not the request (logged as warnings). */
export function isServerSide(kind: ErrorKind): boolean {
  return kind === "internal" || kind === "unavailable" || kind === "timeout" || kind === "insufficient_storage";
}

/** Wraps any thrown value into a ZestError (unknown errors become `internal` with their message). */
export function toZestError(err: unknown): ZestError {
  if (err instanceof ZestError) return err;
  if (err instanceof Error && err.name === "KeyExprError") {
    // A key expression over the length limit is a 414, like an over-long URL; any other rule a 400.
    const kind = (err as Error & { kind?: string }).kind === "TooLong" ? "too_long" : "bad_input";
    return new ZestError(kind, err.message, { cause: err });
  }
  const message = err instanceof Error ? err.message : String(err);
  return new ZestError("internal", message, { cause: err });
}

/** One-line description of an error for logs and response bodies. */
export function errorMessage(err: unknown): string {
  const msg = err instanceof Error ? err.message : String(err);
  return msg.replace(/\s*\n\s*/g, " ");
}
