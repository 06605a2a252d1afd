import type { KeyExprLimits } from "../keyexpr/index.js";
import type { QueryContent } from "./query.js";
import type { QueryTarget } from "./query-target.js";
import type { Reply } from "./reply.js";
import type { Sample } from "./sample.js";
import type { Selector } from "./selector.js";

/** A queryable declaration as other routers see it. */
export interface QueryableInfo {
  readonly key: string;
  readonly complete: boolean;
}

/** What a query carries to other routers besides its selector. */
export interface RemoteQueryOptions {
  /** Which queryables answer (default `all`): see docs/fabric-protocol.md, "Query targets". */
  readonly target?: QueryTarget;
  /** Payload, encoding and attachment for the queryables. */
  readonly content?: QueryContent | undefined;
  /**
   * The router that sent the query (answering side; undefined when unknown), for a door that hands
   * queries on to a network only some routers joined (docs/zenoh-network.md, "Clusters").
   */
  readonly from?: string | undefined;
}

/** What a fabric may ask of the router it is attached to. */
export interface FabricHost {
  /** Router id (uppercase hex). */
  readonly zid: string;
  /**
   * This router's key-expression limits (docs/keyexpr-limits.md), to which the fabric holds the
   * declarations other routers announce; the defaults when absent.
   */
  readonly keyExprLimits?: KeyExprLimits;
  /**
   * Delivers a sample that arrived from another router to the local subscribers only (`network`:
   * that router got it from a zenoh network it joined, docs/zenoh-network.md "Clusters").
   */
  deliverRemote(sample: Sample, network?: boolean): Promise<void>;
  /** Answers a query from another router with the local queryables only, chosen by `options.target`. */
  answerRemote(
    selector: Selector,
    timeoutMs: number,
    onReply: (reply: Reply) => void,
    options?: RemoteQueryOptions,
  ): Promise<void>;
  /**
   * The local replies to another router's default query (target `all`, no parameters, no
   * content) on the plain key `key`, read synchronously, exactly those `answerRemote` would give;
   * undefined when they cannot be read that way (then the fabric calls `answerRemote`). Lets a
   * router answer a one-key GET of a stored key without a query, its promises and its deadline.
   */
  readRemote?(key: string): Reply[] | undefined;
  /** Keys of the local subscribers (storages included), deduplicated. */
  subscriberKeys(): string[];
  /**
   * The local subscribers as declared to other routers (absent: every key is `plain`): the keys
   * of those that acknowledge every write, and the storages of shared stores with their store,
   * which a write already held by that store needs not wait for (docs/conditional-writes.md,
   * "Shared stores").
   */
  subscriberDeclarations?(): {
    plain: string[];
    stores: ReadonlyArray<{ readonly key: string; readonly store: string }>;
  };
  /** The local queryables, deduplicated by key. */
  queryables(): QueryableInfo[];
  /** Keys of the local liveliness tokens (none when absent): other routers see them until this router dies. */
  livelinessTokens?(): string[];
  /**
   * Another router's declarations of one kind changed: `added` and `removed` key expressions
   * (all of them removed when the router is forgotten; a queryable whose completeness changed is
   * in both). For liveliness subscribers, say.
   */
  remoteDeclarationsChanged?(change: RemoteDeclarationChange): void;
}

/**
 * One declaration another router announced: its router, kind and key expression, and for a
 * queryable whether it is complete (zenoh's queryable info; false for the other kinds).
 */
export interface RemoteDeclaration {
  readonly zid: string;
  readonly kind: DeclarationKind;
  readonly key: string;
  readonly complete: boolean;
}

/** What `FabricHost.remoteDeclarationsChanged` reports. */
export interface RemoteDeclarationChange {
  readonly zid: string;
  readonly kind: DeclarationKind;
  readonly added: readonly string[];
  readonly removed: readonly string[];
}

/** What a router declares to the others: subscribers, queryables, liveliness tokens. */
export type DeclarationKind = "subscriber" | "queryable" | "token";

/** Health of the link to other routers, shown in the admin space (`@/router/<zid>` and `@/router/<zid>/health`). */
export interface FabricStatus {
  readonly kind: string;
  readonly connected: boolean;
  readonly detail?: Record<string, unknown>;
}

/**
 * The cluster-wide arbiter of conditional writes on storages each router keeps apart (memory,
 * SQLite): see docs/conditional-writes.md, "Across routers".
 */
export interface VersionClaims {
  /**
   * Claims, once across the cluster, the replacement of `version` of `key` (undefined: the key
   * holds nothing) by the write whose version is `successor`. Resolves when this write won it
   * (claiming again with the same successor wins); rejects with `precondition_failed` when another
   * write claimed it first, `conflict` when the cluster cannot arbitrate (no JetStream), and
   * `unavailable` when it could not be decided (nothing is written then).
   */
  claim(key: string, version: string | undefined, successor: string): Promise<void>;
}

/**
 * How routers reach each other. The default is none (one process); `nats` joins a NATS cluster.
 * The router calls `publish` and `query` for local operations only, never for remote ones.
 */
export interface Fabric {
  start(host: FabricHost): Promise<void>;
  /** Sends a local sample to the routers with a matching subscriber. Resolves when they have it. */
  publish(sample: Sample, network?: boolean): Promise<void>;
  /**
   * Forwards a query to the routers with a matching queryable (for `best_matching` and
   * `all_complete`, complete ones as `completeQueryables` says); calls `onReply` for each of their
   * replies and resolves once each has sent its final reply, or at `timeoutMs` after reporting an
   * error reply for each router that did not finish.
   */
  query(
    selector: Selector,
    timeoutMs: number,
    onReply: (reply: Reply) => void,
    options?: RemoteQueryOptions,
  ): Promise<void>;
  /** Ids of the other routers that declared a complete queryable including `keyExpr`, sorted. */
  completeQueryables?(keyExpr: string): string[];
  /** The local declarations changed (see `FabricHost`). */
  declarationsChanged(): void;
  /** True when another router announced a subscriber matching `key`. */
  hasSubscriber?(key: string): boolean;
  /** Ids of the other routers that declared a `kind` intersecting `keyExpr`, sorted. */
  interest?(keyExpr: string, kind: DeclarationKind): string[];
  /** True when another router announced a queryable matching `key`. */
  hasQueryable?(key: string): boolean;
  /**
   * The declarations of `kind` other routers announced that intersect `keyExpr`, each with its
   * router (and completeness): what a router joined to a zenoh network declares to it for them.
   */
  declarations?(keyExpr: string, kind: DeclarationKind): readonly RemoteDeclaration[];
  status(): FabricStatus;
  /**
   * Where conditional writes on storages other routers also hold are claimed; absent when the
   * fabric has none (no JetStream reachable through it): such writes are then refused.
   */
  readonly versionClaims?: VersionClaims | undefined;
  /** `status().connected` without building the status: asked on timers by every replica. */
  isConnected(): boolean;
  /** Ids of the other routers currently reachable (shown as the router's sessions); none if absent. */
  peers?(): string[];
  close(): Promise<void>;
}

/**
 * A network outside the fabric that this router joined, as may other routers of the fabric (a
 * zenoh network, docs/zenoh-network.md "Clusters"). Several routers joined to it each get its
 * samples directly; one of them, elected as zenoh's routers elect one to bridge two networks
 * they share, passes them on to the routers that did not join.
 */
export interface JoinedNetwork {
  /** The session the network's samples enter this router by, while a connection is open. */
  readonly sessionId: number | undefined;
  /** True while this router is connected: it gets the network's samples directly, not from the fabric. */
  readonly open: boolean;
  /** True when this router is the one that passes the network's samples to the fabric. */
  readonly bridging: boolean;
}
