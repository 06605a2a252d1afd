/**
 * The limits of one zenoh client's face, the same on both zenoh doors (docs/zenoh-protocol.md,
 * docs/remote-api.md): defined here once, each door's config section defaults to them.
 */

/** Per-client limits of a face. */
export interface FaceLimits {
  /** Declarations of every kind the client may hold at once. */
  readonly maxDeclarations: number;
  /**
   * Gets the client may have in flight: past it a get is refused (`unavailable`). A memory bound,
   * far above any legitimate burst: the client is held back long before, at `pauseAtPendingGets`.
   */
  readonly maxPendingGets: number;
  /**
   * Gets in flight at which the door stops reading the client (TCP holds it back) until one
   * ends: a burst of gets is slowed down, never refused, as zenohd answers them all. Above any
   * burst seen from a real client: zenoh-pico's getter blocks on a full socket while holding the
   * lock its reader needs, so holding it back at 1,000 (of its test's 10,000) deadlocked it.
   */
  readonly pauseAtPendingGets: number;
  /**
   * Router queries waiting on the client's queryables: past it a query gets an `unavailable`
   * error reply. A memory bound, as `maxPendingGets`: zenohd forwards every query, and a burst of
   * 10,000 gets on one client's queryable (pico's `z_client_test`) is legitimate.
   */
  readonly maxPendingQueries: number;
  /** The longest a get of the client's may run (ms). */
  readonly maxQueryTimeoutMs: number;
}

export const DEFAULT_FACE_LIMITS: FaceLimits = {
  maxDeclarations: 10_000,
  maxPendingGets: 65_536,
  pauseAtPendingGets: 16_384,
  maxPendingQueries: 65_536,
  maxQueryTimeoutMs: 600_000,
};
