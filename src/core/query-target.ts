import { includes } from "../keyexpr/index.js";
import { localityMatches, type Origin } from "./locality.js";

/**
 * Which queryables a query reaches (Zenoh 1.x): `best_matching` (default) a complete queryable
 * that includes the key expression if there is one, otherwise every matching one; `all` every
 * matching one; `all_complete` only complete queryables that include the key expression.
 */
export type QueryTarget = "best_matching" | "all" | "all_complete";

interface Candidate {
  readonly key: string;
  readonly complete: boolean;
  readonly sessionId?: number;
  readonly allowedOrigin?: "session_local" | "remote" | "any";
}

/**
 * Picks the local queryables a query reaches among those whose key intersects it. `exclusive`
 * says a best-matching query found its complete queryable here, so other routers need not be asked.
 * A storage is complete only with its `complete` option, as zenoh's: a default `**` storage must
 * not hide every eval from a best-matching get (docs/remote-api.md).
 */
export function selectQueryables<T extends Candidate>(
  matching: T[],
  key: string,
  target: QueryTarget,
  origin: Origin | undefined,
): { selected: T[]; exclusive: boolean } {
  const allowed = matching.filter((q) => localityMatches(origin, q.sessionId, q.allowedOrigin));
  if (target === "all") return { selected: allowed, exclusive: false };
  const complete = allowed.filter((q) => q.complete && includes(q.key, key));
  if (target === "all_complete") return { selected: complete, exclusive: false };
  if (complete.length > 0) return { selected: [complete[0]!], exclusive: true };
  return { selected: allowed, exclusive: false };
}
