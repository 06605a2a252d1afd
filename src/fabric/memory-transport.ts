/**
 * An in-process message bus with the NATS semantics the fabric relies on: subjects with `*` and
 * `>` wildcards, no echo of a connection's own messages, and a "no responders" notice when a
 * message with a reply subject reaches nobody. Messages are delivered on a microtask, in order.
 * Tests use it to run several fabrics in one process, and to cut, restore or kill connections.
 */
import { subjectIncludes } from "./subjects.js";
import type { Transport, TransportEvent, TransportMessage, TransportSubscription } from "./transport.js";

interface HubSubscription {
  readonly conn: MemoryTransport;
  readonly subject: string;
  readonly handler: (msg: TransportMessage) => void;
}

/** The bus: every `MemoryTransport` made by `connect` can reach the others. */
export class MemoryHub {
  private readonly subs = new Set<HubSubscription>();
  /** Returns false to lose a message (fault injection). */
  filter: ((subject: string, data: Uint8Array, from: MemoryTransport) => boolean) | undefined;
  /** Messages delivered so far (a subscriber counts once per message). */
  delivered = 0;

  constructor(readonly maxPayload = 1024 * 1024) {}

  /** A new connection to the bus. */
  connect(name = "memory"): MemoryTransport {
    return new MemoryTransport(this, name);
  }

  /** @internal */
  add(sub: HubSubscription): void {
    this.subs.add(sub);
  }

  /** @internal */
  remove(sub: HubSubscription): void {
    this.subs.delete(sub);
  }

  /** @internal Routes one message. */
  route(from: MemoryTransport, subject: string, data: Uint8Array, reply: string | undefined): void {
    if (this.filter && !this.filter(subject, data, from)) return;
    const copy = Uint8Array.from(data);
    let reached = 0;
    for (const s of this.subs) {
      if (s.conn === from || !s.conn.online || !subjectIncludes(s.subject, subject)) continue;
      reached++;
      this.delivered++;
      const msg: TransportMessage = { subject, data: copy, reply, noResponders: false };
      queueMicrotask(() => {
        if (this.subs.has(s) && s.conn.online) s.handler(msg);
      });
    }
    if (reached === 0 && reply !== undefined) {
      const notice: TransportMessage = {
        subject: reply,
        data: new Uint8Array(0),
        reply: undefined,
        noResponders: true,
      };
      for (const s of this.subs) {
        if (s.conn !== from || !subjectIncludes(s.subject, reply)) continue;
        queueMicrotask(() => {
          if (this.subs.has(s) && s.conn.online) s.handler(notice);
        });
      }
    }
  }
}

/** One connection to a `MemoryHub`. */
export class MemoryTransport implements Transport {
  private readonly listeners: Array<(event: TransportEvent) => void> = [];
  private readonly mine = new Set<HubSubscription>();
  /** False while disconnected: nothing is sent or received. */
  online = true;
  private closed = false;
  /** Messages this connection published (lost ones included). */
  published = 0;
  /**
   * Socket writes a NATS client would have made for them: it writes what was published up to
   * the next microtask checkpoint at once, so publishes with no checkpoint between count as one.
   */
  writes = 0;
  private writing = false;

  constructor(
    private readonly hub: MemoryHub,
    readonly name: string,
  ) {}

  get maxPayload(): number {
    return this.hub.maxPayload;
  }

  server(): string | undefined {
    return this.online ? "memory" : undefined;
  }

  publish(subject: string, data: Uint8Array, reply?: string): void {
    if (this.closed) throw new Error("connection closed");
    if (data.length > this.hub.maxPayload) throw new Error("maximum payload exceeded");
    this.published++;
    if (!this.writing) {
      this.writing = true;
      this.writes++;
      queueMicrotask(() => {
        this.writing = false;
      });
    }
    if (this.online) this.hub.route(this, subject, data, reply);
  }

  subscribe(subject: string, handler: (msg: TransportMessage) => void): TransportSubscription {
    const sub: HubSubscription = { conn: this, subject, handler };
    this.mine.add(sub);
    this.hub.add(sub);
    return {
      unsubscribe: () => {
        this.mine.delete(sub);
        this.hub.remove(sub);
      },
    };
  }

  onEvent(listener: (event: TransportEvent) => void): void {
    this.listeners.push(listener);
  }

  /** Loses the connection (the subscriptions come back with `reconnect`). */
  disconnect(): void {
    if (!this.online) return;
    this.online = false;
    this.emit("disconnected");
  }

  /** Gets the connection back. */
  reconnect(): void {
    if (this.online || this.closed) return;
    this.online = true;
    this.emit("reconnected");
  }

  /** The process dies: its subscriptions vanish and it says nothing. */
  kill(): void {
    this.online = false;
    this.closed = true;
    for (const s of this.mine) this.hub.remove(s);
    this.mine.clear();
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await Promise.resolve();
    for (const s of this.mine) this.hub.remove(s);
    this.mine.clear();
    this.online = false;
    this.emit("closed");
  }

  private emit(event: TransportEvent): void {
    for (const l of this.listeners) l(event);
  }
}
