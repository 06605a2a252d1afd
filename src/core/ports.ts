import type { Reply } from "./reply.js";
import type { Sample } from "./sample.js";
/**
 * The narrow ports a `Session` offers to the parts built on it (storages, the REST read cache,
 * the admin space), so that none of them reaches into the `Router`.
 */
import type { Timestamp } from "./timestamp.js";

/** Where new timestamps come from: the router's hybrid logical clock. */
export interface Clock {
  /** A timestamp newer than every one this router made or observed. */
  newTimestamp(): Timestamp;
  /**
   * The same, reading the wall clock once per event-loop turn: the turn's later stamps are each one
   * tick past the last (unique and increasing still). For a door stamping a batch of writes at once.
   */
  newTimestampInTurn(): Timestamp;
}

/**
 * Something a query could answer changed: a storage applied a write (`put`, `delete`), or a
 * queryable was declared or undeclared (`declaration`; a subscriber changes no answer).
 */
export interface ChangeEvent {
  /** The key written (or the declared key expression). */
  readonly key: string;
  readonly kind: "put" | "delete" | "declaration";
}

/** A change-event listener. Called synchronously; it must not throw or do slow work. */
export type ChangeListener = (event: ChangeEvent) => void;

/**
 * The router's change events. Storages publish one when a write becomes visible to queries (and
 * again if a write they made visible is lost); read caches subscribe.
 */
export class ChangeFeed {
  private readonly listeners = new Set<ChangeListener>();

  /** Calls `listener` with every later event; the returned function unsubscribes. */
  subscribe(listener: ChangeListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Tells every subscriber. */
  publish(event: ChangeEvent): void {
    for (const l of this.listeners) l(event);
  }
}

/** Who is interested in a key: what the REST layer asks before writes and before caching a read. */
export interface Interest {
  /** True when a subscriber here, or one another router announced, takes writes on `key`. */
  hasSubscriber(key: string): boolean;
  /**
   * True when every queryable a query on `key` reaches is a storage on this router, so its
   * answer changes only through writes and declarations, which publish change events.
   */
  storagesOnly(key: string): boolean;
  /**
   * A default query's answer on the plain key `key`, read synchronously from local storages,
   * or undefined when it cannot be (see `Router.readStored`).
   */
  readStored?(key: string): Reply[] | undefined;
  /**
   * A default query's answer on the plain key `key` when only other routers can give it (no
   * queryable here reaches it), without the local dispatch; undefined when that is not the case
   * (see `Router.readRemoteOnly`). The answer, errors included, is the one `get` gives.
   */
  readRemote?(key: string): Promise<Reply[]> | undefined;
  /**
   * A default query's answer on `keyExpr` in batches sorted by key, when a single local storage
   * gives all of it, or undefined when that is not the case (see `Router.scanStored`).
   */
  scanStored?(keyExpr: string): AsyncIterable<readonly Sample[]> | undefined;
  /** True on a router joined to others through a fabric (their writes publish no local events). */
  readonly clustered: boolean;
}

/**
 * The routers this one is connected to, for front doors that show connectivity to their
 * clients (the remote API's transport and link events), so no door reaches into the `Router`.
 */
export interface Connectivity {
  /** Ids of the other routers reachable now (empty on a router alone). */
  peers(): readonly string[];
  /** Where the links go (the fabric's server, e.g. a NATS URL), if the fabric says. */
  server(): string | undefined;
  /** Calls `listener` when the peers (or declarations) may have changed; returns its unsubscriber. */
  onChange(listener: () => void): () => void;
}
