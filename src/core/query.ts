import { Buffer } from "node:buffer";
import { Encoding } from "./encoding.js";
import { type ErrorKind, ZestError } from "./errors.js";
import type { Reply } from "./reply.js";
import { makeSample, type Sample, type SourceInfo, type WireExtensions, withSampleExtras } from "./sample.js";
import type { Parameters, Selector } from "./selector.js";
import type { Qos } from "./qos.js";
import type { QueryTarget } from "./query-target.js";
import type { Timestamp } from "./timestamp.js";

/** Options of a value reply. */
export interface ReplyOptions {
  encoding?: Encoding;
  timestamp?: Timestamp;
  /** Bytes travelling beside the payload. */
  attachment?: Buffer;
  /** Priority, congestion control and express of the reply. */
  qos?: Qos;
  /** Who sends the reply (zenoh's source info). */
  sourceInfo?: SourceInfo;
}

/** What a query carries besides its selector (Zenoh 1.x): a payload with its encoding, an attachment. */
export interface QueryContent {
  readonly payload?: Buffer;
  readonly encoding?: Encoding;
  readonly attachment?: Buffer;
  /** Who sent the query (zenoh's source info), carried unchanged. */
  readonly sourceInfo?: SourceInfo;
  /** Wire extensions of the query a door forwards unread (docs/zenoh-protocol.md). */
  readonly extensions?: WireExtensions;
}

/**
 * The queries of one dispatch, one per queryable reached: a door that routes once per client,
 * as zenoh's router does, hands the client one of them, and the client's session hands it to each
 * of its own queryables (docs/zenoh-protocol.md).
 */
export class QueryRound {
  readonly #reached = new Set<object>();

  /** True the first time `client` is reached in this round. */
  first(client: object): boolean {
    if (this.#reached.has(client)) return false;
    this.#reached.add(client);
    return true;
  }
}

/**
 * A query as a queryable receives it. Replies sent after the query is finished (the handler
 * settled, or the query timed out) are dropped.
 */
export class Query {
  readonly selector: Selector;
  /** The query's payload, if the querier sent one. */
  readonly payload: Buffer | undefined;
  /** The encoding of the payload, if the querier gave one. */
  readonly encoding: Encoding | undefined;
  readonly attachment: Buffer | undefined;
  /** Who sent the query (zenoh's source info), if the querier said. */
  readonly sourceInfo: SourceInfo | undefined;
  /** The query's wire extensions, carried for a door of the same protocol. */
  readonly extensions: WireExtensions | undefined;
  /**
   * The querier's target, handed on to a client session that holds several queryables: it picks
   * among its own as the router picked among sessions (an `all_complete` query reaches only its
   * complete ones; docs/zenoh-protocol.md). zenoh's default, `best_matching`, when none was given.
   */
  readonly target: QueryTarget;
  /**
   * True for a query that came from another router of the fabric: a door that hands queries on
   * to another network (joining zenoh, docs/zenoh-network.md) leaves those to the router they came from.
   */
  fromAnotherRouter = false;
  /** The router of the fabric that sent it (uppercase hex), when it came from one and said who. */
  fromRouter: string | undefined;
  /** The dispatch this query is one of, when it reached more than one queryable. */
  round: QueryRound | undefined;
  private sink: ((reply: Reply) => void) | undefined;
  private finishedListener: (() => void) | undefined;
  /** The router's count of the queries of a dispatch still at work (see `finish`). */
  private readonly ended: (() => void) | undefined;

  /**
   * @internal created by the router; `ended` is called once, in the very call that finishes the
   * query, so the router can end the querier's get in that same turn.
   */
  constructor(
    selector: Selector,
    sink: (reply: Reply) => void,
    content?: QueryContent,
    target: QueryTarget = "best_matching",
    ended?: () => void,
  ) {
    this.selector = selector;
    this.target = target;
    this.sink = sink;
    this.ended = ended;
    this.payload = content?.payload;
    this.encoding = content?.encoding;
    this.attachment = content?.attachment;
    this.sourceInfo = content?.sourceInfo;
    this.extensions = content?.extensions;
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
    this.replySample(
      withSampleExtras(
        makeSample(key, "put", payload, options.encoding ?? Encoding.TEXT_PLAIN, options.timestamp),
        options,
      ),
    );
  }

  /** Replies that `key` is deleted (Zenoh 1.x delete reply). */
  replyDelete(key: string, options: Omit<ReplyOptions, "encoding"> = {}): void {
    this.replySample(
      withSampleExtras(makeSample(key, "delete", Buffer.alloc(0), Encoding.EMPTY, options.timestamp), options),
    );
  }

  /** Replies with a sample as it is (storages reply with what they hold). */
  replySample(sample: Sample): void {
    this.sink?.({ kind: "ok", sample });
  }

  /** Replies with an error; `errorKind` says what went wrong (default `internal`). */
  replyErr(
    payload: Buffer | string,
    options: { encoding?: Encoding; errorKind?: ErrorKind; sourceInfo?: SourceInfo } = {},
  ): void {
    this.sink?.({
      kind: "err",
      payload: typeof payload === "string" ? Buffer.from(payload) : payload,
      encoding: options.encoding ?? Encoding.TEXT_PLAIN,
      errorKind: options.errorKind ?? "internal",
      ...(options.sourceInfo !== undefined ? { sourceInfo: options.sourceInfo } : {}),
    });
  }

  /** Replies with an error from a thrown value. */
  replyError(err: unknown): void {
    const errorKind = err instanceof ZestError ? err.kind : "internal";
    this.replyErr(err instanceof Error ? err.message : String(err), { errorKind });
  }

  /**
   * @internal the query is over: later replies are dropped. The router calls it when the handler
   * settles or the query times out; a door calls it as its client's final for the query is read,
   * so the querier's own final goes out before anything read after it (docs/zenoh-protocol.md,
   * "Order of replies and finals").
   */
  finish(): void {
    if (this.sink === undefined) return;
    this.sink = undefined;
    const done = this.finishedListener;
    this.finishedListener = undefined;
    done?.();
    this.ended?.();
  }

  /**
   * Calls `listener` once when the query is over (answered, or timed out while the queryable
   * was still at work): a queryable that answers asynchronously releases what it holds for it.
   */
  onFinished(listener: () => void): void {
    if (this.sink === undefined) listener();
    else this.finishedListener = listener;
  }

  /** True once the query is over (answered or timed out). */
  get finished(): boolean {
    return this.sink === undefined;
  }
}
