/**
 * The one place where error kinds become HTTP statuses, for every door that answers in HTTP (REST,
 * and the remote API's upgrade refusals). A door with another wire maps `ErrorKind` in its own
 * table, in one place (docs/adding-a-front-door.md).
 */
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

/** The HTTP status an answer carries for an error of `kind`. */
export function httpStatus(kind: ErrorKind): number {
  return STATUS[kind];
}
