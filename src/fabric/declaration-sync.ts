/**
 * This router's side of declaration sync (docs/fabric-protocol.md, "Declarations"): the
 * covering data subscriptions of the local subscribers, the versioned declarations message
 * announced on `zest.d.<me>` when it changes, heartbeats, hello on start and after a reconnect,
 * and requests for another router's declarations when a heartbeat shows we missed a change.
 */
import type { Buffer } from "node:buffer";
import { errorMessage } from "../core/errors.js";
import type { FabricHost } from "../core/fabric.js";
import type { Logger } from "../core/log.js";
import type { Clock, TimerHandle } from "./clock.js";
import { type Declaration, encodeControl, encodeDeclarations, encodeGoodbye, encodeHeartbeat } from "./envelope.js";
import type { Inbox } from "./inbox.js";
import { coverAll, DECL_SUBJECT, HELLO_SUBJECT, QUERY_SUBJECT } from "./subjects.js";
import type { Transport, TransportMessage, TransportSubscription } from "./transport.js";

/** What declaration sync needs besides the transport. */
export interface DeclarationSyncOptions {
  readonly zid: string;
  readonly epoch: number;
  readonly host: FabricHost;
  readonly inbox: Inbox;
  readonly clock: Clock;
  readonly logger: Logger;
  /** The longest `hello(true)` waits for answers. */
  readonly helloWaitMs: number;
  /** Handler of the data subscriptions. */
  readonly onData: (msg: TransportMessage) => void;
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** Least time between two requests for one router's declarations. */
const PULL_INTERVAL_MS = 500;
/** Hello answers arrive within milliseconds of each other: this much silence means all are in. */
const HELLO_STALL_MS = 100;

export class DeclarationSync {
  /** Covering subscriptions of the local subscribers, by subject. */
  private readonly dataSubs = new Map<string, TransportSubscription>();
  private scheduled = false;
  private signature = "";
  private ver = 0;
  /** The current declarations message, once computed. */
  private message: Buffer | undefined;
  private readonly lastPull = new Map<string, number>();
  private helloDone: (() => void) | undefined;
  private helloBump: (() => void) | undefined;
  private closed = false;
  /** The transport may be down: publishing is skipped then. */
  connected = true;

  constructor(
    private readonly transport: Transport,
    private readonly o: DeclarationSyncOptions,
  ) {}

  /** The declarations message (undefined before the first `sync`). */
  get current(): Buffer | undefined {
    return this.message;
  }

  get version(): number {
    return this.ver;
  }

  /** The local declarations changed: one recomputation per burst, still before the caller's next I/O. */
  schedule(): void {
    if (this.scheduled || this.closed) return;
    this.scheduled = true;
    queueMicrotask(() => this.sync());
  }

  /**
   * Recomputes the covering subscriptions, then announces the declarations if they changed. New
   * subscriptions come first, and both travel on one connection in order, so a router that knows
   * a declaration also finds the bus's interest in place.
   */
  sync(): void {
    this.scheduled = false;
    if (this.closed) return;
    const host = this.o.host;
    const subs = host.subscriberKeys().sort();
    const wanted = new Set(coverAll(subs));
    for (const subject of wanted) {
      if (!this.dataSubs.has(subject)) this.dataSubs.set(subject, this.transport.subscribe(subject, this.o.onData));
    }
    for (const [subject, sub] of this.dataSubs) {
      if (wanted.has(subject)) continue;
      sub.unsubscribe();
      this.dataSubs.delete(subject);
    }
    // Storages of shared stores are declared with their store (docs/conditional-writes.md,
    // "Shared stores"); every other subscriber as one.
    const declared = host.subscriberDeclarations?.() ?? { plain: subs, stores: [] };
    const decls: Declaration[] = [...declared.plain]
      .sort()
      .map((key): Declaration => ({ kind: "subscriber", key, complete: false }));
    const stores = [...declared.stores].sort((a, b) => compare(a.key, b.key) || compare(a.store, b.store));
    for (const { key, store } of stores) decls.push({ kind: "store", key, complete: false, store });
    const qbls = host.queryables().sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
    for (const q of qbls) decls.push({ kind: "queryable", key: q.key, complete: q.complete });
    for (const key of (host.livelinessTokens?.() ?? []).sort()) decls.push({ kind: "token", key, complete: false });
    const signature = JSON.stringify(decls);
    if (signature === this.signature && this.message) return;
    this.signature = signature;
    this.message = encodeDeclarations({ zid: this.o.zid, epoch: this.o.epoch, ver: ++this.ver, decls });
    this.announce();
  }

  /** Publishes the declarations on `zest.d.<me>`. */
  announce(): void {
    if (this.message) this.send(`${DECL_SUBJECT}.${this.o.zid}`, this.message);
  }

  /** A heartbeat: our epoch and declarations version. */
  heartbeat(): void {
    if (this.message)
      this.send(
        `${DECL_SUBJECT}.${this.o.zid}`,
        encodeHeartbeat({ zid: this.o.zid, epoch: this.o.epoch, ver: this.ver }),
      );
  }

  /** Asks router `zid` for its declarations (at most every 500 ms). */
  pull(zid: string): void {
    const now = this.o.clock.now();
    if (now - (this.lastPull.get(zid) ?? -Infinity) < PULL_INTERVAL_MS) return;
    this.lastPull.set(zid, now);
    this.send(
      `${QUERY_SUBJECT}.${zid}`,
      encodeControl("declarations_request"),
      this.o.inbox.subject({ kind: "declarations", zid }),
    );
  }

  /** Forgets the request bookkeeping of a forgotten router. */
  forget(zid: string): void {
    this.lastPull.delete(zid);
  }

  /**
   * Says hello with our declarations; every router answers with its own. With `wait`, resolves
   * once the answers stop coming (or at once when nobody else is there).
   */
  hello(wait: boolean): Promise<void> {
    if (!this.message) return Promise.resolve();
    this.helloDone?.();
    const done = new Promise<void>((resolve) => {
      let stall: TimerHandle | undefined;
      const max = this.o.clock.setTimeout(() => finish(), this.o.helloWaitMs);
      const finish = (): void => {
        this.o.clock.clearTimeout(max);
        this.o.clock.clearTimeout(stall);
        this.helloDone = undefined;
        this.helloBump = undefined;
        resolve();
      };
      this.helloDone = finish;
      this.helloBump = () => {
        this.o.clock.clearTimeout(stall);
        stall = this.o.clock.setTimeout(finish, HELLO_STALL_MS);
      };
    });
    if (!this.send(HELLO_SUBJECT, this.message, this.o.inbox.subject({ kind: "hello" }))) this.helloDone?.();
    return wait ? done : Promise.resolve();
  }

  /** An answer to our hello arrived (or the bus said nobody else is there). */
  helloAnswered(noResponders: boolean): void {
    if (noResponders) this.helloDone?.();
    else this.helloBump?.();
  }

  /** Says goodbye and stops. */
  close(): void {
    if (this.closed) return;
    this.send(`${DECL_SUBJECT}.${this.o.zid}`, encodeGoodbye({ zid: this.o.zid, epoch: this.o.epoch }));
    this.closed = true;
    this.helloDone?.();
  }

  private send(subject: string, data: Buffer, reply?: string): boolean {
    if (!this.connected || this.closed) return false;
    try {
      this.transport.publish(subject, data, reply);
      return true;
    } catch (err) {
      this.o.logger.debug({ subject, err: errorMessage(err) }, "could not publish a declaration message");
      return false;
    }
  }
}
