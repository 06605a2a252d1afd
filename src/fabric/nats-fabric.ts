/**
 * The NATS fabric: routers that share a NATS cluster form one key space. NATS moves the bytes
 * and decides interest; zest adds only what NATS has no notion of (declarations, acknowledged
 * writes, queries that wait for exactly the routers that can answer).
 *
 * Subjects (`<zid>` is a router id, `<me>` this router's):
 *
 * | subject                  | what travels                                                        |
 * |--------------------------|---------------------------------------------------------------------|
 * | `zest.k.<key tokens>`    | a sample on a plain key (see `subjects.ts` for the key mapping)     |
 * | `zest.w.<zid>`           | a sample on a wildcard (or very long) key, sent to one router       |
 * | `zest.d.<zid>`           | `zid`'s declarations (on change), heartbeats, goodbye               |
 * | `zest.hello`             | a joining router's declarations; every router answers with its own  |
 * | `zest.q.<zid>`           | a query (or a ping, or a request for declarations) to `zid`         |
 * | `zest.in.<me>.…`         | everything addressed back to `<me>`: acks, query replies, answers   |
 *
 * Data. Each router subscribes to the subjects covering its subscribers' key expressions, so the
 * NATS servers only forward a sample to routers with a matching subscriber, and the receiver
 * refines with `intersects` (the router's own index). Subscriptions are recomputed on the
 * microtask after a declaration changes, and always before the declarations are announced, so a
 * router that knows another's declaration also finds the NATS interest in place (both travel on
 * the same connection, in order). The connection is `noEcho`: a router never hears itself. A
 * router whose subscriptions overlap (`zest.k.a.*.c` and `zest.k.a.b.*`) gets one sample twice;
 * the publisher's sequence number drops the second copy. A sample on a wildcard key cannot be a
 * NATS subject (nor can a key longer than `MAX_SUBJECT_LENGTH`), so it is sent to each router
 * whose announced subscribers intersect it, on `zest.w.<zid>`.
 *
 * Acknowledged writes. A publisher knows from the announced declarations which routers have a
 * subscriber matching the key (storages, admin config writes, SSE streams). When there is none,
 * the sample is published without a reply subject and `publish` resolves at once (the common
 * case of nobody listening costs one NATS publish). Otherwise it carries the reply subject
 * `zest.in.<me>.a.<seq>`; every receiver answers there once `deliverRemote` settled (status 0,
 * or the error's HTTP status and message), and `publish` resolves when every expected router
 * acknowledged, rejects on the first failure, and rejects with 504 after `ackTimeoutMs`.
 * No acknowledged write may miss a live router. An ack overdue by `probeAfterMs` pings the late
 * routers (again every `probeAfterMs`); NATS answers "no responders" at once when a router has
 * no connection (to a sample or to a ping). Such a router is marked unreachable in that write,
 * which keeps waiting for it: its NATS node may have died and it is reconnecting. When it shows
 * life (heartbeat, declarations, a ping answer, or a hello, which a known router only sends
 * after a reconnect and which resends everything waiting for it), the sample is resent to it on
 * `zest.w.<zid>` with the `Zest-Resend` header: the receiver applies and acknowledges a resend
 * even when its sequence number was seen (storages keep the newest, so applying twice is
 * harmless), while plain duplicates from overlapping subscriptions are still dropped. Only a
 * forgotten router (goodbye, or no heartbeat for `peerTimeoutMs`) is dropped from the pending
 * writes: it is dead and its data with it. A write whose waiting set empties is acknowledged;
 * `ackTimeoutMs` is above `peerTimeoutMs` so a dead router is forgotten before that.
 *
 * Declarations. A router announces `{ subs, qbls }` (subscriber keys; queryable keys with their
 * `complete` flag) on `zest.d.<me>` when they change, with a version; a heartbeat carrying only
 * the version follows every `heartbeatMs`. A heartbeat with an unknown version (or from an
 * unknown router) makes the receiver fetch the declarations on `zest.q.<zid>`. On start (and
 * after a reconnect) a router sends `zest.hello` with its own declarations and gathers the
 * answers, so it knows the key space before its storages align. Routers silent for
 * `peerTimeoutMs` are forgotten; a clean shutdown says goodbye.
 *
 * Queries. `query` sends the selector to each router whose announced queryables intersect the
 * key, on `zest.q.<zid>`, with reply subject `zest.in.<me>.r.<qid>.<zid>`. The target runs its
 * local queryables (`answerRemote`) with a slightly shorter timeout and streams the replies back
 * in batches below the NATS payload limit; the last batch is marked final. The query resolves
 * when every target sent its final batch; at `timeoutMs` each missing router adds one error
 * reply (504, `Timeout: router <zid> did not answer within <ms> ms`), keeping what did arrive.
 * A target NATS reports without connection ("no responders") adds a 503 error reply at once
 * (`router <zid> is unreachable (no responders on NATS)`); it is not forgotten for that.
 *
 * Lost connection. nats.js reconnects forever. While disconnected, `publish` rejects with 503
 * when known routers have a matching subscriber (the local delivery already happened) and
 * resolves otherwise; `query` adds a 503 error reply per known router with a matching queryable
 * (the local answers still count); pending acknowledgements fail with 503 and pending queries
 * get an error reply per missing router; `status()` says `connected: false`. Other routers are
 * not forgotten while we are disconnected (their silence is ours). On reconnect the router gives
 * every known router `peerTimeoutMs` again, announces itself and says hello.
 */
import { connect, headers, type Msg, type MsgHdrs, type NatsConnection, type Subscription } from "@nats-io/transport-node";
import { isWild, KeTrie } from "../keyexpr/index.js";
import { Encoding } from "../core/encoding.js";
import { type ErrorKind, errorMessage, toZestError, ZestError } from "../core/errors.js";
import type { Fabric, FabricHost, FabricStatus, QueryableInfo } from "../core/fabric.js";
import { silentLogger, type Logger } from "../core/log.js";
import type { Reply } from "../core/reply.js";
import type { Sample } from "../core/sample.js";
import { Parameters, type Selector } from "../core/selector.js";
import { decodeAck, decodeReplies, decodeSample, encodeAck, encodeReply, encodeSample, ReplyBatch } from "./envelope.js";
import { coverAll, keyToSubject, MAX_SUBJECT_LENGTH } from "./subjects.js";

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
   * A write fails with 504 when a router with a matching subscriber has not acknowledged it by
   * then (5000). Must be above `peerTimeoutMs`: a write waits for a router that died until it is
   * forgotten, and that must happen before the write times out.
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
}

/** What another router announced. */
interface Peer {
  readonly zid: string;
  epoch: number;
  ver: number;
  subs: string[];
  qbls: QueryableInfo[];
  lastSeen: number;
}

/** Declarations as they travel (JSON: small, and never on the data path). */
interface DeclMessage {
  t: "decl" | "hb" | "bye";
  zid: string;
  epoch: number;
  ver?: number;
  subs?: string[];
  qbls?: Array<[string, 0 | 1]>;
}

/** A query or control request on `zest.q.<zid>`. */
interface QueryMessage {
  t: "q" | "ping" | "decl";
  k?: string;
  p?: string;
  ms?: number;
}

interface PendingAck {
  readonly key: string;
  /** The sample as sent, for resending it to a router that did not get it. */
  readonly data: Buffer;
  readonly waiting: Set<string>;
  /** Routers of `waiting` that NATS reported unreachable: the sample is resent when they show life. */
  readonly unreachable: Set<string>;
  readonly resolve: () => void;
  readonly reject: (err: Error) => void;
  timer: NodeJS.Timeout | undefined;
}

interface PendingQuery {
  readonly unfinished: Set<string>;
  readonly onReply: (reply: Reply) => void;
  readonly resolve: () => void;
  readonly timer: NodeJS.Timeout;
}

const DATA_SUBJECT_DIRECT = "zest.w";
const DECL_SUBJECT = "zest.d";
const HELLO_SUBJECT = "zest.hello";
const QUERY_SUBJECT = "zest.q";
const INBOX_PREFIX = "zest.in";
/** Header marking a resent sample: the receiver applies and acknowledges it even if it saw its sequence number. */
const RESEND_HEADER = "Zest-Resend";
/** Room left in a message for headers and protocol overhead. */
const PAYLOAD_MARGIN = 1024;

/** The fabric that joins routers through a NATS cluster. */
export class NatsFabric implements Fabric {
  readonly servers: readonly string[];
  private readonly logger: Logger;
  private readonly heartbeatMs: number;
  private readonly peerTimeoutMs: number;
  private readonly ackTimeoutMs: number;
  private readonly probeAfterMs: number;
  private readonly helloWaitMs: number;
  private readonly connectTimeoutMs: number;
  private readonly reconnectTimeWaitMs: number;
  /** Random per instance: tells a restarted router (same id) from its previous life. */
  private readonly epoch = Math.floor(Math.random() * 0xffffffff);

  private nc: NatsConnection | undefined;
  private host: FabricHost | undefined;
  private zid = "";
  private inbox = "";
  private connected = false;
  private closing = false;

  /** Covering subscriptions of the local subscribers, by subject. */
  private readonly dataSubs = new Map<string, Subscription>();
  private syncScheduled = false;
  private declSig = "";
  private declVer = 0;
  private decl: DeclMessage | undefined;

  private readonly routers = new Map<string, Peer>();
  /** Remote subscriber keys → router ids. */
  private readonly remoteSubs = new KeTrie<string>();
  /** Remote queryable keys → router ids. */
  private readonly remoteQbls = new KeTrie<string>();
  /** Highest sequence seen per publisher (`zid/epoch`): drops copies from overlapping subscriptions. */
  private readonly lastSeq = new Map<string, number>();
  private readonly lastPull = new Map<string, number>();

  private seq = 0;
  private qid = 0;
  private readonly pendingAcks = new Map<number, PendingAck>();
  private readonly pendingQueries = new Map<number, PendingQuery>();
  /** Router id → sequence numbers of the pending writes that wait for it while it is unreachable. */
  private readonly unreachable = new Map<string, Set<number>>();
  private readonly resendHeaders: MsgHdrs = resendHeaders();
  private helloDone: (() => void) | undefined;
  private helloBump: (() => void) | undefined;
  private heartbeatTimer: NodeJS.Timeout | undefined;
  private silenceTimer: NodeJS.Timeout | undefined;
  private clashReported = false;

  private readonly counters = { samplesSent: 0, samplesReceived: 0, samplesSkipped: 0, samplesResent: 0, queriesSent: 0, queriesAnswered: 0, acksSent: 0 };

  constructor(options: NatsFabricOptions) {
    if (options.servers.length === 0) throw ZestError.badRequest("the NATS fabric needs at least one server URL");
    this.servers = [...options.servers];
    this.logger = (options.logger ?? silentLogger).child({ fabric: "nats" });
    this.heartbeatMs = options.heartbeatMs ?? 1_000;
    this.peerTimeoutMs = options.peerTimeoutMs ?? 4_000;
    this.ackTimeoutMs = options.ackTimeoutMs ?? 5_000;
    this.probeAfterMs = options.probeAfterMs ?? 300;
    this.helloWaitMs = options.helloWaitMs ?? 1_000;
    this.connectTimeoutMs = options.connectTimeoutMs ?? 5_000;
    this.reconnectTimeWaitMs = options.reconnectTimeWaitMs ?? 250;
    // A write waits for a router that does not answer until it is forgotten (peerTimeoutMs of
    // silence): a router whose NATS node died is reconnecting and gets the write resent, one that
    // died is dropped. The ack timeout must come later, or such writes would fail with 504.
    if (this.ackTimeoutMs <= this.peerTimeoutMs) {
      throw ZestError.badRequest(`fabric.nats.ack_timeout_ms (${this.ackTimeoutMs}) must be greater than peer_timeout_ms (${this.peerTimeoutMs}): a write waits for a silent router until it is forgotten`);
    }
  }

  /** The NATS connection (once started), shared with the `jetstream` volume. */
  get connection(): NatsConnection | undefined {
    return this.nc;
  }

  async start(host: FabricHost): Promise<void> {
    this.host = host;
    this.zid = host.zid;
    this.inbox = `${INBOX_PREFIX}.${this.zid}`;
    let nc: NatsConnection;
    try {
      nc = await connect({
        servers: [...this.servers],
        name: `zest-${this.zid}`,
        noEcho: true,
        maxReconnectAttempts: -1,
        reconnectTimeWait: this.reconnectTimeWaitMs,
        reconnectJitter: 100,
        timeout: this.connectTimeoutMs,
        pingInterval: 5_000,
        maxPingOut: 2,
      });
    } catch (err) {
      throw ZestError.unavailable(`cannot connect to NATS at ${this.servers.join(", ")}: ${errorMessage(err)}`, err);
    }
    this.nc = nc;
    this.connected = true;
    void this.watchStatus(nc);
    nc.subscribe(`${DECL_SUBJECT}.*`, this.handler((m) => this.onDecl(m)));
    nc.subscribe(HELLO_SUBJECT, this.handler((m) => this.onHello(m)));
    nc.subscribe(`${QUERY_SUBJECT}.${this.zid}`, this.handler((m) => this.onQuery(m)));
    nc.subscribe(`${DATA_SUBJECT_DIRECT}.${this.zid}`, this.handler((m) => this.onData(m)));
    nc.subscribe(`${this.inbox}.>`, this.handler((m) => this.onInbox(m)));
    this.syncDeclarations();
    this.heartbeatTimer = setInterval(() => this.tick(), this.heartbeatMs);
    this.heartbeatTimer.unref();
    // Silence is checked more often than heartbeats are sent, so a dead router is forgotten soon
    // after peerTimeoutMs (well before the writes waiting for it time out).
    this.silenceTimer = setInterval(() => this.forgetSilent(), Math.min(this.heartbeatMs, 250));
    this.silenceTimer.unref();
    await this.hello(true);
    this.logger.info({ servers: this.servers, server: nc.getServer(), routers: [...this.routers.keys()] }, "joined the NATS fabric");
  }

  /** Waits until the current declarations are announced and NATS has processed them. */
  async flush(): Promise<void> {
    if (this.syncScheduled) this.syncDeclarations();
    if (this.nc && this.connected) await this.nc.flush();
  }

  declarationsChanged(): void {
    if (this.syncScheduled || !this.nc) return;
    this.syncScheduled = true;
    // One recomputation per burst of declarations, still before any I/O the caller does next.
    queueMicrotask(() => this.syncDeclarations());
  }

  publish(sample: Sample): Promise<void> {
    const nc = this.nc;
    if (!nc || !this.connected || this.closing) {
      this.counters.samplesSkipped++;
      if (nc && !this.connected && !this.closing) {
        // Never a silent 200: routers known to want this key did not get it.
        const who = this.remoteSubs.intersecting(sample.key);
        if (who.length > 0) {
          return Promise.reject(
            ZestError.unavailable(`not connected to NATS: router(s) ${[...new Set(who)].sort().join(", ")} with a matching subscriber did not get the write on ${sample.key}; it reached this router's subscribers only`),
          );
        }
      }
      return Promise.resolve();
    }
    const seq = ++this.seq;
    const data = encodeSample(sample, { zid: this.zid, epoch: this.epoch, seq });
    const max = this.maxPayload();
    if (data.length > max) {
      return Promise.reject(ZestError.tooLarge(`the value on ${sample.key} (${data.length} bytes) is larger than NATS accepts between routers (${max} bytes)`));
    }
    // A wildcard key is no NATS subject, and a very long one would break the protocol line:
    // both go straight to the routers whose declarations match.
    const subject = isWild(sample.key) ? undefined : keyToSubject(sample.key);
    const direct = subject === undefined || subject.length > MAX_SUBJECT_LENGTH;
    const targets = this.remoteSubs.intersecting(sample.key);
    this.counters.samplesSent++;
    if (targets.length === 0) {
      // Nobody is known to listen: no ack to wait for, but NATS still forwards the sample to a
      // router whose subscription is newer than its announcement.
      if (!direct) nc.publish(subject, data);
      return Promise.resolve();
    }
    return new Promise<void>((resolve, reject) => {
      const pending: PendingAck = { key: sample.key, data, waiting: new Set(targets), unreachable: new Set(), resolve, reject, timer: undefined };
      this.pendingAcks.set(seq, pending);
      pending.timer = setTimeout(() => this.ackOverdue(seq), Math.min(this.probeAfterMs, this.ackTimeoutMs));
      try {
        if (direct) for (const t of targets) nc.publish(`${DATA_SUBJECT_DIRECT}.${t}`, data, { reply: `${this.inbox}.a.${seq}.${t}` });
        else nc.publish(subject, data, { reply: `${this.inbox}.a.${seq}` });
      } catch (err) {
        this.settleAck(seq, ZestError.unavailable(`cannot publish to NATS: ${errorMessage(err)}`, err));
      }
    });
  }

  query(selector: Selector, timeoutMs: number, onReply: (reply: Reply) => void): Promise<void> {
    const nc = this.nc;
    if (!nc || !this.connected || this.closing) {
      if (nc && !this.connected && !this.closing) {
        // The local answers count; each router that could have answered adds an error entry.
        for (const zid of [...new Set(this.remoteQbls.intersecting(selector.key))].sort()) {
          onReply(errorReply("unavailable", `router ${zid} cannot be reached: not connected to NATS`));
        }
      }
      return Promise.resolve();
    }
    const targets = this.remoteQbls.intersecting(selector.key);
    if (targets.length === 0) return Promise.resolve();
    const qid = ++this.qid;
    // The targets stop their queryables a little earlier, so their timeout errors travel back in time.
    const remoteMs = Math.max(1, timeoutMs - Math.min(200, Math.floor(timeoutMs / 5)));
    const body = JSON.stringify({ t: "q", k: selector.key, p: selector.parameters.raw, ms: remoteMs } satisfies QueryMessage);
    this.counters.queriesSent += targets.length;
    return new Promise<void>((resolve) => {
      const timer = setTimeout(() => {
        const pq = this.pendingQueries.get(qid);
        if (!pq) return;
        for (const t of pq.unfinished) pq.onReply(errorReply("timeout", `Timeout: router ${t} did not answer within ${timeoutMs} ms`));
        pq.unfinished.clear();
        this.finishQuery(qid);
      }, timeoutMs);
      this.pendingQueries.set(qid, { unfinished: new Set(targets), onReply, resolve, timer });
      for (const t of targets) {
        try {
          nc.publish(`${QUERY_SUBJECT}.${t}`, body, { reply: `${this.inbox}.r.${qid}.${t}` });
        } catch (err) {
          this.queryPartDone(qid, t, errorReply("unavailable", `cannot send the query to router ${t}: ${errorMessage(err)}`));
        }
      }
    });
  }

  status(): FabricStatus {
    const server = this.connected && this.nc ? this.nc.getServer() : undefined;
    return {
      kind: "nats",
      connected: this.connected,
      detail: {
        servers: [...this.servers],
        ...(server ? { server } : {}),
        routers: this.peerIds(),
        pendingAcks: this.pendingAcks.size,
        pendingQueries: this.pendingQueries.size,
        ...this.counters,
      },
    };
  }

  /** True when another router announced a subscriber matching `key`. */
  hasSubscriber(key: string): boolean {
    return this.remoteSubs.intersecting(key).length > 0;
  }

  /** True when another router announced a queryable matching `key`. */
  hasQueryable(key: string): boolean {
    return this.remoteQbls.intersecting(key).length > 0;
  }

  /** Ids of the other routers this one knows, sorted. */
  peers(): string[] {
    return this.peerIds();
  }

  async close(): Promise<void> {
    if (this.closing) return;
    this.closing = true;
    if (this.heartbeatTimer) clearInterval(this.heartbeatTimer);
    if (this.silenceTimer) clearInterval(this.silenceTimer);
    for (const seq of [...this.pendingAcks.keys()]) this.settleAck(seq, ZestError.unavailable("the router is shutting down"));
    for (const [qid, pq] of [...this.pendingQueries]) {
      pq.unfinished.clear();
      this.finishQuery(qid);
    }
    this.helloDone?.();
    const nc = this.nc;
    if (!nc) return;
    try {
      if (this.connected) nc.publish(`${DECL_SUBJECT}.${this.zid}`, JSON.stringify({ t: "bye", zid: this.zid, epoch: this.epoch } satisfies DeclMessage));
    } catch {
      /* closing anyway */
    }
    // drain() flushes the goodbye; it never completes while disconnected, hence the race.
    await Promise.race([nc.drain().catch(() => undefined), new Promise((r) => setTimeout(r, 1_000).unref())]);
    if (!nc.isClosed()) await nc.close().catch(() => undefined);
  }

  /** Subscription options calling `fn`; a message it cannot handle is logged and dropped. */
  private handler(fn: (msg: Msg) => void): { callback: (err: Error | null, msg: Msg) => void } {
    return {
      callback: (err, msg) => {
        if (err) {
          this.logger.warn({ err: errorMessage(err) }, "subscription error");
          return;
        }
        try {
          fn(msg);
        } catch (e) {
          this.logger.warn({ subject: msg.subject, err: errorMessage(e) }, "bad fabric message dropped");
        }
      },
    };
  }

  // ---- declarations -------------------------------------------------------------------------

  /** Recomputes the covering subscriptions, then announces the declarations if they changed. */
  private syncDeclarations(): void {
    this.syncScheduled = false;
    const nc = this.nc;
    const host = this.host;
    if (!nc || !host || this.closing) return;
    const keys = host.subscriberKeys().sort();
    const wanted = new Set(coverAll(keys));
    // New subscriptions first: a sample published meanwhile reaches an old or a new one (a copy
    // reaching both is dropped by its sequence number).
    for (const subject of wanted) {
      if (this.dataSubs.has(subject)) continue;
      this.dataSubs.set(subject, nc.subscribe(subject, this.handler((m) => this.onData(m))));
    }
    for (const [subject, sub] of this.dataSubs) {
      if (wanted.has(subject)) continue;
      sub.unsubscribe();
      this.dataSubs.delete(subject);
    }
    const qbls = host.queryables().sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
    const sig = JSON.stringify([keys, qbls]);
    if (sig === this.declSig && this.decl) return;
    this.declSig = sig;
    this.decl = { t: "decl", zid: this.zid, epoch: this.epoch, ver: ++this.declVer, subs: keys, qbls: qbls.map((q) => [q.key, q.complete ? 1 : 0]) };
    this.announce();
  }

  private announce(): void {
    if (!this.nc || !this.decl || !this.connected) return;
    try {
      this.nc.publish(`${DECL_SUBJECT}.${this.zid}`, JSON.stringify(this.decl));
    } catch (err) {
      this.logger.debug({ err: errorMessage(err) }, "could not announce declarations");
    }
  }

  /**
   * Says hello with our declarations and learns the other routers from their answers. With
   * `wait`, resolves once the answers stop coming (or at once when nobody else is there).
   */
  private hello(wait: boolean): Promise<void> {
    const nc = this.nc;
    if (!nc || !this.decl) return Promise.resolve();
    const done = new Promise<void>((resolve) => {
      let stall: NodeJS.Timeout | undefined;
      const max = setTimeout(() => finish(), this.helloWaitMs);
      const finish = (): void => {
        clearTimeout(max);
        if (stall) clearTimeout(stall);
        this.helloDone = undefined;
        this.helloBump = undefined;
        resolve();
      };
      this.helloDone = finish;
      // Answers arrive within a few milliseconds of each other; a short silence means all are in.
      this.helloBump = () => {
        if (stall) clearTimeout(stall);
        stall = setTimeout(finish, 100);
      };
    });
    try {
      nc.publish(HELLO_SUBJECT, JSON.stringify(this.decl), { reply: `${this.inbox}.h` });
    } catch (err) {
      this.logger.debug({ err: errorMessage(err) }, "hello failed");
      this.helloDone?.();
    }
    return wait ? done : Promise.resolve();
  }

  private onHello(msg: Msg): void {
    const m = msg.json<DeclMessage>();
    const known = this.routers.get(m.zid);
    this.ingest(m);
    // A known router says hello after a reconnect: what we sent it while its connection was
    // failing over may never have arrived, so every write still waiting for it is resent.
    if (known && known.epoch === m.epoch) this.resendAll(m.zid);
    if (msg.reply && this.decl) msg.respond(JSON.stringify(this.decl));
  }

  private onDecl(msg: Msg): void {
    const m = msg.json<DeclMessage>();
    if (m.zid === this.zid) {
      // noEcho: this is not our own message but another router's with the same id.
      if (!this.clashReported) this.logger.error({ zid: this.zid }, "another router uses the same id on this NATS cluster; give each router its own --id");
      this.clashReported = true;
      return;
    }
    if (m.t === "bye") {
      const peer = this.routers.get(m.zid);
      if (peer && peer.epoch === m.epoch) this.forget(m.zid, "left");
      return;
    }
    if (m.t === "decl") {
      this.ingest(m);
      return;
    }
    const peer = this.routers.get(m.zid);
    if (peer && peer.epoch === m.epoch && peer.ver >= (m.ver ?? 0)) {
      peer.lastSeen = Date.now();
      this.alive(m.zid);
      return;
    }
    this.pullDeclarations(m.zid);
  }

  /** Asks router `zid` for its declarations (a heartbeat showed we missed a change, or it is new). */
  private pullDeclarations(zid: string): void {
    const now = Date.now();
    if (now - (this.lastPull.get(zid) ?? 0) < 500) return;
    this.lastPull.set(zid, now);
    this.sendControl(zid, "decl", "d");
  }

  private sendControl(zid: string, t: "decl" | "ping", tag: string): void {
    if (!this.nc || !this.connected) return;
    try {
      this.nc.publish(`${QUERY_SUBJECT}.${zid}`, JSON.stringify({ t } satisfies QueryMessage), { reply: `${this.inbox}.${tag}.${zid}` });
    } catch (err) {
      this.logger.debug({ zid, err: errorMessage(err) }, "control message failed");
    }
  }

  /** Records another router's declarations. */
  private ingest(m: DeclMessage): void {
    if (m.t !== "decl" || m.zid === this.zid || typeof m.zid !== "string") return;
    let peer = this.routers.get(m.zid);
    const ver = m.ver ?? 0;
    if (peer && peer.epoch === m.epoch && peer.ver >= ver) {
      peer.lastSeen = Date.now();
      this.alive(m.zid);
      return;
    }
    if (peer && peer.epoch !== m.epoch) {
      // The router restarted: its old sequence numbers mean nothing any more.
      this.lastSeq.delete(`${m.zid}/${peer.epoch}`);
    }
    if (!peer) {
      peer = { zid: m.zid, epoch: m.epoch, ver, subs: [], qbls: [], lastSeen: Date.now() };
      this.routers.set(m.zid, peer);
      this.logger.info({ zid: m.zid }, "router joined");
    }
    for (const k of peer.subs) this.remoteSubs.delete(k, peer.zid);
    for (const q of peer.qbls) this.remoteQbls.delete(q.key, peer.zid);
    peer.epoch = m.epoch;
    peer.ver = ver;
    peer.lastSeen = Date.now();
    this.alive(peer.zid);
    peer.subs = [];
    peer.qbls = [];
    for (const k of m.subs ?? []) {
      try {
        this.remoteSubs.add(k, peer.zid);
        peer.subs.push(k);
      } catch {
        this.logger.warn({ zid: m.zid, key: k }, "ignored an invalid subscriber declaration");
      }
    }
    for (const [k, complete] of m.qbls ?? []) {
      try {
        this.remoteQbls.add(k, peer.zid);
        peer.qbls.push({ key: k, complete: complete === 1 });
      } catch {
        this.logger.warn({ zid: m.zid, key: k }, "ignored an invalid queryable declaration");
      }
    }
    this.host?.remoteDeclarationsChanged?.();
    // Writes waiting for this router only wait if it still has a matching subscriber.
    const subs = new KeTrie<true>();
    for (const k of peer.subs) subs.add(k, true);
    for (const [seq, p] of [...this.pendingAcks]) {
      if (p.waiting.has(peer.zid) && subs.intersecting(p.key).length === 0) this.stopWaiting(seq, p, peer.zid);
    }
  }

  /**
   * Drops a router: it said goodbye (`left`: adds nothing to queries) or sent no heartbeat for
   * `peerTimeoutMs` (`silent`). Never on a "no responders" alone: a router whose NATS node died
   * is reconnecting and must still get its writes. A forgotten router is dead and its data with
   * it, so the writes waiting for it stop waiting (acknowledged when nobody else is left).
   */
  private forget(zid: string, reason: "left" | "silent"): void {
    const peer = this.routers.get(zid);
    if (!peer) return;
    this.routers.delete(zid);
    for (const k of peer.subs) this.remoteSubs.delete(k, zid);
    for (const q of peer.qbls) this.remoteQbls.delete(q.key, zid);
    this.lastSeq.delete(`${zid}/${peer.epoch}`);
    this.lastPull.delete(zid);
    this.logger.info({ zid, reason }, "router left");
    this.host?.remoteDeclarationsChanged?.();
    for (const [seq, p] of [...this.pendingAcks]) if (p.waiting.has(zid)) this.stopWaiting(seq, p, zid);
    this.unreachable.delete(zid);
    for (const qid of [...this.pendingQueries.keys()]) {
      const error = reason === "silent" ? errorReply("timeout", `Timeout: router ${zid} stopped answering (no heartbeat for ${this.peerTimeoutMs} ms)`) : undefined;
      this.queryPartDone(qid, zid, error);
    }
  }

  /** Heartbeat. */
  private tick(): void {
    if (this.connected && this.nc && this.decl) {
      try {
        this.nc.publish(`${DECL_SUBJECT}.${this.zid}`, JSON.stringify({ t: "hb", zid: this.zid, epoch: this.epoch, ver: this.decl.ver } satisfies DeclMessage));
      } catch {
        /* the status watcher reports connection problems */
      }
    }
  }

  /**
   * Forgets the routers that went silent. Not while we are disconnected ourselves: their silence
   * is then ours, and they stay known (so writes and queries report them, not skip them).
   */
  private forgetSilent(): void {
    if (!this.connected) return;
    const now = Date.now();
    for (const peer of [...this.routers.values()]) if (now - peer.lastSeen > this.peerTimeoutMs) this.forget(peer.zid, "silent");
  }

  /** Router `zid` showed life: resend the writes that wait for it since NATS found it unreachable. */
  private alive(zid: string): void {
    if (this.unreachable.has(zid)) this.resendAll(zid);
  }

  /** Resends every write waiting for `zid` directly to it. */
  private resendAll(zid: string): void {
    this.unreachable.delete(zid);
    for (const [seq, p] of this.pendingAcks) {
      if (!p.waiting.has(zid)) continue;
      p.unreachable.delete(zid);
      this.resend(seq, p, zid);
    }
  }

  private resend(seq: number, p: PendingAck, zid: string): void {
    if (!this.nc || !this.connected) return;
    try {
      this.nc.publish(`${DATA_SUBJECT_DIRECT}.${zid}`, p.data, { reply: `${this.inbox}.a.${seq}.${zid}`, headers: this.resendHeaders });
      this.counters.samplesResent++;
    } catch (err) {
      this.logger.debug({ zid, err: errorMessage(err) }, "could not resend a sample");
    }
  }

  /** NATS found nobody behind router `zid`: the write keeps waiting for it, and is resent when it shows life. */
  private markUnreachable(seq: number, p: PendingAck, zid: string): void {
    if (!p.waiting.has(zid)) return;
    p.unreachable.add(zid);
    let seqs = this.unreachable.get(zid);
    if (!seqs) this.unreachable.set(zid, (seqs = new Set()));
    seqs.add(seq);
  }

  /** The write `seq` no longer waits for `zid` (it acknowledged, lost its subscriber, or was forgotten). */
  private stopWaiting(seq: number, p: PendingAck, zid: string): void {
    p.waiting.delete(zid);
    if (p.unreachable.delete(zid)) this.unmark(zid, seq);
    if (p.waiting.size === 0) this.settleAck(seq);
  }

  private unmark(zid: string, seq: number): void {
    const seqs = this.unreachable.get(zid);
    if (seqs?.delete(seq) && seqs.size === 0) this.unreachable.delete(zid);
  }

  // ---- data ---------------------------------------------------------------------------------

  private onData(msg: Msg): void {
    const { sample, origin } = decodeSample(msg.data);
    const from = `${origin.zid}/${origin.epoch}`;
    const last = this.lastSeq.get(from) ?? 0;
    if (origin.seq <= last) {
      // A second copy through an overlapping subscription is dropped; a resend is answered (its
      // publisher missed our ack). Applying a sample twice is harmless: storages keep the newest.
      if (msg.headers?.get(RESEND_HEADER) !== "1") return;
    } else {
      this.lastSeq.set(from, origin.seq);
    }
    this.counters.samplesReceived++;
    const host = this.host;
    if (!host) return;
    const reply = msg.reply;
    host.deliverRemote(sample).then(
      () => reply && this.ack(reply, undefined, ""),
      (err: unknown) => {
        const e = toZestError(err);
        if (reply) this.ack(reply, e.kind, e.message);
      },
    );
  }

  private ack(reply: string, errorKind: ErrorKind | undefined, message: string): void {
    if (!this.nc || !this.connected) return;
    try {
      this.nc.publish(reply, encodeAck({ zid: this.zid, errorKind, message }));
      this.counters.acksSent++;
    } catch (err) {
      this.logger.debug({ err: errorMessage(err) }, "could not acknowledge a sample");
    }
  }

  /**
   * An ack is late: ping the late routers (again every `probeAfterMs`) until `ackTimeoutMs`. NATS
   * answers "no responders" at once for a router without a connection, which marks it
   * unreachable; its answer, or any later sign of life, resends the sample to it.
   */
  private ackOverdue(seq: number, since = Date.now() - this.probeAfterMs): void {
    const p = this.pendingAcks.get(seq);
    if (!p) return;
    for (const zid of p.waiting) this.sendControl(zid, "ping", "p");
    const left = this.ackTimeoutMs - (Date.now() - since);
    if (left > this.probeAfterMs) {
      p.timer = setTimeout(() => this.ackOverdue(seq, since), this.probeAfterMs);
      return;
    }
    p.timer = setTimeout(() => {
      const late = this.pendingAcks.get(seq);
      if (!late) return;
      const who = [...late.waiting].sort().join(", ");
      this.settleAck(seq, ZestError.timeout(`router(s) ${who} did not acknowledge the write on ${late.key} within ${this.ackTimeoutMs} ms`));
    }, Math.max(0, left));
  }

  private settleAck(seq: number, err?: Error): void {
    const p = this.pendingAcks.get(seq);
    if (!p) return;
    this.pendingAcks.delete(seq);
    if (p.timer) clearTimeout(p.timer);
    for (const zid of p.unreachable) this.unmark(zid, seq);
    if (err) p.reject(err);
    else p.resolve();
  }

  // ---- queries ------------------------------------------------------------------------------

  private onQuery(msg: Msg): void {
    const m = msg.json<QueryMessage>();
    if (m.t === "ping") {
      msg.respond("{}");
      return;
    }
    if (m.t === "decl") {
      if (this.decl) msg.respond(JSON.stringify(this.decl));
      return;
    }
    const reply = msg.reply;
    const host = this.host;
    if (!reply || !host || typeof m.k !== "string") return;
    this.counters.queriesAnswered++;
    void this.answer(host, reply, m.k, m.p ?? "", m.ms ?? 10_000);
  }

  /** Runs the local queryables for a remote query and streams the replies back in batches. */
  private async answer(host: FabricHost, reply: string, key: string, parameters: string, timeoutMs: number): Promise<void> {
    const limit = this.maxPayload() - PAYLOAD_MARGIN;
    const batch = new ReplyBatch();
    const send = (final: boolean): void => {
      if (!this.nc || !this.connected) return;
      try {
        this.nc.publish(reply, batch.take(final));
      } catch (err) {
        this.logger.debug({ err: errorMessage(err) }, "could not send query replies");
      }
    };
    const onReply = (r: Reply): void => {
      let part = encodeReply(r);
      if (part.length > limit) {
        const key = r.kind === "ok" ? r.sample.key : "an error";
        part = encodeReply(errorReply("too_large", `the reply for ${key} (${part.length} bytes) is larger than NATS accepts between routers (${limit} bytes)`));
      }
      if (batch.length > 0 && batch.size + part.length > limit) send(false);
      batch.addEncoded(part);
    };
    try {
      const selector: Selector = { key, parameters: new Parameters(parameters) };
      await host.answerRemote(selector, timeoutMs, onReply);
    } catch (err) {
      onReply(errorReply(toZestError(err).kind, errorMessage(err)));
    }
    send(true);
  }

  private queryPartDone(qid: number, zid: string, error?: Reply): void {
    const pq = this.pendingQueries.get(qid);
    if (!pq || !pq.unfinished.delete(zid)) return;
    if (error) pq.onReply(error);
    if (pq.unfinished.size === 0) this.finishQuery(qid);
  }

  private finishQuery(qid: number): void {
    const pq = this.pendingQueries.get(qid);
    if (!pq) return;
    this.pendingQueries.delete(qid);
    clearTimeout(pq.timer);
    pq.resolve();
  }

  // ---- replies addressed to this router -----------------------------------------------------

  private onInbox(msg: Msg): void {
    const parts = msg.subject.slice(this.inbox.length + 1).split(".");
    // NATS answers a message with a reply subject and no subscriber with an empty 503 status.
    const noResponders = msg.data.length === 0 && msg.headers?.code === 503;
    switch (parts[0]) {
      case "a": {
        const seq = Number(parts[1]);
        const p = this.pendingAcks.get(seq);
        if (!p) return;
        if (noResponders) {
          // Nobody subscribes to this key (or that router's direct subject) right now: the routers
          // still waited for may be reconnecting. They are resent the sample when they show life,
          // and dropped only when forgotten.
          if (parts[2] === undefined) for (const zid of [...p.waiting]) this.markUnreachable(seq, p, zid);
          else this.markUnreachable(seq, p, parts[2]);
          return;
        }
        const ack = decodeAck(msg.data);
        if (ack.errorKind !== undefined) {
          this.settleAck(seq, new ZestError(ack.errorKind, `router ${ack.zid}: ${ack.message}`));
          return;
        }
        if (p.waiting.has(ack.zid)) this.stopWaiting(seq, p, ack.zid);
        return;
      }
      case "r": {
        const qid = Number(parts[1]);
        const zid = parts[2] ?? "";
        const pq = this.pendingQueries.get(qid);
        if (!pq || !pq.unfinished.has(zid)) return;
        if (noResponders) {
          // Not forgotten here: it may be reconnecting. Never a silent miss either.
          this.queryPartDone(qid, zid, errorReply("unavailable", `router ${zid} is unreachable (no responders on NATS)`));
          return;
        }
        const { replies, final } = decodeReplies(msg.data);
        for (const r of replies) pq.onReply(r);
        if (final) this.queryPartDone(qid, zid);
        return;
      }
      case "h":
        if (noResponders) {
          this.helloDone?.();
          return;
        }
        this.ingest(msg.json<DeclMessage>());
        this.helloBump?.();
        return;
      case "d":
      case "p": {
        const zid = parts[1] ?? "";
        if (noResponders) {
          // Unreachable right now; forgotten only by goodbye or heartbeat silence.
          for (const [seq, p] of this.pendingAcks) this.markUnreachable(seq, p, zid);
          return;
        }
        if (parts[0] === "d") this.ingest(msg.json<DeclMessage>());
        else this.alive(zid);
        return;
      }
    }
  }

  // ---- connection ---------------------------------------------------------------------------

  private async watchStatus(nc: NatsConnection): Promise<void> {
    for await (const s of nc.status()) {
      if (this.closing) return;
      if (s.type === "disconnect") {
        if (!this.connected) continue;
        this.connected = false;
        this.logger.warn({ server: s.server }, "lost the connection to NATS; serving locally until it is back");
        this.failPending();
      } else if (s.type === "reconnect") {
        this.connected = true;
        this.logger.warn({ server: s.server }, "reconnected to NATS");
        // Silence while we were away says nothing about the others: give them peerTimeoutMs again.
        const now = Date.now();
        for (const peer of this.routers.values()) peer.lastSeen = now;
        // Our subscriptions are restored by the client; the other routers may have forgotten us.
        this.syncDeclarations();
        this.announce();
        void this.hello(false);
      } else if (s.type === "close") {
        this.connected = false;
        this.failPending();
      }
    }
  }

  /** The connection dropped: what was in flight will not be answered. */
  private failPending(): void {
    for (const [seq, p] of [...this.pendingAcks]) {
      const who = [...p.waiting].sort().join(", ");
      this.settleAck(seq, ZestError.unavailable(`lost the connection to NATS before router(s) ${who} acknowledged the write on ${p.key}`));
    }
    for (const [qid, pq] of [...this.pendingQueries]) {
      for (const t of pq.unfinished) pq.onReply(errorReply("unavailable", `lost the connection to NATS before router ${t} answered`));
      pq.unfinished.clear();
      this.finishQuery(qid);
    }
  }

  private maxPayload(): number {
    return this.nc?.info?.max_payload ?? 1024 * 1024;
  }

  private peerIds(): string[] {
    return [...this.routers.keys()].sort();
  }
}

function errorReply(errorKind: ErrorKind, message: string): Reply {
  return { kind: "err", errorKind, encoding: Encoding.TEXT_PLAIN, payload: Buffer.from(message) };
}

function resendHeaders(): MsgHdrs {
  const h = headers();
  h.set(RESEND_HEADER, "1");
  return h;
}
