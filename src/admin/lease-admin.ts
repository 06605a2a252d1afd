/**
 * Leases in the admin space (docs/ttl-and-leases.md): `PUT @/router/<zid>/leases/<id>` with
 * `{ ttl: "10s" }` creates the lease or keeps it alive, `DELETE` revokes it (its keys are
 * deleted), and a GET lists each lease with its deadline and keys. Access control applies to
 * these keys like to any: creating and keeping alive is a `put`, revoking a `delete`.
 */
import type { Buffer } from "node:buffer";
import JSON5 from "json5";
import { Encoding } from "../core/encoding.js";
import { errorMessage, ZestError } from "../core/errors.js";
import type { Leases } from "../core/leases.js";
import { checkLeaseId, durationValue } from "../core/lifetime.js";
import type { Query } from "../core/query.js";
import type { Sample } from "../core/sample.js";
import { intersects } from "../keyexpr/index.js";

/** Keys a lease's admin entry lists at most (the count is always given). */
export const LEASE_KEYS_LISTED = 10_000;
/** Longest lease body read (`{ ttl: "10s" }` is 13 bytes). */
const MAX_LEASE_BODY = 1024;

export class LeaseAdmin {
  /** `@/router/<zid>/leases/`. */
  readonly prefix: string;
  readonly #leases: Leases;

  constructor(routerPrefix: string, leases: Leases) {
    this.prefix = `${routerPrefix}/leases/`;
    this.#leases = leases;
  }

  /** True when `key` is a lease's admin key (or under the leases). */
  owns(key: string): boolean {
    return key.startsWith(this.prefix);
  }

  /** Creates, keeps alive or revokes a lease; rejects with the 400/404 the writer sees. */
  async write(sample: Sample): Promise<void> {
    const id = checkLeaseId(sample.key.slice(this.prefix.length));
    if (sample.kind === "delete") {
      if (!this.#leases.revoke(id)) throw ZestError.notFound(`there is no lease ${id} on this router`);
      return;
    }
    this.#leases.grant(id, ttlOf(sample.payload));
  }

  /** Replies with each lease whose admin key intersects the query. */
  answer(query: Query): void {
    if (!intersects(query.key, `${this.prefix}**`)) return;
    for (const id of this.#leases.ids()) {
      const key = this.prefix + id;
      if (!intersects(query.key, key)) continue;
      const lease = this.#leases.get(id);
      if (lease === undefined) continue;
      const entry: Record<string, unknown> = {
        deadline: lease.deadline === undefined ? null : new Date(lease.deadline).toISOString(),
        id,
        key_count: lease.keys.length,
        keys: lease.keys.slice(0, LEASE_KEYS_LISTED),
        session: lease.ttlMs === undefined,
        ttl_ms: lease.ttlMs ?? null,
      };
      query.reply(key, JSON.stringify(entry), { encoding: Encoding.APP_JSON });
    }
  }
}

/** The lease's TTL from a PUT body: `{ ttl: "10s" }` (JSON5; a number is milliseconds). */
function ttlOf(payload: Buffer): number {
  if (payload.length > MAX_LEASE_BODY) throw ZestError.badRequest(`a lease body is at most ${MAX_LEASE_BODY} bytes`);
  let value: unknown;
  try {
    value = JSON5.parse(payload.toString("utf8"));
  } catch (err) {
    throw ZestError.badRequest(`a lease body is JSON like { "ttl": "10s" }: ${errorMessage(err)}`);
  }
  if (typeof value !== "object" || value === null || Array.isArray(value) || !Object.hasOwn(value, "ttl"))
    throw ZestError.badRequest('a lease body is JSON like { "ttl": "10s" }');
  for (const k of Object.keys(value))
    if (k !== "ttl") throw ZestError.badRequest(`a lease body has only "ttl", not ${JSON.stringify(k.slice(0, 64))}`);
  return durationValue((value as { ttl: unknown }).ttl, "the lease's ttl");
}
