/**
 * The NATS fabric: routers that share a NATS cluster form one key space. NATS moves the bytes
 * and decides interest; zest adds only what NATS has no notion of: declarations, acknowledged
 * writes, and queries that wait for exactly the routers that can answer. The protocol (subjects,
 * byte layouts, the acknowledgement state machine, query gathering) is docs/fabric-protocol.md.
 *
 * This class composes the parts, each behind the `Transport` and `Clock` it is given:
 * `PeerTable` (membership and declarations of the others), `DeclarationSync` (ours),
 * `AckTracker` (acknowledged writes), `QueryGather` / `answerQuery` (queries), `Inbox` (reply
 * subjects) and `DuplicateFilter`. Every message is decoded with validation; a malformed one is
 * logged (rate-limited) and dropped.
 */
import type { Buffer } from "node:buffer";
import { DEFAULT_KEYEXPR_LIMITS, isValid, isWild } from "../keyexpr/index.js";
import { errorMessage, toZestError, ZestError } from "../core/errors.js";
import type {
  DeclarationKind,
  Fabric,
  FabricHost,
  FabricStatus,
  RemoteDeclaration,
  RemoteQueryOptions,
  VersionClaims,
} from "../core/fabric.js";
import { silentLogger, type Logger } from "../core/log.js";
import type { Reply } from "../core/reply.js";
import type { QueryTarget } from "../core/query-target.js";
import type { Sample } from "../core/sample.js";
import type { Selector } from "../core/selector.js";
import { AckTracker } from "./ack-tracker.js";
import { type Clock, systemClock, type TimerHandle } from "./clock.js";
import { DeclarationSync } from "./declaration-sync.js";
import { DuplicateFilter } from "./duplicate-filter.js";
import {
  type DeclarationsMessage,
  decodeAcks,
  decodeAnnouncement,
  decodeControl,
  decodeDeclarations,
  decodePong,
  decodeReplies,
  decodeSamples,
  encodeControl,
  encodePong,
  encodeQuery,
  encodeSample,
  MAX_HELD_IN,
  markResend,
  type SampleMessage,
} from "./envelope.js";
import { Inbox, inboxOwner } from "./inbox.js";
import { AckOutbox, EndOfTurn, SampleOutbox } from "./outbox.js";
import { NatsTransport } from "./nats-transport.js";
import { DEFAULT_MAX_DECLARATIONS_PER_PEER, PeerTable } from "./peer-table.js";
import { answerQuery, errorReply, QueryGather } from "./query-gather.js";
import {
  DEFAULT_ACK_TIMEOUT_MS,
  DEFAULT_CONNECT_TIMEOUT_MS,
  DEFAULT_HEARTBEAT_MS,
  DEFAULT_PEER_TIMEOUT_MS,
  DEFAULT_RECONNECT_TIME_WAIT_MS,
} from "./timings.js";
import {
  DECL_SUBJECT,
  DIRECT_SUBJECT,
  HELLO_SUBJECT,
  keyToSubject,
  MAX_SUBJECT_LENGTH,
  QUERY_SUBJECT,
} from "./subjects.js";
import type { Transport, TransportMessage } from "./transport.js";
import { NatsVersionClaims } from "./version-claims.js";

/** Options of the NATS fabric; only `servers` is required. */
export interface NatsFabricOptions {
  /** NATS URLs (`nats://host:port`); the client also learns the cluster's other servers. */
  servers: readonly string[];
  logger?: Logger;
  /** Milliseconds between heartbeats (1000). */
  heartbeatMs?: number;
  /** A router not heard of for this long is forgotten (4000). */
  peerTimeoutMs?: number;
  /**
   * A write fails with `timeout` when a router with a matching subscriber has not acknowledged it
   * by then (5000). Must be above `peerTimeoutMs`: a write waits for a router that died until it
   * is forgotten, and that must happen before the write times out.
   */
  ackTimeoutMs?: number;
  /** An acknowledgement this late makes the fabric ping the late router (300). */
  probeAfterMs?: number;
  /** The longest `start` waits for the other routers to answer hello (1000). */
  helloWaitMs?: number;
  /** Milliseconds to wait for the first connection to NATS (5000). */
  connectTimeoutMs?: number;
  /** Milliseconds between reconnect attempts (250). */
  reconnectTimeWaitMs?: number;
  /** Makes the transport instead of connecting to `servers` (tests: a `MemoryTransport`). */
  transport?: () => Promise<Transport>;
  /** Time and timers (tests: a `ManualClock`). */
  clock?: Clock;
  /**
   * Most declarations kept per other router (`DEFAULT_MAX_DECLARATIONS_PER_PEER`, 100,000); those
   * beyond are dropped and logged (docs/fabric-protocol.md, "Limits").
   */
  maxDeclarationsPerPeer?: number;
}

/** Room left in a message for headers and protocol overhead. */
const PAYLOAD_MARGIN = 1024;
/** Keys whose subjects are remembered (then it starts over), and the longest one remembered. */
const SUBJECT_CACHE_MAX = 4096;
const SUBJECT_CACHE_KEY_MAX = 256;
/** At most one warning per this many ms about malformed messages; the rest go to debug. */
const MALFORMED_WARN_EVERY_MS = 10_000;

/** The fabric that joins routers through a NATS cluster. */
export class NatsFabric implements Fabric {
  readonly servers: readonly string[];
  private readonly logger: Logger;
  private readonly clock: Clock;
  private readonly heartbeatMs: number;
  private readonly peerTimeoutMs: number;
  private readonly ackTimeoutMs: number;
  private readonly probeAfterMs: number;
  private readonly helloWaitMs: number;
  private readonly maxDeclarationsPerPeer: number;
  private readonly makeTransport: () => Promise<Transport>;
  /** Random per instance: tells a restarted router (same id) from its previous life. */
  private readonly epoch = Math.floor(Math.random() * 0xffffffff);

  private transport: Transport | undefined;
  private claims: NatsVersionClaims | undefined;
  private host: FabricHost | undefined;
  private zid = "";
  private connected = false;
  private closing = false;
  private seq = 0;

  private inbox!: Inbox;
  private table!: PeerTable;
  private decl!: DeclarationSync;
  private readonly dups = new DuplicateFilter();
  private tracker!: AckTracker;
  private gather!: QueryGather;

  private samplesOut!: SampleOutbox;
  private acksOut!: AckOutbox;
  private readonly lastPing = new Map<string, number>();
  /** Key → its data subject, "" for a key sent directly (`subjectOf`). */
  private readonly subjects = new Map<string, string>();
  private heartbeatTimer: TimerHandle | undefined;
  private sweepTimer: TimerHandle | undefined;
  private clashReported = false;
  private malformed = { count: 0, lastWarn: -Infinity };

  private readonly counters = {
    samplesSent: 0,
    samplesReceived: 0,
    samplesSkipped: 0,
    queriesSent: 0,
    queriesAnswered: 0,
    malformedDropped: 0,
  };

  constructor(options: NatsFabricOptions) {
    if (options.servers.length === 0 && !options.transport)
      throw ZestError.badRequest("the NATS fabric needs at least one server URL");
    this.servers = [...options.servers];
    this.logger = (options.logger ?? silentLogger).child({ fabric: "nats" });
    this.clock = options.clock ?? systemClock;
    this.heartbeatMs = options.heartbeatMs ?? DEFAULT_HEARTBEAT_MS;
    this.peerTimeoutMs = options.peerTimeoutMs ?? DEFAULT_PEER_TIMEOUT_MS;
    this.ackTimeoutMs = options.ackTimeoutMs ?? DEFAULT_ACK_TIMEOUT_MS;
    this.probeAfterMs = options.probeAfterMs ?? 300;
    this.helloWaitMs = options.helloWaitMs ?? 1_000;
    this.maxDeclarationsPerPeer = options.maxDeclarationsPerPeer ?? DEFAULT_MAX_DECLARATIONS_PER_PEER;
    if (!Number.isSafeInteger(this.maxDeclarationsPerPeer) || this.maxDeclarationsPerPeer < 1)
      throw ZestError.badRequest(
        `maxDeclarationsPerPeer must be a positive integer, got ${String(this.maxDeclarationsPerPeer)}`,
      );
    const connectTimeoutMs = options.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS;
    const reconnectTimeWaitMs = options.reconnectTimeWaitMs ?? DEFAULT_RECONNECT_TIME_WAIT_MS;
    // A write waits for a router that does not answer until it is forgotten (peerTimeoutMs of
    // silence): a router whose NATS node died is reconnecting and gets the write resent, one that
    // died is dropped. The ack timeout must come later, or such writes would fail with a timeout.
    if (this.ackTimeoutMs <= this.peerTimeoutMs) {
      throw ZestError.badRequest(
        `fabric.nats.ack_timeout_ms (${this.ackTimeoutMs}) must be greater than peer_timeout_ms (${this.peerTimeoutMs}): a write waits for a silent router until it is forgotten`,
      );
    }
    this.makeTransport =
      options.transport ??
      (() =>
        NatsTransport.connect({
          servers: this.servers,
          name: `zest-${this.zid}`,
          connectTimeoutMs,
          reconnectTimeWaitMs,
          logger: this.logger,
        }));
  }

  /** The NATS connection (once started), shared with the `jetstream` volume. */
  get connection(): NatsTransport["connection"] | undefined {
    return this.transport instanceof NatsTransport ? this.transport.connection : undefined;
  }

  /** Conditional writes' claims, in JetStream on the fabric's NATS connection (none over another transport). */
  get versionClaims(): VersionClaims | undefined {
    return this.claims;
  }

  async start(host: FabricHost): Promise<void> {
    this.host = host;
    this.zid = host.zid;
    const transport = await this.makeTransport();
    this.transport = transport;
    const nc = this.connection;
    if (nc) {
      this.claims = new NatsVersionClaims(nc, { timeoutMs: this.ackTimeoutMs, logger: this.logger });
      this.claims.prepare();
    }
    this.connected = true;
    this.inbox = new Inbox(this.zid);
    this.tracker = new AckTracker(
      this.clock,
      {
        resend: (zid, seq, data) =>
          this.send(`${DIRECT_SUBJECT}.${zid}`, markResend(data), this.inbox.subject({ kind: "sample", seq, zid })),
        ping: (zid) => this.ping(zid),
      },
      { ackTimeoutMs: this.ackTimeoutMs, probeAfterMs: this.probeAfterMs },
    );
    this.gather = new QueryGather(this.clock, this.peerTimeoutMs);
    const link = {
      publish: (subject: string, data: Buffer, reply?: string) => {
        if (!this.connected) throw new Error("not connected");
        transport.publish(subject, data, reply);
      },
      flush: () => transport.flush?.(),
      limit: () => transport.maxPayload - PAYLOAD_MARGIN,
    };
    // Samples and acknowledgements of one turn leave together, in one socket write; the acks
    // leave even if sending the samples failed.
    const turn = new EndOfTurn(() => {
      try {
        this.samplesOut.flush();
      } finally {
        this.acksOut.flush();
      }
    });
    this.samplesOut = new SampleOutbox(
      this.inbox,
      this.clock,
      link,
      this.ackTimeoutMs,
      (seqs, err) => {
        for (const seq of seqs)
          this.tracker.fail(seq, ZestError.unavailable(`cannot publish to NATS: ${err.message}`, err));
      },
      turn,
      DIRECT_SUBJECT,
    );
    this.acksOut = new AckOutbox(this.zid, this.inbox, (subject, data) => this.send(subject, data), link.flush, turn);
    this.table = new PeerTable(
      this.clock,
      this.peerTimeoutMs,
      {
        alive: (zid) => this.tracker.alive(zid),
        changed: (zid) => this.tracker.declarationsChanged(zid, (key) => this.table.wants(zid, key, "subscriber")),
        forgotten: (zid, reason) => {
          this.tracker.forgotten(zid);
          this.gather.forgotten(zid, reason);
          this.dups.forget(zid);
          this.decl.forget(zid);
          this.lastPing.delete(zid);
        },
        declarations: (change) => host.remoteDeclarationsChanged?.(change),
      },
      this.logger,
      // Another router may run with larger limits: what it declares is held to ours.
      { keyExpr: host.keyExprLimits ?? DEFAULT_KEYEXPR_LIMITS, maxPerPeer: this.maxDeclarationsPerPeer },
    );
    const onData = this.guard((m) => this.onData(m));
    this.decl = new DeclarationSync(transport, {
      zid: this.zid,
      epoch: this.epoch,
      host,
      inbox: this.inbox,
      clock: this.clock,
      logger: this.logger,
      helloWaitMs: this.helloWaitMs,
      onData,
    });
    transport.onEvent((e) => this.onTransportEvent(e));
    transport.subscribe(
      `${DECL_SUBJECT}.*`,
      this.guard((m) => this.onAnnouncement(m)),
    );
    transport.subscribe(
      HELLO_SUBJECT,
      this.guard((m) => this.onHello(m)),
    );
    transport.subscribe(
      `${QUERY_SUBJECT}.${this.zid}`,
      this.guard((m) => this.onControl(m)),
    );
    transport.subscribe(`${DIRECT_SUBJECT}.${this.zid}`, onData);
    this.inbox.listen(
      transport,
      {
        sample: this.guarded((a, m) => m.noResponders && this.tracker.noResponders(a.seq, a.zid)),
        batch: this.guarded((a, m) => {
          const b = m.noResponders ? this.samplesOut.claim(a.id) : undefined;
          for (const seq of b?.seqs ?? []) this.tracker.noResponders(seq, b!.zid);
        }),
        acks: this.guarded((_a, m) => this.onAcks(m)),
        replies: this.guarded((a, m) => {
          if (m.noResponders) this.gather.noResponders(a.qid, a.zid);
          else {
            const { replies, final } = decodeReplies(m.data);
            this.gather.replies(a.qid, a.zid, replies, final);
          }
        }),
        hello: this.guarded((_a, m) => {
          if (!m.noResponders) this.ingest(decodeDeclarations(m.data));
          this.decl.helloAnswered(m.noResponders);
        }),
        declarations: this.guarded((a, m) => {
          // Unreachable right now; forgotten only by goodbye or heartbeat silence.
          if (m.noResponders) this.tracker.unreachableRouter(a.zid);
          else this.ingest(decodeDeclarations(m.data));
        }),
        pong: this.guarded((a, m) => {
          if (m.noResponders) this.tracker.unreachableRouter(a.zid);
          else if (decodePong(m.data) === a.zid) this.table.touch(a.zid);
        }),
      },
      (subject) => this.dropped(subject, "unknown inbox subject"),
    );
    this.decl.sync();
    this.scheduleHeartbeat();
    this.scheduleSweep();
    await this.decl.hello(true);
    this.logger.info(
      { servers: this.servers, server: transport.server(), routers: this.table.ids() },
      "joined the NATS fabric",
    );
  }

  declarationsChanged(): void {
    if (this.transport) this.decl.schedule();
  }

  publish(written: Sample, network = false): Promise<void> {
    let sample = written;
    const transport = this.transport;
    if (!transport || !this.connected || this.closing) {
      this.counters.samplesSkipped++;
      if (transport && !this.connected && !this.closing) {
        // Never a silent success: routers known to want this key did not get it.
        const who = this.table.interest(sample.key, "subscriber");
        if (who.length > 0) {
          return Promise.reject(
            ZestError.unavailable(
              `not connected to NATS: router(s) ${who.join(", ")} with a matching subscriber did not get the write on ${sample.key}; it reached this router's subscribers only`,
            ),
          );
        }
      }
      return Promise.resolve();
    }
    const seq = ++this.seq;
    // Beyond what the wire names, the write is simply waited for everywhere.
    if (sample.heldIn !== undefined && sample.heldIn.length > MAX_HELD_IN) {
      const { heldIn: _dropped, ...rest } = sample;
      sample = rest;
    }
    let data: Buffer;
    try {
      data = encodeSample(sample, { zid: this.zid, epoch: this.epoch, seq }, false, network);
    } catch (err) {
      return Promise.reject(new ZestError("too_long", errorMessage(err)));
    }
    const max = transport.maxPayload;
    if (data.length > max) {
      return Promise.reject(
        ZestError.tooLarge(
          `the value on ${sample.key} (${data.length} bytes) is larger than NATS accepts between routers (${max} bytes)`,
        ),
      );
    }
    const subject = this.subjectOf(sample.key);
    const direct = subject === undefined;
    // A router whose only storages of the key are of shared stores that hold the write already
    // has nothing to store: it gets the sample, unwaited (docs/conditional-writes.md, "Shared stores").
    const targets =
      sample.heldIn === undefined
        ? this.table.interest(sample.key, "subscriber")
        : this.table.ackTargets(sample.key, sample.heldIn);
    this.counters.samplesSent++;
    if (targets.length === 0) {
      // Nobody is known to listen: no ack to wait for, but NATS still forwards the sample to a
      // router whose subscription is newer than its announcement.
      if (!direct) this.samplesOut.queue(subject, undefined, { seq, data, ack: false });
      return Promise.resolve();
    }
    const acked = this.tracker.track(seq, sample.key, data, targets);
    if (direct) for (const t of targets) this.samplesOut.queue(`${DIRECT_SUBJECT}.${t}`, t, { seq, data, ack: true });
    else this.samplesOut.queue(subject, undefined, { seq, data, ack: true, targets });
    return acked;
  }

  /**
   * The subject samples on `key` travel on, or undefined when they go straight to the routers
   * whose declarations match: a wildcard key is no NATS subject, and a very long one would break
   * the protocol line. Remembered per key (writes repeat keys; the mapping never changes).
   */
  private subjectOf(key: string): string | undefined {
    let s = this.subjects.get(key);
    if (s === undefined) {
      const subject = isWild(key) ? undefined : keyToSubject(key);
      s = subject === undefined || subject.length > MAX_SUBJECT_LENGTH ? "" : subject;
      if (key.length <= SUBJECT_CACHE_KEY_MAX) {
        if (this.subjects.size >= SUBJECT_CACHE_MAX) this.subjects.clear();
        this.subjects.set(key, s);
      }
    }
    return s === "" ? undefined : s;
  }

  query(
    selector: Selector,
    timeoutMs: number,
    onReply: (reply: Reply) => void,
    options: RemoteQueryOptions = {},
  ): Promise<void> {
    const transport = this.transport;
    const target = options.target ?? "all";
    if (!transport || !this.connected || this.closing) {
      if (transport && !this.connected && !this.closing) {
        // The local answers count; each router that could have answered adds an error entry.
        for (const zid of this.queryTargets(selector.key, target))
          onReply(errorReply("unavailable", `router ${zid} cannot be reached: not connected to NATS`));
      }
      return Promise.resolve();
    }
    const targets = this.queryTargets(selector.key, target);
    if (targets.length === 0) return Promise.resolve();
    // The targets stop their queryables a little earlier, so their timeout errors travel back in time.
    const remoteMs = Math.max(1, timeoutMs - Math.min(200, Math.floor(timeoutMs / 5)));
    let body: Buffer;
    try {
      body = encodeQuery({
        key: selector.key,
        parameters: selector.parameters.raw,
        timeoutMs: remoteMs,
        target,
        ...(options.content ? { content: options.content } : {}),
      });
    } catch (err) {
      onReply(errorReply("too_long", errorMessage(err)));
      return Promise.resolve();
    }
    if (body.length > transport.maxPayload) {
      onReply(
        errorReply(
          "too_large",
          `the query on ${selector.key} (${body.length} bytes) is larger than NATS accepts between routers (${transport.maxPayload} bytes)`,
        ),
      );
      return Promise.resolve();
    }
    this.counters.queriesSent += targets.length;
    return this.gather.open(targets, timeoutMs, onReply, (qid, zid) =>
      transport.publish(`${QUERY_SUBJECT}.${zid}`, body, this.inbox.subject({ kind: "replies", qid, zid })),
    );
  }

  isConnected(): boolean {
    return this.connected;
  }

  status(): FabricStatus {
    const server = this.connected ? this.transport?.server() : undefined;
    return {
      kind: "nats",
      connected: this.connected,
      detail: {
        servers: [...this.servers],
        ...(server ? { server } : {}),
        routers: this.table?.ids() ?? [],
        pendingAcks: this.tracker?.size ?? 0,
        pendingQueries: this.gather?.size ?? 0,
        ...this.counters,
        acksSent: this.acksOut?.sent ?? 0,
        samplesResent: this.tracker?.resent ?? 0,
        ...(this.claims ? { claims: this.claims.status() } : {}),
      },
    };
  }

  /** True when another router announced a subscriber matching `key`. */
  hasSubscriber(key: string): boolean {
    return (this.table?.interest(key, "subscriber").length ?? 0) > 0;
  }

  /** Ids of the other routers that declared a `kind` intersecting `keyExpr`, sorted. */
  interest(keyExpr: string, kind: DeclarationKind): string[] {
    return [...(this.table?.interest(keyExpr, kind) ?? [])];
  }

  /**
   * The routers a query goes to (docs/fabric-protocol.md, "Query targets"): `all` every one with
   * a matching queryable, `all_complete` those with a complete one including the key,
   * `best_matching` the first of those (by id), or every matching one when there is none.
   */
  private queryTargets(key: string, target: QueryTarget): readonly string[] {
    if (target === "all") return this.table.interest(key, "queryable");
    const complete = this.table.complete(key);
    if (target === "all_complete") return complete;
    return complete.length > 0 ? complete.slice(0, 1) : this.table.interest(key, "queryable");
  }

  /** Ids of the other routers that declared a complete queryable including `keyExpr`, sorted. */
  completeQueryables(keyExpr: string): string[] {
    return this.table?.complete(keyExpr) ?? [];
  }

  /** True when another router announced a queryable matching `key`. */
  hasQueryable(key: string): boolean {
    return (this.table?.interest(key, "queryable").length ?? 0) > 0;
  }

  /** The declarations of `kind` other routers announced that intersect `keyExpr`, each with its router. */
  declarations(keyExpr: string, kind: DeclarationKind): readonly RemoteDeclaration[] {
    return this.table?.declarations(keyExpr, kind) ?? [];
  }

  /** Ids of the other routers this one knows, sorted. */
  peers(): string[] {
    return this.table?.ids() ?? [];
  }

  async close(): Promise<void> {
    if (this.closing) return;
    this.closing = true;
    this.clock.clearTimeout(this.heartbeatTimer);
    this.clock.clearTimeout(this.sweepTimer);
    const transport = this.transport;
    if (!transport) return;
    this.tracker.failAll(() => ZestError.unavailable("the router is shutting down"));
    this.gather.finishAll();
    this.samplesOut.flush();
    this.acksOut.flush();
    this.decl.close();
    await transport.close(1_000);
  }

  // ---- incoming messages ----------------------------------------------------------------------

  private onData(msg: TransportMessage): void {
    const samples = decodeSamples(msg.data);
    for (const m of samples)
      if (!isValid(m.sample.key)) throw new Error("sample: the key is not a valid key expression");
    const wantsAck = msg.reply !== undefined;
    for (const m of samples) this.onSample(m, wantsAck);
  }

  private onSample({ sample, origin, resend, network }: SampleMessage, wantsAck: boolean): void {
    // A second copy through an overlapping subscription is dropped; a resend is answered (its
    // publisher missed our ack). Applying a sample twice is harmless: storages keep the newest.
    if (!this.dups.accept(origin) && !resend) return;
    this.counters.samplesReceived++;
    const host = this.host;
    if (!host) return;
    host.deliverRemote(sample, network).then(
      () => wantsAck && this.acksOut.add(origin.zid, { seq: origin.seq, errorKind: undefined, message: "" }),
      (err: unknown) => {
        const e = toZestError(err);
        if (wantsAck) this.acksOut.add(origin.zid, { seq: origin.seq, errorKind: e.kind, message: e.message });
      },
    );
  }

  private onAcks(msg: TransportMessage): void {
    if (msg.noResponders) return;
    const batch = decodeAcks(msg.data);
    this.table.touch(batch.zid);
    for (const a of batch.acks) this.tracker.acked(batch.zid, a);
  }

  private onAnnouncement(msg: TransportMessage): void {
    const a = decodeAnnouncement(msg.data);
    if (a.m.zid === this.zid) {
      // noEcho: this is not our own message but another router's with the same id.
      if (!this.clashReported)
        this.logger.error(
          { zid: this.zid },
          "another router uses the same id on this NATS cluster; give each router its own --id",
        );
      this.clashReported = true;
      return;
    }
    if (a.type === "goodbye") this.table.goodbye(a.m.zid, a.m.epoch);
    else if (a.type === "declarations") this.ingest(a.m);
    else if (this.table.heartbeat(a.m) === "stale") this.decl.pull(a.m.zid);
  }

  private onHello(msg: TransportMessage): void {
    const m = decodeDeclarations(msg.data);
    if (m.zid === this.zid) return;
    // A known router says hello after a reconnect: what we sent it while its connection was
    // failing over may never have arrived, so every write still waiting for it is resent (once:
    // before `ingest` counts the hello as a sign of life, which would resend some of them again).
    if (this.table.get(m.zid)?.epoch === m.epoch) this.tracker.resendAll(m.zid);
    this.ingest(m);
    if (msg.reply && this.decl.current) this.send(msg.reply, this.decl.current);
  }

  private onControl(msg: TransportMessage): void {
    const c = decodeControl(msg.data);
    const reply = msg.reply;
    if (!reply) return;
    if (c.type === "ping") this.send(reply, encodePong(this.zid));
    else if (c.type === "declarations_request") {
      if (this.decl.current) this.send(reply, this.decl.current);
    } else if (this.host) {
      this.counters.queriesAnswered++;
      const limit = (this.transport?.maxPayload ?? 1024 * 1024) - PAYLOAD_MARGIN;
      // The querier is the owner of the inbox it asked the replies on (a joined router needs it, docs/zenoh-network.md).
      void answerQuery(this.host, c.query, limit, (data) => this.send(reply, data), inboxOwner(reply));
    }
  }

  private ingest(m: DeclarationsMessage): void {
    if (m.zid === this.zid) return;
    const epoch = this.table.get(m.zid)?.epoch;
    this.table.ingest(m);
    // The router restarted: what its previous life received unacknowledged died with it, and
    // the new one still wants the key (else `ingest` released the writes): send them again.
    if (epoch !== undefined && epoch !== m.epoch) this.tracker.resendAll(m.zid);
  }

  // ---- outgoing ---------------------------------------------------------------------------------

  /** Pings `zid` (once per instant: many late writes share one ping). */
  private ping(zid: string): void {
    const now = this.clock.now();
    if (this.lastPing.get(zid) === now) return;
    this.lastPing.set(zid, now);
    this.send(`${QUERY_SUBJECT}.${zid}`, encodeControl("ping"), this.inbox.subject({ kind: "pong", zid }));
  }

  /** Publishes unless disconnected; false when it could not. */
  private send(subject: string, data: Buffer, reply?: string): boolean {
    if (!this.transport || !this.connected) return false;
    try {
      this.transport.publish(subject, data, reply);
      return true;
    } catch (err) {
      this.logger.debug({ subject, err: errorMessage(err) }, "could not publish to NATS");
      return false;
    }
  }

  // ---- timers and connection --------------------------------------------------------------------

  private scheduleHeartbeat(): void {
    this.heartbeatTimer = this.clock.setTimeout(() => {
      if (this.closing) return;
      if (this.connected) this.decl.heartbeat();
      this.scheduleHeartbeat();
    }, this.heartbeatMs);
  }

  /**
   * Silence is checked more often than heartbeats are sent, so a dead router is forgotten soon
   * after `peerTimeoutMs` (well before the writes waiting for it time out). Not while we are
   * disconnected ourselves: their silence is then ours, and they stay known.
   */
  private scheduleSweep(): void {
    const every = Math.max(1, Math.min(this.heartbeatMs, 250, Math.floor(this.peerTimeoutMs / 4)));
    const due = this.clock.now() + every;
    this.sweepTimer = this.clock.setTimeout(() => {
      if (this.closing) return;
      // Late by half the timeout: this process was stalled (SIGSTOP, a blocked event loop) and
      // the heartbeats sent meanwhile may still wait unread in its socket. Their silence was
      // ours, as when disconnected: forgetting them now would make a conditional write on a key
      // they hold skip its claim (docs/conditional-writes.md), so they get peerTimeoutMs again.
      if (this.clock.now() - due > this.peerTimeoutMs / 2) this.table.refreshAll();
      else if (this.connected) this.table.sweep();
      this.scheduleSweep();
    }, every);
  }

  private onTransportEvent(event: "disconnected" | "reconnected" | "closed"): void {
    if (this.closing) return;
    if (event === "reconnected") {
      this.connected = true;
      this.decl.connected = true;
      this.logger.warn({ server: this.transport?.server() }, "reconnected to NATS");
      // Silence while we were away says nothing about the others: give them peerTimeoutMs again.
      this.table.refreshAll();
      // Our subscriptions are restored by the client; the other routers may have forgotten us.
      this.decl.sync();
      this.decl.announce();
      void this.decl.hello(false);
      return;
    }
    if (!this.connected) return;
    this.connected = false;
    this.decl.connected = false;
    if (event === "disconnected") this.logger.warn("lost the connection to NATS; serving locally until it is back");
    // What was in flight will not be answered.
    this.tracker.failAll((key, who) =>
      ZestError.unavailable(`lost the connection to NATS before router(s) ${who} acknowledged the write on ${key}`),
    );
    this.gather.finishAll((t) => `lost the connection to NATS before router ${t} answered`);
  }

  /** Wraps a message handler: a message it cannot handle is logged (rate-limited) and dropped. */
  private guard(fn: (msg: TransportMessage) => void): (msg: TransportMessage) => void {
    return (msg) => {
      try {
        fn(msg);
      } catch (err) {
        this.dropped(msg.subject, errorMessage(err));
      }
    };
  }

  private guarded<A>(fn: (address: A, msg: TransportMessage) => void): (address: A, msg: TransportMessage) => void {
    return (address, msg) => {
      try {
        fn(address, msg);
      } catch (err) {
        this.dropped(msg.subject, errorMessage(err));
      }
    };
  }

  private dropped(subject: string, reason: string): void {
    this.counters.malformedDropped++;
    this.malformed.count++;
    const now = this.clock.now();
    if (now - this.malformed.lastWarn >= MALFORMED_WARN_EVERY_MS) {
      this.logger.warn(
        { subject, err: reason, droppedSinceLastWarning: this.malformed.count },
        "malformed fabric message dropped",
      );
      this.malformed = { count: 0, lastWarn: now };
    } else {
      this.logger.debug({ subject, err: reason }, "malformed fabric message dropped");
    }
  }
}
