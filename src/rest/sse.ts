import { Buffer } from "node:buffer";
import type { ServerResponse } from "node:http";
import { errorMessage } from "../core/errors.js";
import type { Logger } from "../core/log.js";
import { TurnMemo } from "../core/turn-memo.js";
import type { Reply } from "../core/reply.js";
import type { Session, Subscriber } from "../core/session.js";
import type { Sample } from "../core/sample.js";
import type { Timestamp } from "../core/timestamp.js";
import { DEFAULT_RESUME_LOG, ResumeLog, type ResumeLogLimits, type SseEvent, sseEventOf } from "./sse-log.js";
import { TurnCork } from "./turn-cork.js";

/** A client that falls this far behind is dropped rather than buffered without bound. */
const MAX_BUFFERED_BYTES = 8 * 1024 * 1024;
const KEEPALIVE_MS = 15_000;
/** Most key expressions kept watched for resume after their last stream closed. */
const MAX_LINGERING = 1024;
/**
 * Live events a stream may hold back while its snapshot is read (docs/sse.md); past this the
 * stream is closed (counted as a drop) and the client reconnects.
 */
export const MAX_SNAPSHOT_BACKLOG = 65_536;

/** A stream whose snapshot is being read: the live samples it receives meanwhile wait here. */
interface PendingSnapshot {
  /** The live samples that came meanwhile, each with its event as the other streams got it. */
  readonly held: Array<{ readonly sample: Sample; readonly ev: SseEvent }>;
}

/** SSE options (`plugins.rest.sse`, docs/sse.md). */
export interface SseOptions {
  /** Events kept for resume (10,000); 0 turns event ids and resume off. */
  resumeLog?: number;
  /** Bytes of encoded events kept for resume (16 MiB). */
  resumeLogBytes?: number;
  /** How long a key expression stays watched (logged) after its last stream closed, in ms (300,000). */
  resumeLingerMs?: number;
  /** The `retry:` hint sent at the start of each stream, in ms (3,000). */
  retryMs?: number;
}

/** Counters of the hub, read by the metrics on scrape. */
export interface SseStats {
  opened: number;
  /** Streams closed by the router because the client fell too far behind. */
  dropped: number;
  /** Reconnections that got the missed events replayed. */
  resumed: number;
  /** Reconnections told `RESET` (the missed events are not known). */
  resets: number;
  /** Events written, all streams counted. */
  eventsSent: number;
  /** Bytes of events written, all streams counted. */
  bytesSent: number;
}

/**
 * One subscription per distinct key expression, shared by every stream on it: a sample is
 * encoded (and logged) once and its bytes written to each stream. After the last stream closes
 * the subscription lingers, still logging, so that a client reconnecting within the linger time
 * misses nothing.
 */
/** Whether a stream may see events on `key`. */
export type KeyFilter = (key: string) => boolean;

interface Watch {
  readonly key: string;
  /** Open streams, each with the filter of the keys its user may read (none: every key). */
  readonly streams: Map<ServerResponse, KeyFilter | undefined>;
  /** The log's mark when this watch began: every event on its key after it is logged. */
  readonly since: number;
  sub: Subscriber | undefined;
  linger: NodeJS.Timeout | undefined;
}

/**
 * Live SSE streams (docs/sse.md). Each stream is a sink of the watch on its key expression; it
 * is released the moment the client goes away (the response closes), not at the next sample.
 */
export class SseHub {
  private readonly watches = new Map<string, Watch>();
  private readonly streamWatch = new Map<ServerResponse, Watch>();
  private readonly keepalive: NodeJS.Timeout;
  private readonly log: ResumeLog | undefined;
  private readonly lingerMs: number;
  private readonly retryMs: number;
  /**
   * The events of this task's samples, when several watches may see one sample: it is encoded
   * once, and logged with one id. A sample reaches every watch in one synchronous delivery.
   */
  private readonly events = new TurnMemo<Sample, SseEvent>();
  readonly stats: SseStats = { opened: 0, dropped: 0, resumed: 0, resets: 0, eventsSent: 0, bytesSent: 0 };
  /** The streams' writes, gathered per event-loop turn. */
  private readonly cork = new TurnCork();
  /** Streams whose snapshot is being read (docs/sse.md, "Snapshot then live"). */
  private readonly pending = new Map<ServerResponse, PendingSnapshot>();

  /** Streams opened with `?_expires=true` (docs/ttl-and-leases.md). */
  private readonly expiring = new Set<ServerResponse>();
  /** Their events for this task's put samples (with the logged event's id, if any). */
  private readonly expiringEvents = new TurnMemo<Sample, SseEvent>();

  /**
   * `render` turns a sample into one SSE message (without an `id:` line); `renderExpires`, when
   * given, a put sample for a stream that asked for deadlines (`?_expires=true`).
   */
  constructor(
    private readonly session: Session,
    private readonly render: (s: Sample) => Buffer,
    options: SseOptions = {},
    private readonly logger?: Logger,
    private readonly renderExpires?: (s: Sample) => Buffer,
  ) {
    const entries = options.resumeLog ?? DEFAULT_RESUME_LOG.entries;
    const limits: ResumeLogLimits = { entries, bytes: options.resumeLogBytes ?? DEFAULT_RESUME_LOG.bytes };
    this.log = entries > 0 ? new ResumeLog(limits) : undefined;
    this.lingerMs = options.resumeLingerMs ?? 300_000;
    this.retryMs = options.retryMs ?? 3_000;
    // Comments keep proxies from timing the stream out and reveal dead peers.
    this.keepalive = setInterval(() => {
      for (const res of this.streamWatch.keys()) res.write(":\n\n");
    }, KEEPALIVE_MS);
    this.keepalive.unref();
  }

  /** Number of open streams. */
  get size(): number {
    return this.streamWatch.size;
  }

  /** Events kept in the resume log. */
  get logSize(): number {
    return this.log?.size ?? 0;
  }

  /**
   * Subscribes `res` to `key`. With `lastEventId` (a reconnecting client), the events it missed
   * that match `key` are written first, or a `RESET` event when they are not known. Replay and
   * subscription happen in one synchronous step, so no live event can fall between them.
   * `accept`, when given, keeps only the events on keys it accepts (access control), replayed
   * ones included. `snapshot`: the current value of every matching key is sent first, unless the
   * client resumes without a gap (docs/sse.md, "Snapshot then live"). `expires`: live and
   * snapshot PUT entries name their deadline, or null (replayed ones do not).
   */
  open(
    key: string,
    res: ServerResponse,
    headers: Readonly<Record<string, string>>,
    lastEventId: string | undefined,
    accept?: KeyFilter,
    snapshot = false,
    expires = false,
  ): void {
    const log = this.log;
    let watch = this.watches.get(key);
    const resume = log && lastEventId !== undefined ? log.since(lastEventId, key, watch?.since, accept) : undefined;
    if (watch === undefined) {
      watch = { key, streams: new Map(), since: log?.mark() ?? 0, sub: undefined, linger: undefined };
      this.watch(watch);
    } else if (watch.linger !== undefined) {
      clearTimeout(watch.linger);
      watch.linger = undefined;
    }
    watch.streams.set(res, accept);
    this.streamWatch.set(res, watch);
    if (expires && this.renderExpires !== undefined) this.expiring.add(res);
    this.stats.opened++;
    res.on("close", () => this.release(res));
    // HTTP/2 forbids connection-specific headers (RFC 9113 §8.2.2).
    res.writeHead(200, req2(res) ? { ...headers, ...SSE_HEADERS_H2 } : { ...headers, ...SSE_HEADERS });
    res.flushHeaders();
    // The retry hint; a fresh stream also learns the current position, so that a client that saw
    // no event before a disconnection still resumes from here (an `id:` alone sets the
    // EventSource's last id without dispatching anything).
    let prelude = `retry: ${this.retryMs}\n`;
    // A stream that begins with a snapshot takes its position (`id:`) only at the snapshot's end,
    // so a client cut off within the snapshot asks for a whole one again.
    const snapshotFirst = snapshot && (resume === undefined || "reset" in resume);
    if (log && resume === undefined && !snapshotFirst) prelude += `id: ${log.lastId}\n`;
    else if (resume && "reset" in resume) {
      this.stats.resets++;
      const id = snapshotFirst ? "" : `id: ${log!.lastId}\n`;
      prelude += `\n${id}event: RESET\ndata: ${JSON.stringify({ reason: resume.reset, last_event_id: lastEventId })}\n`;
    }
    send(res, sseEventOf(Buffer.from(`${prelude}\n`)), this.stats, this.cork);
    if (snapshotFirst) {
      // Subscribed above, read now: what lands during the read is held and merged after it.
      const pending: PendingSnapshot = { held: [] };
      this.pending.set(res, pending);
      void this.sendSnapshot(key, res, pending, log?.lastId, accept);
      return;
    }
    if (resume && "events" in resume) {
      this.stats.resumed++;
      for (const ev of resume.events) send(res, ev, this.stats, this.cork);
    }
  }

  private watch(watch: Watch): void {
    this.watches.set(watch.key, watch);
    const streams = watch.streams;
    const stats = this.stats;
    const cork = this.cork;
    const pending = this.pending;
    const expiring = this.expiring;
    watch.sub = this.session.declareSubscriber(watch.key, (sample) => {
      const ev = this.eventOf(sample);
      const asExpiring = expiring.size > 0 && sample.kind === "put";
      for (const [res, accept] of streams) {
        if (accept !== undefined && !accept(sample.key)) continue;
        const held = pending.size === 0 ? undefined : pending.get(res)?.held;
        if (held === undefined)
          send(res, asExpiring && expiring.has(res) ? this.expiringEventOf(sample, ev) : ev, stats, cork);
        else if (held.push({ sample, ev }) > MAX_SNAPSHOT_BACKLOG) drop(res, stats);
      }
    });
  }

  /**
   * Reads the current values under `key` and sends them (PUT events without ids), then
   * `SNAPSHOT_END` with the stream's position `position`, then the live samples held meanwhile,
   * merged by timestamp: one on a key the snapshot holds at the same or a newer version is
   * already told by it and is skipped. Order per key holds: snapshot first, then the live ones
   * in the order they came.
   */
  private async sendSnapshot(
    key: string,
    res: ServerResponse,
    pending: PendingSnapshot,
    position: string | undefined,
    accept: KeyFilter | undefined,
  ): Promise<void> {
    let replies: Reply[];
    try {
      replies = await this.session.get(key);
    } catch (err) {
      this.pending.delete(res);
      this.logger?.warn({ key, err: errorMessage(err) }, "SSE snapshot read failed; stream closed");
      res.destroy();
      return;
    }
    if (this.pending.get(res) !== pending) return; // the client left meanwhile
    const versions = new Map<string, Timestamp | undefined>();
    let count = 0;
    for (const r of replies) {
      if (r.kind !== "ok") continue;
      const sample = r.sample;
      if (accept !== undefined && !accept(sample.key)) continue;
      versions.set(sample.key, sample.timestamp);
      const message =
        sample.kind === "put" && this.expiring.has(res) ? this.renderExpires!(sample) : this.render(sample);
      send(res, sseEventOf(message), this.stats, this.cork);
      count++;
      // A large snapshot goes out at the client's pace (live samples are held meanwhile), not
      // piled up past the slow-client limit.
      if (backlogOf(res) > SNAPSHOT_HIGH_WATER) {
        this.cork.flush();
        await drained(res);
        if (this.pending.get(res) !== pending) return;
      }
    }
    this.pending.delete(res);
    const id = position === undefined ? "" : `id: ${position}\n`;
    send(res, sseEventOf(Buffer.from(`${id}event: SNAPSHOT_END\ndata: {"count":${count}}\n\n`)), this.stats, this.cork);
    for (const { sample, ev } of pending.held) {
      if (versions.size > 0 && versions.has(sample.key)) {
        const told = versions.get(sample.key);
        if (told !== undefined && sample.timestamp !== undefined && sample.timestamp.compare(told) <= 0) continue;
      }
      send(
        res,
        sample.kind === "put" && this.expiring.has(res) ? this.expiringEventOf(sample, ev) : ev,
        this.stats,
        this.cork,
      );
    }
  }

  /** The event of a put sample for an `_expires` stream, with the id of its plain event `ev`. */
  private expiringEventOf(sample: Sample, ev: SseEvent): SseEvent {
    let out = this.expiringEvents.get(sample);
    if (out === undefined) {
      const frame = ev.frame;
      const idEnd = frame[0] === 0x69 /* i */ ? frame.indexOf(0x0a) + 1 : 0;
      out = sseEventOf(this.renderExpires!(sample), idEnd > 0 ? frame.toString("utf8", 0, idEnd) : undefined);
      this.expiringEvents.set(sample, out);
    }
    return out;
  }

  /** The sample's event, encoded (and logged, with an id) once however many watches it reaches. */
  private eventOf(sample: Sample): SseEvent {
    // One watch sees each sample once: nothing to remember.
    if (this.watches.size === 1) return this.encode(sample);
    let ev = this.events.get(sample);
    if (ev === undefined) {
      ev = this.encode(sample);
      this.events.set(sample, ev);
    }
    return ev;
  }

  private encode(sample: Sample): SseEvent {
    const message = this.render(sample);
    return this.log === undefined ? sseEventOf(message) : this.log.append(sample.key, message);
  }

  private release(res: ServerResponse): void {
    const watch = this.streamWatch.get(res);
    if (watch === undefined) return;
    this.streamWatch.delete(res);
    this.pending.delete(res);
    this.expiring.delete(res);
    watch.streams.delete(res);
    if (watch.streams.size > 0) return;
    if (this.log === undefined || this.lingerMs <= 0) {
      this.unwatch(watch);
      return;
    }
    watch.linger = setTimeout(() => this.unwatch(watch), this.lingerMs);
    watch.linger.unref();
    this.boundLingering();
  }

  /** Keeps at most MAX_LINGERING idle watches: the oldest idle ones go first. */
  private boundLingering(): void {
    let idle = 0;
    for (const w of this.watches.values()) if (w.streams.size === 0) idle++;
    if (idle <= MAX_LINGERING) return;
    for (const w of this.watches.values()) {
      if (idle <= MAX_LINGERING) break;
      if (w.streams.size === 0) {
        this.unwatch(w);
        idle--;
      }
    }
  }

  private unwatch(watch: Watch): void {
    if (watch.linger !== undefined) clearTimeout(watch.linger);
    watch.linger = undefined;
    watch.sub?.undeclare();
    watch.sub = undefined;
    if (this.watches.get(watch.key) === watch) this.watches.delete(watch.key);
  }

  /**
   * Calls `fn` once the events of this turn's samples have left for the streams: at once when
   * none are waiting. A write's answer goes through here, so a client that wrote a key and
   * watches it gets the event no later than the answer (docs/sse.md, "Events before the answer").
   */
  afterEvents(fn: () => void): void {
    this.cork.afterFlush(fn);
  }

  /** Ends every stream. */
  close(): void {
    clearInterval(this.keepalive);
    // What this turn gathered goes out before the streams end. (Node's `res.end()` also uncorks
    // its socket fully today; this does not depend on that.)
    this.cork.flush();
    for (const res of [...this.streamWatch.keys()]) res.end();
    for (const w of [...this.watches.values()]) this.unwatch(w);
    this.streamWatch.clear();
  }
}

/**
 * Writes one event to a stream. A chunked response (HTTP/1.1) gets the event's chunk (framed
 * once per event, shared by every stream) written to the socket, which spares the response's
 * per-write framing, and gathered with the stream's other writes of this turn (`TurnCork`); its
 * headers are flushed at open, so the order holds. Anything else (HTTP/1.0, no socket) goes
 * through the response with the bare event.
 */
function send(res: ServerResponse, ev: SseEvent, stats: SseStats, cork: TurnCork): void {
  stats.eventsSent++;
  stats.bytesSent += ev.frame.length;
  const socket = res.socket;
  if (res.chunkedEncoding && socket && !socket.destroyed) {
    cork.write(socket, ev.chunk);
    if (socket.writableLength > MAX_BUFFERED_BYTES) drop(res, stats);
    return;
  }
  if (!res.write(ev.frame) && res.writableLength > MAX_BUFFERED_BYTES) drop(res, stats);
}

const SSE_HEADERS = {
  "content-type": "text/event-stream",
  "cache-control": "no-cache",
  connection: "keep-alive",
  "x-accel-buffering": "no",
};
const SSE_HEADERS_H2 = { "content-type": "text/event-stream", "cache-control": "no-cache", "x-accel-buffering": "no" };

/** True when `res` answers an HTTP/2 stream. */
function req2(res: ServerResponse): boolean {
  return (res.req as { httpVersionMajor?: number } | undefined)?.httpVersionMajor === 2;
}

/** Bytes a snapshot may have waiting for the client before it pauses for a drain. */
const SNAPSHOT_HIGH_WATER = 1024 * 1024;

/** What `send` has queued for `res` and the kernel has not taken. */
function backlogOf(res: ServerResponse): number {
  const socket = res.socket;
  return res.chunkedEncoding && socket ? socket.writableLength : res.writableLength;
}

/** Resolves when `res` (or its socket, for chunked writes) drains, or the stream closes. */
function drained(res: ServerResponse): Promise<void> {
  const emitter = res.chunkedEncoding && res.socket ? res.socket : res;
  return new Promise((resolve) => {
    const done = (): void => {
      emitter.off("drain", done);
      res.off("close", done);
      resolve();
    };
    emitter.once("drain", done);
    res.once("close", done);
  });
}

function drop(res: ServerResponse, stats: SseStats): void {
  stats.dropped++;
  res.destroy();
}

/**
 * The id a reconnecting client last saw: the `Last-Event-ID` header (what EventSource sends),
 * else the `_last_event_id` selector parameter. The header wins: EventSource keeps the URL it
 * was opened with, so its parameter is older than the header of a later reconnection.
 */
export function lastEventIdOf(
  header: string | string[] | undefined,
  parameters: { get(name: string): string | undefined },
): string | undefined {
  const h = Array.isArray(header) ? header[0] : header;
  if (h !== undefined && h !== "") return h;
  const p = parameters.get("_last_event_id");
  return p === "" ? undefined : p;
}
