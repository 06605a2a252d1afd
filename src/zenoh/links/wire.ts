/**
 * What a zenoh transport (`ZenohLink`) runs over (docs/zenoh-protocol.md, "Links"): one TCP or
 * TLS connection, or one remote address on a UDP socket. A wire hands the transport whole
 * batches, however its protocol frames them, and sends the batches the transport gives it.
 */
import type { Buffer } from "node:buffer";
import type { LinkProtocol } from "../endpoint.js";

/** What a wire tells its transport. */
export interface WireHandlers {
  /** One batch arrived (without any framing). */
  batch(batch: Buffer): void;
  /** The wire was closed (either side, or an error). */
  closed(): void;
  /** What was queued on the wire has been sent: it takes more. */
  drained(): void;
}

/** One link's carrier of batches. */
export interface Wire {
  readonly protocol: LinkProtocol;
  /** The remote IP address. */
  readonly remoteAddress: string;
  readonly remotePort: number;
  /** The local IP address the link arrived on (undefined when a wildcard-bound UDP socket cannot tell). */
  readonly localAddress: string | undefined;
  /** True when batches on this wire are prefixed by their 2-byte length (TCP, TLS). */
  readonly streamed: boolean;
  /** True when the wire neither loses nor reorders (TCP, TLS); false for UDP. */
  readonly reliable: boolean;
  /** The largest batch the wire carries (bytes). */
  readonly mtu: number;
  /** Bytes given to `send` and not yet handed to the network. */
  readonly queuedBytes: number;
  /** Sets the receiver of batches; the wire delivers nothing before. */
  bind(handlers: WireHandlers): void;
  /**
   * Sends one batch. `framed` begins with 2 bytes that hold the batch's little-endian length:
   * a streamed wire sends them, a datagram wire sends the batch alone. The bytes must not be
   * reused by the caller afterwards.
   */
  send(framed: Uint8Array): void;
  /** Sends what is queued, then closes; nothing is delivered afterwards. */
  end(): void;
  /** Closes at once. */
  destroy(): void;
  /**
   * Stops reading (TCP then holds the sender back) until `resume`: the back-pressure of a client
   * with too much in flight. A datagram wire shares its socket and cannot: it has neither.
   */
  pause?(): void;
  resume?(): void;
}
