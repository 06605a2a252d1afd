/**
 * What the router has declared to a client for one INTEREST in subscribers or queryables
 * (docs/zenoh-protocol.md, "INTEREST"), kept in step with what matches now as zenohd keeps it:
 * a key expression that starts matching is declared under a new id; one whose info changes (a
 * queryable's completeness) is declared again under the same id with the new info; one that
 * stops matching is undeclared.
 */
import type { Session } from "../core/session.js";
import { includes } from "../keyexpr/index.js";
import type { Declaration } from "./codec/declarations.js";

/** One declaration to send; `complete` is a queryable's completeness (false for subscribers). */
export interface DeclarationChange {
  readonly kind: "declare" | "undeclare";
  readonly id: number;
  readonly key: string;
  readonly complete: boolean;
}

export class InterestDeclarations {
  /** Declared key expressions: their id and the completeness declared with them. */
  private readonly declared = new Map<string, { id: number; complete: boolean }>();

  /** `nextId` gives the ids of new declarations (the session's numbering of its answers). */
  constructor(private readonly nextId: () => number) {}

  /**
   * The changes that bring the declarations to `now` (key expression → completeness), in the
   * order zenohd sends them: undeclarations first, then (re)declarations.
   */
  update(now: ReadonlyMap<string, boolean>): DeclarationChange[] {
    const out: DeclarationChange[] = [];
    for (const [key, d] of this.declared)
      if (!now.has(key)) {
        this.declared.delete(key);
        out.push({ kind: "undeclare", id: d.id, key, complete: d.complete });
      }
    for (const [key, complete] of now) {
      const d = this.declared.get(key);
      if (d === undefined) {
        const id = this.nextId();
        this.declared.set(key, { id, complete });
        out.push({ kind: "declare", id, key, complete });
      } else if (d.complete !== complete) {
        d.complete = complete;
        out.push({ kind: "declare", id: d.id, key, complete });
      }
    }
    return out;
  }

  /** Takes `now` as declared without sending anything (an INTEREST in the future only). */
  assume(now: ReadonlyMap<string, boolean>): void {
    for (const [key, complete] of now) this.declared.set(key, { id: this.nextId(), complete });
  }
}

/**
 * The aggregated answer for an INTEREST on `key` (what a client's publisher, querier or matching
 * listener asks): `key` itself while anything matches, complete when a complete queryable
 * includes all of `key`, as zenohd aggregates queryable infos.
 */
export function aggregated(key: string, matching: ReadonlyMap<string, boolean>): Map<string, boolean> {
  if (matching.size === 0) return new Map();
  let complete = false;
  for (const [k, c] of matching)
    if (c && includes(k, key)) {
      complete = true;
      break;
    }
  return new Map([[key, complete]]);
}

/**
 * What an INTEREST in `kind` on `key` is answered with now, for a client (its own declarations
 * excepted): each matching key expression with its completeness, or the aggregated answer.
 */
export function matchingNow(
  session: Session,
  kind: "subscribers" | "queryables",
  key: string,
  aggregate: boolean,
): Map<string, boolean> {
  if (kind === "queryables") {
    const infos = session.matchingQueryables(key, { allowedDestination: "remote" });
    return aggregate ? aggregated(key, infos) : infos;
  }
  const keys = aggregate
    ? session.matchingStatus(key, kind, { allowedDestination: "remote" })
      ? [key]
      : []
    : session.matchingKeys(key, kind, { allowedDestination: "remote" });
  return new Map(keys.map((k) => [k, false]));
}

/** The DECLARE body of a change, its key named in full. */
export function declarationOf(kind: "subscribers" | "queryables", c: DeclarationChange): Declaration {
  const key = { scope: 0, suffix: c.key, senderMapping: false };
  if (c.kind === "undeclare")
    return kind === "subscribers" ? { kind: "unsubscriber", id: c.id, key } : { kind: "unqueryable", id: c.id, key };
  return kind === "subscribers"
    ? { kind: "subscriber", id: c.id, key }
    : { kind: "queryable", id: c.id, key, complete: c.complete, distance: 0 };
}
