/** The one place where error kinds become HTTP statuses. */
import type { ErrorKind } from "../core/errors.js";

const STATUS: Readonly<Record<ErrorKind, number>> = {
  bad_input: 400,
  unauthenticated: 401,
  forbidden: 403,
  not_found: 404,
  not_supported: 405,
  conflict: 409,
  precondition_failed: 412,
  too_large: 413,
  too_long: 414,
  insufficient_storage: 507,
  unavailable: 503,
  timeout: 504,
  internal: 500,
};

/** The HTTP status a REST response answers for an error of `kind`. */
export function httpStatus(kind: ErrorKind): number {
  return STATUS[kind];
}
