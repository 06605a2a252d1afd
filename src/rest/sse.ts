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

  /** Subscribes `res` to `key`; `render` turns a sample into one SSE message (cached per sample). */
  open(session: Session, key: string, res: ServerResponse, headers: Record<string, string>, render: (s: Sample) => string): void {
    const sub = session.declareSubscriber(key, (sample) => {
      if (!res.write(render(sample)) && res.writableLength > MAX_BUFFERED_BYTES) res.destroy();
    });
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
