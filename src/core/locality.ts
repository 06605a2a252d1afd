/**
 * Locality, as in Zenoh 1.x: whether a declaration talks to its own session only, to every other
 * session (other front-door connections, other routers), or to both. A subscriber's or
 * queryable's `allowedOrigin` and a put's or get's `allowedDestination` must both allow a pair.
 */
export type Locality = "session_local" | "remote" | "any";

/** Where an operation comes from: the session that made it, and where it may go. */
export interface Origin {
  /** `Session.id` of the sender; `REMOTE_SESSION` for what arrived from another router. */
  readonly sessionId: number;
  readonly destination: Locality;
}

/** The session id of samples and queries from other routers: never equal to a local session. */
export const REMOTE_SESSION = -1;

/** What arrives from another router: remote to every local session. */
export const FROM_ANOTHER_ROUTER: Origin = { sessionId: REMOTE_SESSION, destination: "any" };

/** True when `locality` allows a peer that is (or is not) the same session. */
export function localityAllows(locality: Locality | undefined, sameSession: boolean): boolean {
  if (locality === undefined || locality === "any") return true;
  return locality === "session_local" ? sameSession : !sameSession;
}

/** True when a declaration of `declSession` with `allowedOrigin` may meet an operation from `origin`. */
export function localityMatches(
  origin: Origin | undefined,
  declSession: number | undefined,
  allowedOrigin: Locality | undefined,
): boolean {
  if (origin === undefined) return allowedOrigin !== "session_local";
  const same = declSession !== undefined && declSession === origin.sessionId;
  return localityAllows(origin.destination, same) && localityAllows(allowedOrigin, same);
}
