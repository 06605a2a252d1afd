/**
 * Key spaces that belong to the routers themselves: replication's `@repl/**`
 * (docs/replication.md, "Who may query the alignment"). Only router-internal sessions query or
 * answer there, and other routers through the fabric; a front door's session is refused.
 */
import { intersects } from "../keyexpr/index.js";

/** The root chunk of replication's key space (alignment queryables, liveliness tokens). */
export const REPLICATION_ROOT = "@repl";
const REPLICATION_ALL = `${REPLICATION_ROOT}/**`;

/** True when key expression `key` reaches replication's key space (`@repl` or below). */
export function touchesReplication(key: string): boolean {
  // `@` chunks are verbatim: only a key expression whose first chunk is `@repl` reaches it.
  return key.charCodeAt(0) === 64 && intersects(key, REPLICATION_ALL);
}
