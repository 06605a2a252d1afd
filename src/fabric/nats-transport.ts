/**
 * The fabric's transport over a NATS connection. The client buffers what is published in one
 * microtask and writes it to the socket at once; the fabric's outboxes gather a turn's samples
 * and acknowledgements before publishing, so latency-bound messages (queries, replies) are never
 * held back for the end of the turn.
 */
import { connect, type Msg, type NatsConnection } from "@nats-io/transport-node";
import { errorMessage, ZestError } from "../core/errors.js";
import type { Logger } from "../core/log.js";
import type { Transport, TransportEvent, TransportMessage, TransportSubscription } from "./transport.js";

/** How to reach NATS. */
export interface NatsTransportOptions {
  readonly servers: readonly string[];
  /** Connection name shown by the servers. */
  readonly name: string;
  readonly connectTimeoutMs: number;
  readonly reconnectTimeWaitMs: number;
  readonly logger: Logger;
}

/** A `Transport` on one NATS connection (`noEcho`: it never hears its own messages). */
export class NatsTransport implements Transport {
  private readonly listeners: Array<(event: TransportEvent) => void> = [];

  private constructor(
    /** The connection, shared with the `jetstream` volume. */
    readonly connection: NatsConnection,
    private readonly logger: Logger,
  ) {
    void this.watch();
  }

  /** Connects (waiting up to `connectTimeoutMs`); reconnects forever afterwards. */
  static async connect(options: NatsTransportOptions): Promise<NatsTransport> {
    try {
      const nc = await connect({
        servers: [...options.servers],
        name: options.name,
        noEcho: true,
        maxReconnectAttempts: -1,
        reconnectTimeWait: options.reconnectTimeWaitMs,
        reconnectJitter: 100,
        timeout: options.connectTimeoutMs,
        pingInterval: 5_000,
        maxPingOut: 2,
      });
      return new NatsTransport(nc, options.logger);
    } catch (err) {
      throw ZestError.unavailable(`cannot connect to NATS at ${options.servers.join(", ")}: ${errorMessage(err)}`, err);
    }
  }

  get maxPayload(): number {
    return this.connection.info?.max_payload ?? 1024 * 1024;
  }

  server(): string | undefined {
    return this.connection.getServer();
  }

  publish(subject: string, data: Uint8Array, reply?: string): void {
    if (reply === undefined) this.connection.publish(subject, data);
    else this.connection.publish(subject, data, { reply });
  }

  subscribe(subject: string, handler: (msg: TransportMessage) => void): TransportSubscription {
    return this.connection.subscribe(subject, {
      callback: (err, msg) => {
        if (err) {
          this.logger.warn({ subject, err: errorMessage(err) }, "NATS subscription error");
          return;
        }
        handler(toMessage(msg));
      },
    });
  }

  onEvent(listener: (event: TransportEvent) => void): void {
    this.listeners.push(listener);
  }

  async close(timeoutMs: number): Promise<void> {
    const nc = this.connection;
    // drain() flushes what is buffered; it never completes while disconnected, hence the race.
    await Promise.race([nc.drain().catch(() => undefined), new Promise((r) => setTimeout(r, timeoutMs).unref())]);
    if (!nc.isClosed()) await nc.close().catch(() => undefined);
  }

  private async watch(): Promise<void> {
    for await (const s of this.connection.status()) {
      const event: TransportEvent | undefined =
        s.type === "disconnect"
          ? "disconnected"
          : s.type === "reconnect"
            ? "reconnected"
            : s.type === "close"
              ? "closed"
              : undefined;
      if (event === undefined) continue;
      for (const l of this.listeners) l(event);
    }
  }
}

function toMessage(msg: Msg): TransportMessage {
  // NATS answers a message with a reply subject and no subscriber with an empty message whose
  // status header carries code 503 (NATS's own "no responders", not an HTTP status of ours).
  const noResponders = msg.data.length === 0 && msg.headers?.code === 503;
  return { subject: msg.subject, data: msg.data, reply: msg.reply || undefined, noResponders };
}
