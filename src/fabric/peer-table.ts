/**
 * The other routers, as their announcements describe them: membership (joined on the first
 * declarations or heartbeat heard, forgotten on goodbye or after `peerTimeoutMs` of silence),
 * their epoch and declarations version, and their declarations indexed by kind so that
 * `interest(key, kind)` answers "which routers want this key". See docs/fabric-protocol.md.
 */
import { checkKeyExprLimits, DEFAULT_KEYEXPR_LIMITS, KeTrie, type KeyExprLimits } from "../keyexpr/index.js";
import { errorMessage } from "../core/errors.js";
import type { RemoteDeclaration, RemoteDeclarationChange } from "../core/fabric.js";
import type { Logger } from "../core/log.js";
import type { Clock } from "./clock.js";
import type {
  Declaration,
  DeclarationKind,
  DeclarationsMessage,
  HeartbeatMessage,
  WireDeclarationKind,
} from "./envelope.js";

/** Key expressions whose `interest` answers are remembered, per kind (then it starts over). */
const INTEREST_CACHE_MAX = 4096;
/** Longer key expressions are looked up each time: the cache stays small whatever the keys. */
const INTEREST_CACHE_KEY_MAX = 256;

/** What the table knows of one router. */
export interface Peer {
  readonly zid: string;
  readonly epoch: number;
  readonly ver: number;
  readonly decls: readonly Declaration[];
  readonly lastSeen: number;
}

interface MutablePeer {
  readonly zid: string;
  epoch: number;
  ver: number;
  decls: Declaration[];
  /** Its entries in the table's index (removed by identity). */
  entries: RemoteDeclaration[];
  lastSeen: number;
  /** Dropped declarations were already logged as a warning in this epoch: later ones go to debug. */
  warned: boolean;
}

/**
 * Most declarations one router may announce (docs/fabric-protocol.md, "Limits"): far above what a
 * router declares (one per distinct subscriber, queryable and token key), low enough that one
 * router cannot grow this router's index without bound.
 */
export const DEFAULT_MAX_DECLARATIONS_PER_PEER = 100_000;

/** What the table holds another router's declarations to. */
export interface DeclarationLimits {
  /** This router's key-expression limits (docs/keyexpr-limits.md): another router may run with others. */
  readonly keyExpr: KeyExprLimits;
  /** Most declarations kept per router; those beyond are dropped (`DEFAULT_MAX_DECLARATIONS_PER_PEER`). */
  readonly maxPerPeer: number;
}

const DEFAULT_LIMITS: DeclarationLimits = {
  keyExpr: DEFAULT_KEYEXPR_LIMITS,
  maxPerPeer: DEFAULT_MAX_DECLARATIONS_PER_PEER,
};

/** Why a router was forgotten: it said goodbye, or it went silent. */
export type ForgetReason = "left" | "silent";

/** What the table tells the rest of the fabric. */
export interface PeerEvents {
  /** `zid` showed life (any message from it). */
  alive(zid: string): void;
  /** `zid`'s declarations were replaced (it joined, restarted or changed them). */
  changed(zid: string): void;
  /** Declarations of one kind that `zid` added or removed (all removed when it is forgotten). */
  declarations?(change: RemoteDeclarationChange): void;
  /** `zid` is forgotten: it is dead, and what waited for it stops waiting. */
  forgotten(zid: string, reason: ForgetReason): void;
}

/** A storage of a shared store on another router, as `ackTargets` looks it up. */
interface StoreEntry {
  readonly zid: string;
  readonly store: string;
}

/** No router: what `interest` answers when nobody declared the kind asked (shared, frozen). */
const NOBODY: readonly string[] = Object.freeze([]);

/** The index a declaration goes in: a storage of a shared store is a subscriber to every other question. */
function indexKind(kind: WireDeclarationKind): DeclarationKind {
  return kind === "store" ? "subscriber" : kind;
}

/** Heartbeat outcome: the sender is known and up to date, or its declarations must be fetched. */
export type HeartbeatResult = "known" | "stale";

/** Routers and their declarations. */
export class PeerTable {
  private readonly peers = new Map<string, MutablePeer>();
  /**
   * Every router's declarations by kind, each entry with its router (and completeness): which
   * routers want a key, and what a router joined to a zenoh network declares to it for them.
   */
  private readonly byKind = new Map<DeclarationKind, KeTrie<RemoteDeclaration>>([
    ["subscriber", new KeTrie<RemoteDeclaration>()],
    ["queryable", new KeTrie<RemoteDeclaration>()],
    ["token", new KeTrie<RemoteDeclaration>()],
  ]);
  /**
   * Subscribers other than storages of shared stores (which are in `byKind` as subscribers too),
   * and those storages with their store: who a write a shared store already holds waits for.
   */
  private readonly plainSubscribers = new KeTrie<string>();
  private readonly stores = new KeTrie<StoreEntry>();
  /** Each router's entries in `stores`, to remove them by identity. */
  private readonly storeEntries = new Map<string, StoreEntry[]>();
  /**
   * `interest` answers by kind and key expression: every write asks which routers want its key,
   * and a walk of the trie per write cost more than the rest of the lookup. Cleared whenever the
   * index changes (declarations replaced, a router forgotten), so an answer is never stale.
   */
  private readonly interestCache = new Map<DeclarationKind, Map<string, readonly string[]>>([
    ["subscriber", new Map()],
    ["queryable", new Map()],
    ["token", new Map()],
  ]);

  constructor(
    private readonly clock: Clock,
    private readonly peerTimeoutMs: number,
    private readonly events: PeerEvents,
    private readonly logger: Logger,
    private readonly limits: DeclarationLimits = DEFAULT_LIMITS,
  ) {}

  /** Router ids, sorted. */
  ids(): string[] {
    return [...this.peers.keys()].sort();
  }

  get size(): number {
    return this.peers.size;
  }

  get(zid: string): Peer | undefined {
    return this.peers.get(zid);
  }

  /** Routers that declared a `kind` intersecting `keyExpr`, sorted and deduplicated (shared: do not modify). */
  interest(keyExpr: string, kind: DeclarationKind): readonly string[] {
    const index = this.byKind.get(kind)!;
    // Nobody declared this kind (a router alone on NATS, say): no walk, and no cache entry per
    // key, which for writes on ever new keys was most of what each write cost the table.
    if (index.size === 0) return NOBODY;
    const cache = this.interestCache.get(kind)!;
    let ids = cache.get(keyExpr);
    if (ids === undefined) {
      const hits = index.intersecting(keyExpr);
      ids = hits.length === 0 ? [] : hits.length === 1 ? [hits[0]!.zid] : [...new Set(hits.map((d) => d.zid))].sort();
      if (keyExpr.length <= INTEREST_CACHE_KEY_MAX) {
        if (cache.size >= INTEREST_CACHE_MAX) cache.clear();
        cache.set(keyExpr, ids);
      }
    }
    return ids;
  }

  /**
   * The routers a write on `keyExpr` already held by the shared stores `heldIn` waits for: those
   * with a matching subscriber that is not a storage of one of those stores (sorted, deduplicated).
   */
  ackTargets(keyExpr: string, heldIn: readonly string[]): readonly string[] {
    const all = this.interest(keyExpr, "subscriber");
    if (all.length === 0) return all;
    // An empty index (every subscriber elsewhere a storage of a shared store, say) is not walked.
    const out = new Set(this.plainSubscribers.size === 0 ? NOBODY : this.plainSubscribers.intersecting(keyExpr));
    if (this.stores.size > 0)
      for (const e of this.stores.intersecting(keyExpr)) if (!heldIn.includes(e.store)) out.add(e.zid);
    return out.size === all.length ? all : [...out].sort();
  }

  /** Routers that declared a complete queryable including `keyExpr`, sorted and deduplicated. */
  complete(keyExpr: string): string[] {
    const ids: string[] = [];
    for (const d of this.byKind.get("queryable")!.including(keyExpr)) if (d.complete) ids.push(d.zid);
    if (ids.length <= 1) return ids;
    return [...new Set(ids)].sort();
  }

  /** The other routers' declarations of `kind` intersecting `keyExpr`, each with its router (and completeness). */
  declarations(keyExpr: string, kind: DeclarationKind): RemoteDeclaration[] {
    return this.byKind.get(kind)!.intersecting(keyExpr);
  }

  /** True when router `zid` declared a `kind` intersecting `keyExpr`. */
  wants(zid: string, keyExpr: string, kind: DeclarationKind): boolean {
    return this.byKind
      .get(kind)!
      .intersecting(keyExpr)
      .some((d) => d.zid === zid);
  }

  /**
   * Records a router's declarations. Returns true when they replaced what was known (a new router,
   * a new epoch or a newer version); an older or equal version only counts as a sign of life.
   */
  ingest(m: DeclarationsMessage): boolean {
    const now = this.clock.now();
    let peer = this.peers.get(m.zid);
    if (peer && peer.epoch === m.epoch && peer.ver >= m.ver) {
      peer.lastSeen = now;
      this.events.alive(m.zid);
      return false;
    }
    if (!peer) {
      peer = { zid: m.zid, epoch: m.epoch, ver: m.ver, decls: [], entries: [], lastSeen: now, warned: false };
      this.peers.set(m.zid, peer);
      this.logger.info({ zid: m.zid }, "router joined");
    }
    const before = peer.decls;
    this.unindex(peer);
    if (peer.epoch !== m.epoch) peer.warned = false;
    peer.epoch = m.epoch;
    peer.ver = m.ver;
    peer.lastSeen = now;
    peer.decls = this.index(peer, m.decls);
    this.clearInterest();
    this.events.alive(m.zid);
    this.events.changed(m.zid);
    this.report(m.zid, before, peer.decls);
    return true;
  }

  /**
   * Indexes the declarations of `peer` that this router accepts, and returns them: each key held
   * to this router's key-expression limits and valid (canonical), at most `maxPerPeer` of them.
   * The rest are dropped, never thrown: the valid ones of the message still apply.
   */
  private index(peer: MutablePeer, decls: readonly Declaration[]): Declaration[] {
    const kept: Declaration[] = [];
    let invalid = 0;
    let firstReason = "";
    let i = 0;
    for (; i < decls.length && kept.length < this.limits.maxPerPeer; i++) {
      const d = decls[i]!;
      try {
        // Size first, so validation and indexing cost what this router's limits allow.
        checkKeyExprLimits(d.key, this.limits.keyExpr);
        if (d.kind === "store") {
          const entry: StoreEntry = { zid: peer.zid, store: d.store! };
          this.stores.add(d.key, entry);
          const entries = this.storeEntries.get(peer.zid);
          if (entries === undefined) this.storeEntries.set(peer.zid, [entry]);
          else entries.push(entry);
        } else if (d.kind === "subscriber") this.plainSubscribers.add(d.key, peer.zid);
        // A storage of a shared store is a subscriber to every other reader of the table.
        const kind = indexKind(d.kind);
        const entry: RemoteDeclaration = { zid: peer.zid, kind, key: d.key, complete: d.complete };
        this.byKind.get(kind)!.add(d.key, entry);
        peer.entries.push(entry);
        kept.push(d);
      } catch (err) {
        if (invalid++ === 0) firstReason = `${d.kind}: ${errorMessage(err)}`;
      }
    }
    const beyond = decls.length - i;
    if (invalid > 0 || beyond > 0) {
      const fields = {
        zid: peer.zid,
        announced: decls.length,
        kept: kept.length,
        ...(invalid > 0 && { invalid, firstInvalid: firstReason }),
        ...(beyond > 0 && { beyondLimit: beyond, maxPerPeer: this.limits.maxPerPeer }),
      };
      const message = "dropped declarations of another router";
      if (peer.warned) this.logger.debug(fields, message);
      else this.logger.warn(fields, message);
      peer.warned = true;
    }
    return kept;
  }

  /**
   * Tells `events.declarations` what changed, kind by kind. A queryable whose completeness changed
   * is reported as removed and added again (declared anew, as zenoh updates a queryable's info).
   */
  private report(zid: string, before: readonly Declaration[], after: readonly Declaration[]): void {
    const listener = this.events.declarations;
    if (!listener) return;
    for (const kind of ["subscriber", "queryable", "token"] as const) {
      const was = new Map(before.filter((d) => indexKind(d.kind) === kind).map((d) => [d.key, d.complete]));
      const is = new Map(after.filter((d) => indexKind(d.kind) === kind).map((d) => [d.key, d.complete]));
      const added = [...is.keys()].filter((k) => !was.has(k));
      const removed = [...was.keys()].filter((k) => !is.has(k));
      for (const [k, complete] of is)
        if (was.has(k) && was.get(k) !== complete) {
          removed.push(k);
          added.push(k);
        }
      if (added.length > 0 || removed.length > 0) listener({ zid, kind, added, removed });
    }
  }

  /** A heartbeat: a known, up-to-date sender is alive; anything else must be asked for its declarations. */
  heartbeat(m: HeartbeatMessage): HeartbeatResult {
    const peer = this.peers.get(m.zid);
    if (!peer || peer.epoch !== m.epoch || peer.ver < m.ver) return "stale";
    peer.lastSeen = this.clock.now();
    this.events.alive(m.zid);
    return "known";
  }

  /** `zid` answered something: it is alive. */
  touch(zid: string): void {
    const peer = this.peers.get(zid);
    if (peer) peer.lastSeen = this.clock.now();
    this.events.alive(zid);
  }

  /** A goodbye: forgets `zid` if the epoch is the one known (a stale goodbye of a previous life is ignored). */
  goodbye(zid: string, epoch: number): void {
    if (this.peers.get(zid)?.epoch === epoch) this.forget(zid, "left");
  }

  /** Forgets the routers silent for longer than `peerTimeoutMs`. */
  sweep(): void {
    const now = this.clock.now();
    for (const peer of [...this.peers.values()])
      if (now - peer.lastSeen > this.peerTimeoutMs) this.forget(peer.zid, "silent");
  }

  /** Gives every router `peerTimeoutMs` again (after our own connection was away: their silence was ours). */
  refreshAll(): void {
    const now = this.clock.now();
    for (const peer of this.peers.values()) peer.lastSeen = now;
  }

  forget(zid: string, reason: ForgetReason): void {
    const peer = this.peers.get(zid);
    if (!peer) return;
    this.peers.delete(zid);
    this.unindex(peer);
    this.logger.info({ zid, reason }, "router left");
    this.events.forgotten(zid, reason);
    this.report(zid, peer.decls, []);
  }

  private unindex(peer: MutablePeer): void {
    const entries = this.storeEntries.get(peer.zid);
    let e = 0;
    for (const d of peer.decls) {
      if (d.kind === "subscriber") this.plainSubscribers.delete(d.key, peer.zid);
      // Entries were made in declaration order, one per store declaration kept.
      if (d.kind === "store" && entries !== undefined) this.stores.delete(d.key, entries[e++]!);
    }
    this.storeEntries.delete(peer.zid);
    for (const d of peer.entries) this.byKind.get(d.kind)!.delete(d.key, d);
    peer.entries = [];
    this.clearInterest();
  }

  private clearInterest(): void {
    for (const cache of this.interestCache.values()) cache.clear();
  }
}
