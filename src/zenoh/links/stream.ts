/**
 * A wire over a byte stream, TCP or TLS (docs/zenoh-protocol.md, "Links"): each batch is
 * prefixed by its 2-byte little-endian length, as zenoh frames batches on streamed links.
 */
import { Buffer } from "node:buffer";
import type { Socket } from "node:net";
import type { LinkProtocol } from "../endpoint.js";
import type { Wire, WireHandlers } from "./wire.js";

const BATCH_LEN = 2;

export class StreamWire implements Wire {
  readonly streamed = true;
  readonly reliable = true;
  readonly mtu = 65_535;
  readonly remoteAddress: string;
  readonly remotePort: number;
  readonly localAddress: string | undefined;
  private handlers: WireHandlers | undefined;
  private pending: Buffer | undefined;
  private stopped = false;

  constructor(
    readonly protocol: LinkProtocol,
    readonly socket: Socket,
  ) {
    this.remoteAddress = socket.remoteAddress ?? "?";
    this.remotePort = socket.remotePort ?? 0;
    this.localAddress = socket.localAddress;
    socket.setNoDelay(true);
    // Errors end in "close"; the transport logs why it closed, not the socket's errno.
    socket.on("error", () => {});
  }

  get queuedBytes(): number {
    return this.socket.writableLength;
  }

  bind(handlers: WireHandlers): void {
    this.handlers = handlers;
    this.socket.on("data", (chunk: Buffer) => this.onData(chunk));
    this.socket.on("drain", () => handlers.drained());
    this.socket.on("close", () => {
      this.stopped = true;
      handlers.closed();
    });
  }

  private onData(chunk: Buffer): void {
    if (this.stopped) return;
    let buf = this.pending ? Buffer.concat([this.pending, chunk]) : chunk;
    this.pending = undefined;
    let at = 0;
    while (buf.length - at >= BATCH_LEN) {
      const len = buf.readUInt16LE(at);
      if (buf.length - at - BATCH_LEN < len) break;
      const batch = buf.subarray(at + BATCH_LEN, at + BATCH_LEN + len);
      at += BATCH_LEN + len;
      this.handlers?.batch(batch);
      if (this.stopped) return;
    }
    if (at < buf.length) {
      // Keep the partial batch (copied, so the socket's chunk is not held whole).
      buf = buf.subarray(at);
      this.pending = Buffer.from(buf);
    }
  }

  pause(): void {
    this.socket.pause();
  }

  resume(): void {
    if (!this.stopped) this.socket.resume();
  }

  send(framed: Uint8Array): void {
    this.socket.write(framed);
  }

  end(): void {
    this.stopped = true;
    this.socket.end();
    // A peer that never reads would keep the socket half-open: destroy it shortly after.
    setTimeout(() => this.socket.destroy(), 1000).unref();
  }

  destroy(): void {
    this.stopped = true;
    this.socket.destroy();
  }
}
