/**
 * A small EventSource for tests, over real HTTP: it parses the stream as the WHATWG spec says
 * (fields `id`, `event`, `data`, `retry`; comments; an `id` without data still moves the last
 * event id), keeps `lastEventId` across reconnections and sends it as `Last-Event-ID`, as a
 * browser does. Reconnection is explicit (`reconnect()`), so a test decides when the gap ends.
 */
import http from "node:http";
import { sseField } from "../support/http.js";

export interface SseMessage {
  readonly event: string;
  readonly data: string;
  readonly id: string;
}

export class TestEventSource {
  lastEventId = "";
  retry: number | undefined;
  private req: http.ClientRequest | undefined;
  private readonly queue: SseMessage[] = [];
  private wake: (() => void) | undefined;

  private constructor(private readonly url: string) {}

  /** Connects; resolves once the response headers arrived (the subscription exists). */
  static async open(url: string, opts: { lastEventId?: string } = {}): Promise<TestEventSource> {
    const es = new TestEventSource(url);
    if (opts.lastEventId !== undefined) es.lastEventId = opts.lastEventId;
    await es.connect();
    return es;
  }

  /** Drops the connection (a network blip). */
  disconnect(): void {
    this.req?.destroy();
    this.req = undefined;
  }

  /** Connects again, sending the last event id seen. */
  async reconnect(): Promise<void> {
    this.disconnect();
    this.queue.length = 0;
    await this.connect();
  }

  close(): void {
    this.disconnect();
  }

  /** The next `n` dispatched messages (throws after `timeoutMs`). */
  async next(n = 1, timeoutMs = 5_000): Promise<SseMessage[]> {
    const deadline = Date.now() + timeoutMs;
    while (this.queue.length < n) {
      const left = deadline - Date.now();
      if (left <= 0)
        throw new Error(`expected ${n} SSE messages, got ${this.queue.length}: ${JSON.stringify(this.queue)}`);
      await new Promise<void>((r) => {
        this.wake = r;
        setTimeout(r, Math.min(left, 100));
      });
    }
    return this.queue.splice(0, n);
  }

  /** Messages dispatched and not yet taken. */
  pending(): readonly SseMessage[] {
    return this.queue;
  }

  private connect(): Promise<void> {
    return new Promise((resolve, reject) => {
      const headers: Record<string, string> = { accept: "text/event-stream", "cache-control": "no-cache" };
      if (this.lastEventId !== "") headers["last-event-id"] = this.lastEventId;
      const req = http.get(this.url, { headers }, (res) => {
        if (res.statusCode !== 200 || !String(res.headers["content-type"]).startsWith("text/event-stream")) {
          reject(new Error(`SSE answered ${res.statusCode} ${res.headers["content-type"]}`));
          res.resume();
          return;
        }
        res.setEncoding("utf8");
        let buf = "";
        let data: string[] = [];
        let event = "";
        let idBuf = this.lastEventId;
        res.on("data", (chunk: string) => {
          buf += chunk;
          for (let nl = buf.search(/\r\n|\r|\n/); nl !== -1; nl = buf.search(/\r\n|\r|\n/)) {
            const line = buf.slice(0, nl);
            buf = buf.slice(nl + (buf.startsWith("\r\n", nl) ? 2 : 1));
            if (line === "") {
              // Dispatch: the last event id moves even when there is no data.
              this.lastEventId = idBuf;
              if (data.length > 0) this.queue.push({ event: event || "message", data: data.join("\n"), id: idBuf });
              data = [];
              event = "";
              this.wake?.();
              continue;
            }
            if (line.startsWith(":")) continue;
            const { field, value } = sseField(line);
            if (field === "event") event = value;
            else if (field === "data") data.push(value);
            else if (field === "id" && !value.includes("\0")) idBuf = value;
            else if (field === "retry" && /^\d+$/.test(value)) this.retry = Number(value);
          }
        });
        res.on("error", () => undefined);
        resolve();
      });
      req.on("error", (err) => (this.req === req ? reject(err) : undefined));
      this.req = req;
    });
  }
}
