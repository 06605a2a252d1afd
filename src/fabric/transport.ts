/**
 * What the fabric needs from a message bus: publish with an optional reply subject, subscribe
 * to a subject (NATS wildcards `*` and `>`), the largest payload, and connection events. NATS
 * implements it (`nats-transport.ts`); `MemoryTransport` (`memory-transport.ts`) runs several
 * fabrics in one process for unit tests. See docs/fabric-protocol.md.
 */

/** A message as a subscriber receives it. */
export interface TransportMessage {
  readonly subject: string;
  readonly data: Uint8Array;
  /** Where the publisher wants answers, if anywhere. */
  readonly reply: string | undefined;
  /**
   * True for the bus's own "no responders" notice, delivered on a reply subject when a message
   * that carried it reached no subscriber at all (its `data` is empty).
   */
  readonly noResponders: boolean;
}

/** A live subscription. */
export interface TransportSubscription {
  unsubscribe(): void;
}

/** Connection events: `disconnected` (messages are lost until `reconnected`), `closed` (for good). */
export type TransportEvent = "disconnected" | "reconnected" | "closed";

/** A connection to the bus. */
export interface Transport {
  /** Sends `data` on `subject`, in order with earlier publishes. Throws when it cannot be sent at all. */
  publish(subject: string, data: Uint8Array, reply?: string): void;
  /** Writes what was published so far now, for a transport that buffers. */
  flush?(): void;
  /** Calls `handler` for every message on `subject` (wildcards allowed) until unsubscribed. */
  subscribe(subject: string, handler: (msg: TransportMessage) => void): TransportSubscription;
  /** Largest message the bus accepts, in bytes. */
  readonly maxPayload: number;
  /** The server this connection uses right now, for status pages. */
  server(): string | undefined;
  /** Calls `listener` on every connection event. */
  onEvent(listener: (event: TransportEvent) => void): void;
  /** Sends what is buffered and closes the connection; resolves within `timeoutMs` even when disconnected. */
  close(timeoutMs: number): Promise<void>;
}
