import { Encoding } from "./encoding.js";
import { type ErrorKind, ZestError } from "./errors.js";
import type { Reply } from "./reply.js";
import { makeSample, type Sample } from "./sample.js";
import type { Parameters, Selector } from "./selector.js";
import type { Timestamp } from "./timestamp.js";

/** Options of a value reply. */
export interface ReplyOptions {
  encoding?: Encoding;
  timestamp?: Timestamp;
}

/**
 * A query as a queryable receives it. Replies sent after the query is finished (the handler
 * settled, or the query timed out) are dropped.
 */
export class Query {
  readonly selector: Selector;
  /** The query's payload (a GET body, as zenoh 0.11 passes it), if the querier sent one. */
  readonly payload: Buffer | undefined;
  /** The payload's encoding (its content type), when there is a payload. */
  readonly encoding: Encoding | undefined;
  private sink: ((reply: Reply) => void) | undefined;

  /** @internal created by the router */
  constructor(selector: Selector, sink: (reply: Reply) => void, payload?: Buffer, encoding?: Encoding) {
    this.selector = selector;
    this.sink = sink;
    this.payload = payload;
    this.encoding = payload === undefined ? undefined : (encoding ?? Encoding.APP_OCTET_STREAM);
  }

  /** The canonical key expression queried. */
  get key(): string {
    return this.selector.key;
  }
  get parameters(): Parameters {
    return this.selector.parameters;
  }

  /** Replies with a value for `key`. */
  reply(key: string, payload: Buffer | Uint8Array | string, options: ReplyOptions = {}): void {
    this.replySample(makeSample(key, "put", payload, options.encoding ?? Encoding.TEXT_PLAIN, options.timestamp));
  }

  /** Replies with a sample as it is (storages reply with what they hold). */
  replySample(sample: Sample): void {
    this.sink?.({ kind: "ok", sample });
  }

  /** Replies with an error; `errorKind` says what went wrong (default `internal`). */
  replyErr(payload: Buffer | string, options: { encoding?: Encoding; errorKind?: ErrorKind } = {}): void {
    this.sink?.({
      kind: "err",
      payload: typeof payload === "string" ? Buffer.from(payload) : payload,
      encoding: options.encoding ?? Encoding.TEXT_PLAIN,
      errorKind: options.errorKind ?? "internal",
    });
  }

  /** Replies with an error from a thrown value. */
  replyError(err: unknown): void {
    const errorKind = err instanceof ZestError ? err.kind : "internal";
    this.replyErr(err instanceof Error ? err.message : String(err), { errorKind });
  }

  /** @internal the query is over: later replies are dropped. */
  finish(): void {
    this.sink = undefined;
  }

  /** True once the query is over (answered or timed out). */
  get finished(): boolean {
    return this.sink === undefined;
  }
}
