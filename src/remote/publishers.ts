/**
 * The remote API's publishers and queriers (docs/remote-api.md), and the matching listeners on
 * them: what only this protocol has, a key and QoS (and a querier's settings) kept by the
 * client's id, so that its later puts and gets name them by id. Access and limits are the face's.
 */
import { ZestError } from "../core/errors.js";
import type { CanonicalKey } from "../core/key.js";
import type { MatchingListener } from "../core/matching.js";
import type { Session } from "../core/session.js";
import type { QuerySettings, WireQos } from "./protocol.js";

export interface Publisher {
  readonly key: CanonicalKey;
  readonly encoding: string;
  readonly qos: WireQos;
}

export interface Querier {
  readonly key: CanonicalKey;
  readonly qos: WireQos;
  readonly settings: QuerySettings;
  readonly timeoutMs: number;
}

/** A publisher or querier as matching asks it. */
interface Owner {
  readonly key: string;
  readonly kind: "subscribers" | "queryables";
  readonly qos: WireQos;
  readonly target?: QuerySettings["target"];
}

/** `id` in `map`, or `not_found` naming `what`. */
export function known<T>(map: ReadonlyMap<number, T>, id: number, what: string): T {
  const v = map.get(id);
  if (v === undefined) throw ZestError.notFound(`unknown ${what} id ${id}`);
  return v;
}

export class PublishersAndQueriers {
  readonly publishers = new Map<number, Publisher>();
  readonly queriers = new Map<number, Querier>();
  readonly #listeners = new Map<number, MatchingListener>();

  constructor(private readonly session: Session) {}

  /** Publishers, queriers and matching listeners held. */
  get size(): number {
    return this.publishers.size + this.queriers.size + this.#listeners.size;
  }

  /** Throws `conflict` when `id` is already one of `map`'s (publishers, queriers, listeners). */
  static fresh(map: { has(id: number): boolean }, id: number): void {
    if (map.has(id)) throw ZestError.conflict(`id ${id} is already declared`);
  }

  get listeners(): ReadonlyMap<number, MatchingListener> {
    return this.#listeners;
  }

  /** Removes `id` from `map`; `not_found` when absent. */
  undeclare<T>(map: Map<number, T>, id: number, what: string): T {
    const v = known(map, id, what);
    map.delete(id);
    return v;
  }

  #owner(publisher: boolean, id: number): Owner {
    if (publisher) {
      const p = known(this.publishers, id, "publisher");
      return { key: p.key, kind: "subscribers", qos: p.qos };
    }
    const q = known(this.queriers, id, "querier");
    return { key: q.key, kind: "queryables", qos: q.qos, target: q.settings.target };
  }

  /** Whether a publisher's (or querier's) key has subscribers (or queryables) now. */
  matchingStatus(publisher: boolean, ownerId: number): boolean {
    const o = this.#owner(publisher, ownerId);
    return this.session.matchingStatus(o.key, o.kind, { allowedDestination: o.qos.locality, target: o.target });
  }

  /**
   * A matching listener `id` on a publisher (or querier): `notify` on each change. Returns what
   * to run after the response to the declaration: the status when it is already matching.
   */
  declareListener(id: number, publisher: boolean, ownerId: number, notify: (matching: boolean) => void): () => void {
    const o = this.#owner(publisher, ownerId);
    PublishersAndQueriers.fresh(this.#listeners, id);
    const listener = this.session.declareMatchingListener(o.key, o.kind, notify, {
      allowedDestination: o.qos.locality,
      target: o.target,
    });
    this.#listeners.set(id, listener);
    return () => {
      if (listener.matching && this.#listeners.get(id) === listener) notify(true);
    };
  }

  undeclareListener(id: number): void {
    this.undeclare(this.#listeners, id, "matching listener").undeclare();
  }

  /** Forgets everything (the session undeclares the listeners). */
  clear(): void {
    this.publishers.clear();
    this.queriers.clear();
    this.#listeners.clear();
  }
}
