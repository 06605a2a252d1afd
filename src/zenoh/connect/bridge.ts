/**
 * Which zest router of a fabric passes the zenoh network's samples on (docs/zenoh-network.md,
 * "Clusters"). zenoh's routers that share a peer network elect the one router that bridges data
 * between the two networks (`elect_router` in zenoh's router hat, per key expression); zest does
 * the same between the zenoh network and its fabric, with one elected router for every key, so
 * that a router that did not join sees the network's samples in the order the network sent them.
 * Each zest router joined to the network holds a liveliness token `@zest/joined/<zid>` while its
 * session is open, so every router of the fabric knows the same set of joined routers; the
 * elected one is the lowest zid. It alone publishes the network's samples to the fabric,
 * flagged; the other joined routers got them from the network directly and drop the flagged
 * copy, the routers that did not join take it. It alone sends the network the samples and the
 * queries of the routers that did not join, too.
 */
import type { JoinedNetwork } from "../../core/fabric.js";
import type { LivelinessToken, Session } from "../../core/session.js";

/** The liveliness key space of the joined routers' tokens (the admin space is never declared to zenoh). */
const JOINED_ROOT = "@zest/joined";

export class NetworkBridge implements JoinedNetwork {
  sessionId: number | undefined;
  private token: LivelinessToken | undefined;
  /** The routers holding a token now, sorted (this one included while open). */
  private joined: readonly string[] = [];
  private readonly stopWatching: () => void;
  private readonly listeners = new Set<() => void>();

  constructor(
    /** A session of this router's (the token is declared on it). */
    private readonly session: Session,
    /** This router's zid, uppercase hex. */
    private readonly zid: string,
  ) {
    const sub = session.declareLivelinessSubscriber(`${JOINED_ROOT}/*`, () => this.refresh());
    this.stopWatching = () => sub.undeclare();
    this.refresh();
    session.router.joinedNetwork = this;
  }

  get open(): boolean {
    return this.sessionId !== undefined;
  }

  /** The session to the network opened: its samples enter by `sessionId`. */
  opened(sessionId: number): void {
    this.sessionId = sessionId;
    this.token ??= this.session.declareLivelinessToken(`${JOINED_ROOT}/${this.zid}`);
    this.refresh();
  }

  /** The session ended: the other joined routers (or none) bridge from now on. */
  closed(): void {
    this.sessionId = undefined;
    this.token?.undeclare();
    this.token = undefined;
    this.refresh();
  }

  /** Joined routers of the fabric, this one included while open (the status). */
  get routers(): readonly string[] {
    return this.joined;
  }

  get bridging(): boolean {
    // Sorted: the first is the lowest zid. Not joined yet (no token), nobody else is asked either.
    const first = this.joined[0];
    return first === undefined || first === this.zid;
  }

  /**
   * True when this router sends the network a sample stamped by `zid` that reached it from its
   * own sessions or the fabric, or a query router `zid` sent it through the fabric: its own; not
   * another joined router's (that one sends it); anything else when it is the elected router.
   */
  sends(zid: string): boolean {
    const id = zid.toUpperCase();
    if (id === this.zid) return true;
    if (this.joined.includes(id)) return false;
    return this.bridging;
  }

  /** Gives the bridging to the other routers for good (the door closes). */
  stop(): void {
    this.closed();
    this.stopWatching();
    if (this.session.router.joinedNetwork === this) this.session.router.joinedNetwork = undefined;
  }

  /** Calls `listener` when the joined routers (so the elected one) change; returns its remover. */
  onChange(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => void this.listeners.delete(listener);
  }

  /** True when router `zid` (any case) holds a joined token. */
  isJoined(zid: string): boolean {
    return this.joined.includes(zid.toUpperCase());
  }

  private refresh(): void {
    const zids = this.session.livelinessGet(`${JOINED_ROOT}/*`).map((s) => s.key.slice(JOINED_ROOT.length + 1));
    const joined = zids.map((z) => z.toUpperCase()).sort();
    const changed = joined.length !== this.joined.length || joined.some((z, i) => z !== this.joined[i]);
    this.joined = joined;
    if (changed) for (const l of this.listeners) l();
  }
}
