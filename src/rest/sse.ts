import type { ServerResponse } from "node:http";
import type { Session, Subscriber } from "../core/session.js";
import type { Sample } from "../core/sample.js";

/** A client that falls this far behind is dropped rather than buffered without bound. */
const MAX_BUFFERED_BYTES = 8 * 1024 * 1024;
const KEEPALIVE_MS = 15_000;

/**
 * Live SSE streams. Each is a subscriber whose sink is an HTTP response; it is released the
 * moment the client goes away (the response closes), not at the next sample.
 */
export class SseHub {
  private readonly streams = new Map<ServerResponse, Subscriber>();
  private readonly keepalive: NodeJS.Timeout;

  constructor() {
    // Comments keep proxies from timing the stream out and reveal dead peers.
    this.keepalive = setInterval(() => {
      for (const res of this.streams.keys()) res.write(":\n\n");
    }, KEEPALIVE_MS);
    this.keepalive.unref();
  }

  /** Number of open streams. */
  get size(): number {
    return this.streams.size;
  }

  /**
   * Subscribes `res` to `key`; `render` turns a sample into one SSE message (cached per sample).
   * `accept`, when given, drops the samples it refuses (access control).
   */
  open(session: Session, key: string, res: ServerResponse, headers: Record<string, string>, render: (s: Sample) => Buffer, accept?: (s: Sample) => boolean): void {
    const sub = session.declareSubscriber(key, accept ? (sample) => void (accept(sample) && send(res, render(sample))) : (sample) => send(res, render(sample)));
    this.streams.set(res, sub);
    res.on("close", () => {
      sub.undeclare();
      this.streams.delete(res);
    });
    res.writeHead(200, { ...headers, "content-type": "text/event-stream", "cache-control": "no-cache", connection: "keep-alive", "x-accel-buffering": "no" });
    res.flushHeaders();
  }

  /** Ends every stream. */
  close(): void {
    clearInterval(this.keepalive);
    for (const [res, sub] of this.streams) {
      sub.undeclare();
      res.end();
    }
    this.streams.clear();
  }
}

/**
 * Writes one message to a stream. A chunked response (HTTP/1.1) gets the message framed as a
 * chunk once per message (shared by every stream) and written to the socket in one write, which
 * spares the response's per-write framing; its headers are flushed at open, so the order holds.
 * Anything else (HTTP/1.0, no socket) goes through the response.
 */
function send(res: ServerResponse, message: Buffer): void {
  const socket = res.socket;
  if (res.chunkedEncoding && socket && !socket.destroyed) {
    socket.write(chunkOf(message));
    if (socket.writableLength > MAX_BUFFERED_BYTES) res.destroy();
    return;
  }
  if (!res.write(message) && res.writableLength > MAX_BUFFERED_BYTES) res.destroy();
}

/** Messages framed as HTTP chunks (`<size hex>\r\n<message>\r\n`), by message. */
const chunks = new WeakMap<Buffer, Buffer>();
const CRLF = Buffer.from("\r\n");

function chunkOf(message: Buffer): Buffer {
  let chunk = chunks.get(message);
  if (chunk === undefined) {
    chunk = Buffer.concat([Buffer.from(`${message.length.toString(16)}\r\n`), message, CRLF]);
    chunks.set(message, chunk);
  }
  return chunk;
}
