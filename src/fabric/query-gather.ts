/**
 * Queries across routers (docs/fabric-protocol.md, "Queries"). `QueryGather` is the asking
 * side: a query goes to each router with a matching queryable and waits for each one's final
 * batch of replies; at the timeout each missing router adds one error reply, and what did arrive
 * is kept. `answerQuery` is the answering side: it runs the local queryables and streams the
 * replies back in batches below the bus's payload limit, the last one marked final.
 */
import { Buffer } from "node:buffer";
import { Encoding } from "../core/encoding.js";
import { type ErrorKind, errorMessage, toZestError } from "../core/errors.js";
import type { FabricHost } from "../core/fabric.js";
import type { Reply } from "../core/reply.js";
import { Parameters, type Selector } from "../core/selector.js";
import type { Clock, TimerHandle } from "./clock.js";
import { encodeReply, type QueryMessage, ReplyBatch } from "./envelope.js";
import type { ForgetReason } from "./peer-table.js";

/** An error reply carrying `message` as text. */
export function errorReply(errorKind: ErrorKind, message: string): Reply {
  return { kind: "err", errorKind, encoding: Encoding.TEXT_PLAIN, payload: Buffer.from(message) };
}

interface PendingQuery {
  readonly qid: number;
  readonly unfinished: Set<string>;
  readonly onReply: (reply: Reply) => void;
  readonly resolve: () => void;
  timer: TimerHandle | undefined;
}

/** The queries this router sent and still waits on. */
export class QueryGather {
  private readonly pending = new Map<number, PendingQuery>();
  private nextQid = 0;

  constructor(
    private readonly clock: Clock,
    private readonly peerTimeoutMs: number,
  ) {}

  get size(): number {
    return this.pending.size;
  }

  /**
   * Opens a query to `targets`; `send(qid, zid)` sends it to each (a throw counts as an
   * `unavailable` error reply for that router). Resolves when every target finished or at `timeoutMs`.
   */
  open(
    targets: readonly string[],
    timeoutMs: number,
    onReply: (reply: Reply) => void,
    send: (qid: number, zid: string) => void,
  ): Promise<void> {
    const qid = ++this.nextQid;
    return new Promise<void>((resolve) => {
      const pq: PendingQuery = { qid, unfinished: new Set(targets), onReply, resolve, timer: undefined };
      this.pending.set(qid, pq);
      pq.timer = this.clock.setTimeout(() => {
        for (const t of pq.unfinished)
          pq.onReply(errorReply("timeout", `Timeout: router ${t} did not answer within ${timeoutMs} ms`));
        this.finish(pq);
      }, timeoutMs);
      for (const t of targets) {
        try {
          send(qid, t);
        } catch (err) {
          this.partDone(
            qid,
            t,
            errorReply("unavailable", `cannot send the query to router ${t}: ${errorMessage(err)}`),
          );
        }
      }
    });
  }

  /** A batch of replies from router `zid`. */
  replies(qid: number, zid: string, replies: readonly Reply[], final: boolean): void {
    const pq = this.pending.get(qid);
    if (!pq?.unfinished.has(zid)) return;
    for (const r of replies) pq.onReply(r);
    if (final) this.partDone(qid, zid);
  }

  /** The bus found nobody behind router `zid`: not forgotten for that (it may be reconnecting), never a silent miss either. */
  noResponders(qid: number, zid: string): void {
    this.partDone(qid, zid, errorReply("unavailable", `router ${zid} is unreachable (no responders on NATS)`));
  }

  /** Router `zid` is forgotten: queries stop waiting for it (with an error reply when it went silent). */
  forgotten(zid: string, reason: ForgetReason): void {
    for (const qid of [...this.pending.keys()]) {
      const error =
        reason === "silent"
          ? errorReply(
              "timeout",
              `Timeout: router ${zid} stopped answering (no heartbeat for ${this.peerTimeoutMs} ms)`,
            )
          : undefined;
      this.partDone(qid, zid, error);
    }
  }

  /** Ends every query; with `reason`, each missing router adds an `unavailable` error reply. */
  finishAll(reason?: (zid: string) => string): void {
    for (const pq of [...this.pending.values()]) {
      if (reason) for (const t of pq.unfinished) pq.onReply(errorReply("unavailable", reason(t)));
      this.finish(pq);
    }
  }

  private partDone(qid: number, zid: string, error?: Reply): void {
    const pq = this.pending.get(qid);
    if (!pq?.unfinished.delete(zid)) return;
    if (error) pq.onReply(error);
    if (pq.unfinished.size === 0) this.finish(pq);
  }

  private finish(pq: PendingQuery): void {
    if (this.pending.get(pq.qid) !== pq) return;
    this.pending.delete(pq.qid);
    pq.unfinished.clear();
    this.clock.clearTimeout(pq.timer);
    pq.resolve();
  }
}

/**
 * Answers a query from another router with the local queryables, sending the replies in batches
 * of at most `limit` bytes (a larger single reply becomes a `too_large` error reply). A default
 * query (target `all`, no parameters, no content) that the host can read synchronously
 * (`readRemote`: one stored key) is answered before this returns, without a query, a promise or
 * a deadline on the host; the bytes sent are the same. `from`: the router that sent it, when known.
 */
export function answerQuery(
  host: FabricHost,
  query: QueryMessage,
  limit: number,
  send: (data: Buffer) => void,
  from?: string,
): Promise<void> | undefined {
  const batch = new ReplyBatch();
  const onReply = (r: Reply): void => {
    let part = encodeReply(r);
    if (part.length > limit) {
      const key = r.kind === "ok" ? r.sample.key : "an error";
      part = encodeReply(
        errorReply(
          "too_large",
          `the reply for ${key} (${part.length} bytes) is larger than NATS accepts between routers (${limit} bytes)`,
        ),
      );
    }
    if (batch.length > 0 && batch.size + part.length > limit) send(batch.take(false));
    batch.addEncoded(part);
  };
  const plain =
    query.parameters === "" && query.content === undefined && (query.target === undefined || query.target === "all");
  const now = plain ? host.readRemote?.(query.key) : undefined;
  if (now !== undefined) {
    for (const r of now) onReply(r);
    send(batch.take(true));
    return undefined;
  }
  return runRemote(host, query, onReply, from).then(() => send(batch.take(true)));
}

async function runRemote(
  host: FabricHost,
  query: QueryMessage,
  onReply: (r: Reply) => void,
  from: string | undefined,
): Promise<void> {
  try {
    const selector: Selector = { key: query.key, parameters: new Parameters(query.parameters) };
    await host.answerRemote(selector, query.timeoutMs, onReply, {
      target: query.target ?? "all",
      content: query.content,
      ...(from === undefined ? {} : { from }),
    });
  } catch (err) {
    onReply(errorReply(toZestError(err).kind, errorMessage(err)));
  }
}
