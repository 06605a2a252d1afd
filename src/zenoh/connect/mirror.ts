/**
 * What zest declares to the zenoh router it joined (docs/zenoh-network.md): the subscribers,
 * queryables and liveliness tokens of zest's own sessions (REST and SSE streams, storages, evals,
 * clients of its doors, other routers of its fabric), once per key expression, as a zenoh client
 * declares its own to its router. A declaration is withdrawn when the last of its kind on that key
 * expression goes. A queryable is declared complete while a complete one (a storage with
 * `complete`, an eval declared so) holds its key expression, and declared again under the same
 * id when that changes, as zenoh's sessions and routers update a queryable's info. What the
 * joined router declared to zest is never declared back to it: the join session's own
 * declarations are left out (`allowedDestination: "remote"`). The subscribers, queryables (with
 * their completeness) and tokens of the fabric's other routers are declared by key expression, by
 * the elected router only and only for the routers that did not join (a joined router declares
 * its own, and what it holds for the network is the network's), aggregated with this router's
 * own: docs/zenoh-network.md, "Clusters". A fabric that cannot list them (only say whether one
 * matches) has them declared as one `**`.
 */
import type { DeclarationKind, RemoteDeclaration } from "../../core/fabric.js";
import type { Connectivity } from "../../core/ports.js";
import type { Sample } from "../../core/sample.js";
import type { Session } from "../../core/session.js";
import type { Declaration } from "../codec/declarations.js";

/** What the mirror needs from its join session. */
export interface MirrorTarget {
  /** The join session's core session: what it declared is not mirrored. */
  readonly session: Session;
  readonly connectivity: Connectivity;
  /** Sends one DECLARE to the joined router. */
  send(decl: Declaration): void;
  /** True for a token the joined router declared to zest (not declared back to it). */
  ownsToken(key: string): boolean;
  /** Which routers of the fabric joined, and whether this one is elected to bridge for the others. */
  readonly bridge: MirrorBridge;
}

/** What the mirror needs to know of the fabric's joined routers (`NetworkBridge`). */
export interface MirrorBridge {
  /** This router sends the network what the routers that did not join need. */
  readonly bridging: boolean;
  isJoined(zid: string): boolean;
  onChange(listener: () => void): () => void;
}

/** Everything outside the admin space (`**` does not match `@` chunks): `@/…` stays zest's. */
const ALL = "**";
/** Leaves out the join session's own declarations: what the joined router declared to zest. */
const REMOTE = { allowedDestination: "remote" } as const;

const wire = (k: string) => ({ scope: 0, suffix: k, senderMapping: false });

/** A declaration held on the router: its id, and whether it was declared complete (queryables). */
interface Held {
  readonly id: number;
  complete: boolean;
}

/** One kind of declaration mirrored by key expression, with the ids it was declared under. */
class KindMirror {
  private readonly declared = new Map<string, Held>();

  constructor(
    private readonly declOf: (id: number, key: string, complete: boolean) => Declaration,
    private readonly undeclOf: (id: number, key: string) => Declaration,
    private readonly nextId: () => number,
    private readonly send: (d: Declaration) => void,
  ) {}

  /**
   * Declares what is new in `now` (key expression → complete), declares again what changed
   * completeness, undeclares what is no longer there.
   */
  sync(now: ReadonlyMap<string, boolean>): void {
    for (const [k, held] of this.declared)
      if (!now.has(k)) {
        this.declared.delete(k);
        this.send(this.undeclOf(held.id, k));
      }
    for (const [k, complete] of now) {
      const held = this.declared.get(k);
      if (held === undefined) {
        const id = this.nextId();
        this.declared.set(k, { id, complete });
        this.send(this.declOf(id, k, complete));
      } else if (held.complete !== complete) {
        held.complete = complete;
        this.send(this.declOf(held.id, k, complete));
      }
    }
  }

  get size(): number {
    return this.declared.size;
  }
}

export class DeclarationMirror {
  private nextDeclId = 0;
  private readonly subscribers: KindMirror;
  private readonly queryables: KindMirror;
  private readonly tokens: KindMirror;
  private stopChanges: (() => void) | undefined;
  private stopTokens: (() => void) | undefined;
  private stopBridge: (() => void) | undefined;
  private stopLocal: (() => void) | undefined;
  private scheduled = false;
  private stopped = false;

  constructor(private readonly target: MirrorTarget) {
    const next = (): number => ++this.nextDeclId;
    const send = (d: Declaration): void => target.send(d);
    this.subscribers = new KindMirror(
      (id, k) => ({ kind: "subscriber", id, key: wire(k) }),
      (id, k) => ({ kind: "unsubscriber", id, key: wire(k) }),
      next,
      send,
    );
    this.queryables = new KindMirror(
      (id, k, complete) => ({ kind: "queryable", id, key: wire(k), complete, distance: 0 }),
      (id, k) => ({ kind: "unqueryable", id, key: wire(k) }),
      next,
      send,
    );
    this.tokens = new KindMirror(
      (id, k) => ({ kind: "token", id, key: wire(k) }),
      (id, k) => ({ kind: "untoken", id, key: wire(k) }),
      next,
      send,
    );
  }

  /** Declares everything now, then follows the changes until `stop`. */
  start(): void {
    this.sync();
    this.stopChanges = this.target.connectivity.onChange(() => this.queueSync());
    const sub = this.target.session.declareLivelinessSubscriber(ALL, (_s: Sample) => this.queueSync());
    this.stopTokens = () => sub.undeclare();
    this.stopBridge = this.target.bridge.onChange(() => this.queueSync());
    // A token of this router's going while its key stays alive through another router sends no sample.
    this.stopLocal = this.target.session.router.liveliness.watchLocal(() => this.queueSync());
  }

  /** Declarations held on the joined router (for the status). */
  get declared(): { subscribers: number; queryables: number; tokens: number } {
    return { subscribers: this.subscribers.size, queryables: this.queryables.size, tokens: this.tokens.size };
  }

  stop(): void {
    this.stopped = true;
    this.stopChanges?.();
    this.stopTokens?.();
    this.stopBridge?.();
    this.stopLocal?.();
  }

  /** Looks again at what to declare (a change no liveliness or connectivity event reports). */
  refresh(): void {
    this.queueSync();
  }

  /** Changes come in bursts (a storage declares a subscriber and a queryable): one sync per turn. */
  private queueSync(): void {
    if (this.scheduled || this.stopped) return;
    this.scheduled = true;
    queueMicrotask(() => {
      this.scheduled = false;
      if (!this.stopped) this.sync();
    });
  }

  /**
   * The declarations of `kind` this router declares for the fabric's other routers: on the
   * elected router, those of the routers that did not join; none on another. Undefined when the
   * fabric cannot list them (then whether one matches is all it tells).
   */
  private forOthers(kind: DeclarationKind): RemoteDeclaration[] | undefined {
    const remote = this.target.session.router.remoteDeclarations(ALL, kind);
    if (remote === undefined) return undefined;
    const bridge = this.target.bridge;
    return bridge.bridging ? remote.filter((d) => !bridge.isJoined(d.zid)) : [];
  }

  /** The subscribers to declare: this router's own sessions', then those `forOthers` gives (or `**`). */
  private subscriberKeys(): Map<string, boolean> {
    const s = this.target.session;
    const others = this.forOthers("subscriber");
    if (others === undefined) return plain(s.matchingKeys(ALL, "subscribers", REMOTE));
    const keys = plain(s.matchingKeys(ALL, "subscribers", { ...REMOTE, fabric: false }));
    for (const d of others) keys.set(d.key, false);
    return keys;
  }

  /** The queryables to declare, key expression → complete (complete when any there is), as `subscriberKeys`. */
  private queryableInfos(): Map<string, boolean> {
    const s = this.target.session;
    const others = this.forOthers("queryable");
    if (others === undefined) return s.matchingQueryables(ALL, REMOTE);
    const infos = s.matchingQueryables(ALL, { ...REMOTE, fabric: false });
    for (const q of others) infos.set(q.key, infos.get(q.key) === true || q.complete);
    return infos;
  }

  /**
   * The tokens to declare: this router's own (not those the joined router declared to it), then
   * those `forOthers` gives; every alive one when the fabric cannot list them.
   */
  private tokenKeys(): Map<string, boolean> {
    const s = this.target.session;
    const alive = s.livelinessGet(ALL).map((t) => t.key);
    const others = this.forOthers("token");
    if (others === undefined) return plain(alive.filter((k) => !this.target.ownsToken(k)));
    const own = new Set(s.router.liveliness.localKeys());
    const keys = plain(alive.filter((k) => own.has(k) && !this.target.ownsToken(k)));
    // Another router's tokens count whatever this router holds: they outlive the network's own.
    for (const d of others) keys.set(d.key, false);
    return keys;
  }

  private sync(): void {
    this.subscribers.sync(this.subscriberKeys());
    this.queryables.sync(this.queryableInfos());
    this.tokens.sync(this.tokenKeys());
  }
}

/** Declarations that carry no completeness (subscribers, tokens), keyed as `KindMirror.sync` takes them. */
function plain(keys: readonly string[]): Map<string, boolean> {
  return new Map(keys.map((k) => [k, false]));
}
