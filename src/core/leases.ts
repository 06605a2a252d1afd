/**
 * Leases (docs/ttl-and-leases.md): a named lifetime that keys written with it share. A lease is
 * granted and kept alive with a TTL, or revoked; when it expires or is revoked, every key still
 * attached to it is deleted, all together. Leases belong to one router (they live in its memory);
 * the deletes they cause reach every router like any delete.
 *
 * A key belongs to at most one lease: a later write on it, with another lease or with none,
 * through this router moves or detaches it (as etcd does), so a revocation never deletes a
 * value written since without the lease.
 */
import { ZestError } from "./errors.js";
import { checkLeaseId, MAX_TTL_MS, MIN_TTL_MS } from "./lifetime.js";

/** Most leases a router holds at once. */
export const MAX_LEASES = 10_000;
/** Most keys attached to one lease. */
export const MAX_LEASE_KEYS = 1_000_000;

/** A lease as the admin space shows it. */
export interface LeaseInfo {
  readonly id: string;
  /** Its TTL in ms; undefined for a session's lease (it lasts as long as the session). */
  readonly ttlMs: number | undefined;
  /** When it expires (Unix ms) unless kept alive; undefined for a session's lease. */
  readonly deadline: number | undefined;
  /** The keys attached to it, sorted. */
  readonly keys: readonly string[];
}

class Lease {
  readonly keys = new Set<string>();
  ttlMs: number | undefined;
  deadline: number | undefined;
  timer: NodeJS.Timeout | undefined;
  constructor(readonly id: string) {}
}

/**
 * The leases of one router. `expire` is called with the keys of a lease that ended (expired or
 * revoked), to delete them.
 */
export class Leases {
  readonly #leases = new Map<string, Lease>();
  readonly #byKey = new Map<string, Lease>();
  readonly #expire: (keys: readonly string[], leaseId: string) => void;

  constructor(expire: (keys: readonly string[], leaseId: string) => void) {
    this.#expire = expire;
  }

  /** Number of leases held. */
  get size(): number {
    return this.#leases.size;
  }

  /**
   * Creates lease `id` with `ttlMs`, or keeps it alive (its deadline becomes now + `ttlMs`).
   * Returns true when it was created. Throws `bad_input` for a bad id or TTL, `insufficient_storage`
   * past `MAX_LEASES`.
   */
  grant(id: string, ttlMs: number, now = Date.now()): boolean {
    checkLeaseId(id);
    if (!Number.isSafeInteger(ttlMs) || ttlMs < MIN_TTL_MS || ttlMs > MAX_TTL_MS)
      throw ZestError.badRequest(`a lease's ttl must be from ${MIN_TTL_MS} ms to 365 days`);
    let lease = this.#leases.get(id);
    const created = lease === undefined;
    if (lease === undefined) {
      if (id.startsWith("session."))
        throw ZestError.badRequest(`lease ids starting with "session." are the sessions' own`);
      if (this.#leases.size >= MAX_LEASES)
        throw new ZestError("insufficient_storage", `this router holds ${MAX_LEASES} leases already`);
      lease = new Lease(id);
      this.#leases.set(id, lease);
    } else if (lease.ttlMs === undefined) {
      throw ZestError.badRequest(`lease ${id} belongs to a session: it ends with the session, not with a ttl`);
    }
    lease.ttlMs = ttlMs;
    lease.deadline = now + ttlMs;
    if (lease.timer) clearTimeout(lease.timer);
    const l = lease;
    lease.timer = setTimeout(() => this.#end(l), ttlMs);
    lease.timer.unref();
    return created;
  }

  /** A session's lease (no TTL; revoked when the session closes): its id. */
  grantSession(id: string): string {
    if (!this.#leases.has(id)) this.#leases.set(id, new Lease(id));
    return id;
  }

  /** Revokes lease `id`: its keys are deleted. False when there is no such lease. */
  revoke(id: string): boolean {
    const lease = this.#leases.get(id);
    if (lease === undefined) return false;
    this.#end(lease);
    return true;
  }

  /**
   * A write on `key` through this router, with lease `leaseId` or none: attaches the key to that
   * lease (detaching it from any other). Throws `bad_input` when the lease does not exist.
   */
  wrote(key: string, leaseId: string | undefined): void {
    const to = leaseId === undefined ? undefined : this.#leases.get(leaseId);
    if (leaseId !== undefined && to === undefined)
      throw ZestError.badRequest(
        `there is no lease ${leaseId} on this router (create it first with a PUT on its admin key)`,
      );
    const from = this.#byKey.get(key);
    if (from === to) return;
    if (to !== undefined && to.keys.size >= MAX_LEASE_KEYS)
      throw new ZestError("insufficient_storage", `lease ${to.id} holds ${MAX_LEASE_KEYS} keys already`);
    from?.keys.delete(key);
    if (to === undefined) this.#byKey.delete(key);
    else {
      to.keys.add(key);
      this.#byKey.set(key, to);
    }
  }

  /** Lease `id` as the admin space shows it, or undefined. */
  get(id: string): LeaseInfo | undefined {
    const l = this.#leases.get(id);
    return l && { id: l.id, ttlMs: l.ttlMs, deadline: l.deadline, keys: [...l.keys].sort() };
  }

  /** The ids of every lease, sorted. */
  ids(): string[] {
    return [...this.#leases.keys()].sort();
  }

  /** Ends every lease without deleting its keys (the router is closing). */
  close(): void {
    for (const l of this.#leases.values()) if (l.timer) clearTimeout(l.timer);
    this.#leases.clear();
    this.#byKey.clear();
  }

  #end(lease: Lease): void {
    if (lease.timer) clearTimeout(lease.timer);
    this.#leases.delete(lease.id);
    const keys = [...lease.keys];
    for (const k of keys) this.#byKey.delete(k);
    if (keys.length > 0) this.#expire(keys, lease.id);
  }
}
