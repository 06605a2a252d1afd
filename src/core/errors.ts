/**
 * Typed errors. Every failure a user can cause or act on is a `ZestError` carrying the
 * HTTP status the REST layer answers with; the REST layer maps them in one place.
 */
export class ZestError extends Error {
  /** HTTP status code this error maps to. */
  readonly status: number;

  constructor(status: number, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "ZestError";
    this.status = status;
  }

  /** 400: the request itself is wrong (bad key expression, bad JSON, bad config). */
  static badRequest(message: string, cause?: unknown): ZestError {
    return new ZestError(400, message, { cause });
  }
  /** 403: the caller may not do this (admin write without permission). */
  static forbidden(message: string): ZestError {
    return new ZestError(403, message);
  }
  /** 404: the named thing does not exist. */
  static notFound(message: string): ZestError {
    return new ZestError(404, message);
  }
  /** 409: conflicts with existing state (duplicate storage name). */
  static conflict(message: string): ZestError {
    return new ZestError(409, message);
  }
  /** 503: a backend or the fabric is unavailable. */
  static unavailable(message: string, cause?: unknown): ZestError {
    return new ZestError(503, message, { cause });
  }
  /** 504: a query did not complete in time. */
  static timeout(message: string): ZestError {
    return new ZestError(504, message);
  }
}

/** Wraps any thrown value into a ZestError (unknown errors become 500 with their message). */
export function toZestError(err: unknown): ZestError {
  if (err instanceof ZestError) return err;
  if (err instanceof Error && err.name === "KeyExprError") return new ZestError(400, err.message, { cause: err });
  const message = err instanceof Error ? err.message : String(err);
  return new ZestError(500, message, { cause: err });
}

/** One-line description of an error for logs and response bodies. */
export function errorMessage(err: unknown): string {
  const msg = err instanceof Error ? err.message : String(err);
  return msg.replace(/\s*\n\s*/g, " ");
}
