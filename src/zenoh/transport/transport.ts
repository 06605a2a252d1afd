/**
 * One zenoh transport over one link, a `Wire` (TCP, TLS or UDP: src/zenoh/links/), as in
 * docs/zenoh-protocol.md: the INIT/OPEN handshake with a stateless cookie and a deadline,
 * the lease and KEEP_ALIVE, CLOSE, FRAME and FRAGMENT in and out. Network messages are handed
 * to a `NetworkHandler` once the session is open; what the handler sends goes out in one batch
 * per event-loop turn, written at the end of that turn (its microtask checkpoint). Malformed input closes this transport with a log line, never the router.
 */
import { Buffer } from "node:buffer";
import { randomInt } from "node:crypto";
import { BinaryReader, BinaryWriter, DecodeError } from "../../core/binary.js";
import { errorMessage } from "../../core/errors.js";
import type { Logger } from "../../core/log.js";
import { MandatoryExtensionError, PROTOCOL_VERSION, type WhatAmI } from "../codec/core.js";
import { decodeNetwork, type NetworkMsg, pushScratch } from "../codec/network.js";
import {
  CloseReason,
  decodeTransport,
  encodeClose,
  encodeFragment,
  encodeFrameHeader,
  encodeInitAck,
  encodeInitSyn,
  encodeKeepAlive,
  encodeOpen,
  type FragmentMsg,
  type InitMsg,
  isNetworkHeader,
  type OpenMsg,
} from "../codec/transport.js";
import { usrPwdClient } from "../auth-usrpwd.js";
import type { CookieJar } from "../cookie.js";
import type { Wire } from "../links/wire.js";
import { InboundSequences, nextSn, type SnVerdict, snMask } from "./sequence.js";

/** What a transport does with the network messages of an open session. */
export interface NetworkHandler {
  /**
   * One network message, valid for this call only: a PUSH's message, key and body objects are
   * reused for the next PUSH (what its body's fields hold, payload, attachment and timestamp,
   * may be kept).
   */
  onMessage(msg: NetworkMsg): void;
  /** The transport closed (either side); release everything the session holds. */
  onClose(): void;
}

/** The limits of one transport. */
export interface LinkLimits {
  /** Time allowed from connect to OPEN ack (ms). */
  handshakeTimeoutMs: number;
  /**
   * The router's lease, announced in its OPEN ack (ms): the peer may close the session when the
   * router is silent this long, so the router sends KEEP_ALIVE within a quarter of it.
   */
  leaseMs: number;
  /** The largest batch the router accepts and sends (bytes, at most 65 535). */
  batchSize: number;
  /** The largest network message reassembled from fragments (bytes). */
  maxFragmentedMessage: number;
  /** Bytes queued to a slow reader beyond which droppable samples are dropped. */
  dropQueueBytes: number;
  /** Bytes queued to a slow reader beyond which the transport is closed. */
  maxQueueBytes: number;
}

/** What the peer announced in the handshake. */
export interface PeerInfo {
  zid: string;
  whatami: WhatAmI;
  address: string;
  /**
   * The lease the peer announced in its OPEN syn, bounded by `PEER_LEASE_MIN_MS` and
   * `PEER_LEASE_MAX_MS` (ms): the session is closed when the peer is silent this long.
   */
  leaseMs: number;
  batchSize: number;
  patch: number;
  qos: boolean;
  /** The user the handshake authenticated (user/password), if any. */
  user?: string | undefined;
}

/** A handshake step's refusal: the link is closed with CLOSE, the reason logged by the gate. */
export interface Refusal {
  readonly refused: string;
}

/**
 * Who may open a session (docs/security.md): asked at INIT syn and at OPEN syn, before the
 * router answers, so a refused client gets CLOSE instead of an ack.
 */
export interface HandshakeGate {
  /** At INIT syn: a nonce (and the ack's auth extension) when credentials are taken, or a refusal. */
  onInit(m: InitMsg, address: string): { nonce?: bigint; auth?: Buffer } | Refusal;
  /** At OPEN syn: the authenticated user (and the ack's auth extension), or a refusal. */
  onOpen(m: OpenMsg, nonce: bigint | undefined, peer: PeerInfo): { user?: string; auth?: Buffer } | Refusal;
}

export interface LinkOptions {
  zid: string;
  cookies: CookieJar;
  logger: Logger;
  limits: LinkLimits;
  /** Authentication and admission in the handshake (none: every client is admitted). */
  gate?: HandshakeGate | undefined;
  /** Called when the handshake completes; returns the handler of the session's network messages. */
  onOpen(link: ZenohLink, peer: PeerInfo): NetworkHandler;
  onClosed(link: ZenohLink): void;
  /**
   * This side opens the transport (zest connecting out, docs/zenoh-network.md): it sends the
   * INIT syn and OPEN syn, as `whatami`, and the other side answers with the acks. Absent: this
   * side accepts (the listener's links). Everything after the handshake is the same either way.
   */
  initiate?: { whatami: WhatAmI; credentials?: { user: string; password: string } | undefined } | undefined;
}

/**
 * `init`: waiting for the INIT syn (accepting) or ack (initiating); `open_wait`: for the OPEN syn
 * or ack; then `open` and `closed`.
 */
type State = "init" | "open_wait" | "open" | "closed";

/** A fragmented message being reassembled on one lane and channel. */
interface Defrag {
  parts: Buffer[];
  bytes: number;
  /** Patch 0: the rest of a broken message is being skipped. */
  skipping: boolean;
}

/**
 * The bounds of a peer's announced lease (docs/zenoh-protocol.md, "Lease"), the same as those
 * of the router's own (`transport.link.tx.lease`): a shorter one would have the router close
 * sessions at the first hiccup and tick many times a second; a longer one would keep a vanished
 * peer's session, its declarations and its session-bound values for hours.
 */
export const PEER_LEASE_MIN_MS = 500;
export const PEER_LEASE_MAX_MS = 3_600_000;

/** The lease the router expects a peer's traffic within, from the one the peer announced. */
export function honouredLease(announcedMs: number): number {
  return Math.min(PEER_LEASE_MAX_MS, Math.max(PEER_LEASE_MIN_MS, announcedMs));
}

/** zenoh's default priority (`Data`), the one lane of a session without QoS. */
const DEFAULT_PRIORITY = 5;

/** A batch (with its header room) or a message to send as FRAGMENTs, waiting for the wire. */
interface Queued {
  bytes: Buffer;
  fragment: boolean;
}

/** One priority lane's output: the batch being filled, and what waits for the wire. */
interface OutLane {
  readonly priority: number;
  readonly w: BinaryWriter;
  open: boolean;
  /** Where the message being written starts in `w`. */
  msgStart: number;
  readonly queue: Queued[];
  /** Bytes in `queue`. */
  queued: number;
}

/** The FRAGMENT header room kept in each batch (bytes). */
const FRAME_OVERHEAD = 16;
const BATCH_LEN = 2;
/** The longest FRAME header: its byte, a 28-bit SN (4 bytes), a QoS extension (2 bytes). */
const MAX_FRAME_HEADER = 7;
/** The room kept at the start of each batch for its length and FRAME header, written when it leaves. */
const HEADER_ROOM = BATCH_LEN + MAX_FRAME_HEADER;
const HEADER_ROOM_BYTES = new Uint8Array(HEADER_ROOM);
/**
 * Bytes the wire may hold unsent before batches wait in their lanes: beyond it, a batch of a
 * higher priority still goes ahead of those queued (one largest batch).
 */
const WIRE_HIGH_WATER = 65_536;
let linkIds = 0;

export class ZenohLink {
  readonly id = ++linkIds;
  readonly address: string;
  /** The link's locator as the admin space shows it (`udp/127.0.0.1:51000`). */
  readonly locator: string;
  peer: PeerInfo | undefined;
  private state: State = "init";
  private handler: NetworkHandler | undefined;
  private readonly options: LinkOptions;
  private readonly logger: Logger;
  private readonly openedAt = Date.now();
  private lastReceived = Date.now();
  /** Reading is paused (`pauseReading`). */
  private readPaused = false;
  private lastSent = Date.now();
  /** The output lanes, by priority (0 highest), made on first use. */
  private readonly lanesOut: Array<OutLane | undefined> = [];
  /** Lanes with a batch being filled. */
  private openLanes = 0;
  /** Batches and fragmented messages waiting for the wire, in all lanes. */
  private queuedUnits = 0;
  /** Bytes waiting in the output lanes for a slow reader (not yet handed to the wire). */
  get queuedBytes(): number {
    let n = 0;
    for (const lane of this.lanesOut) n += lane?.queued ?? 0;
    return n;
  }
  /** The lane and express flag of the message being written. */
  private current: OutLane | undefined;
  private currentExpress = false;
  /** Where FRAME headers are encoded before they are copied in front of their batch. */
  private readonly header = new BinaryWriter(16);
  private flushScheduled = false;
  /** The next SN of each reliable lane (one lane, 0, without QoS). */
  private readonly snOut = [0, 0, 0, 0, 0, 0, 0, 0];
  private snMask = 0x0fff_ffff;
  private batchSize = 65_535;
  /** The SNs received, per lane and channel (set by the OPEN). */
  private inbound: InboundSequences | undefined;
  /** What every PUSH received is decoded into (the handler uses each before the next is read). */
  private readonly push = pushScratch();
  /** Fragments being reassembled, per lane and channel (`lane * 2 + (reliable ? 0 : 1)`), made on demand. */
  private readonly defrag: Array<Defrag | undefined> = [];
  /** Samples dropped because the reader was slow. */
  dropped = 0;
  /** The reason of the CLOSE the peer sent, if it sent one. */
  closeReceived: number | undefined;
  /** FRAMEs and FRAGMENTs dropped because their SN was stale (a repeat, or older). */
  staleDropped = 0;

  constructor(
    readonly wire: Wire,
    options: LinkOptions,
  ) {
    this.options = options;
    this.logger = options.logger;
    const host = wire.remoteAddress.includes(":") ? `[${wire.remoteAddress}]` : wire.remoteAddress;
    this.address = `${host}:${wire.remotePort}`;
    this.locator = `${wire.protocol}/${this.address}`;
    this.batchSize = Math.min(options.limits.batchSize, wire.mtu);
    wire.bind({ batch: (b) => this.onWireBatch(b), closed: () => this.closed(), drained: () => this.pump() });
    if (options.initiate !== undefined) this.sendInitSyn(options.initiate.whatami, options.initiate.credentials);
  }

  /** True when this side opened the transport (it sent the INIT syn). */
  get initiating(): boolean {
    return this.options.initiate !== undefined;
  }

  /** True once the session is open and not yet closed. */
  get isOpen(): boolean {
    return this.state === "open";
  }

  /**
   * How often `tick` must run for this link (ms): a quarter of the shorter of the two leases once
   * the session is open (its KEEP_ALIVEs, its expiry), a quarter of the handshake deadline before.
   */
  get tickPeriodMs(): number {
    if (this.peer === undefined || this.state !== "open") return this.options.limits.handshakeTimeoutMs / 4;
    return Math.min(this.peer.leaseMs, this.options.limits.leaseMs) / 4;
  }

  /**
   * Stops reading the peer (back-pressure: it has too much in flight) until `resumeReading`.
   * Its lease does not run meanwhile: it is silent because it is not read.
   */
  pauseReading(): void {
    if (this.readPaused) return;
    this.readPaused = true;
    this.wire.pause?.();
  }

  resumeReading(): void {
    if (!this.readPaused) return;
    this.readPaused = false;
    this.lastReceived = Date.now();
    this.wire.resume?.();
  }

  /** Lease and deadline checks, called by the server at least every `tickPeriodMs`. */
  tick(now: number): void {
    if (this.state === "closed") return;
    if (this.state !== "open") {
      if (now - this.openedAt > this.options.limits.handshakeTimeoutMs) {
        this.logger.info(
          { link: this.id, address: this.address },
          "zenoh handshake not completed in time: link closed",
        );
        this.close(CloseReason.EXPIRED);
      }
      return;
    }
    const peer = this.peer as PeerInfo;
    // The peer promised traffic within the lease it announced (zenoh: the receiver of an OPEN
    // expires its sender by the sender's lease), not within the router's.
    if (!this.readPaused && now - this.lastReceived > peer.leaseMs) {
      this.logger.info(
        { link: this.id, zid: peer.zid, leaseMs: peer.leaseMs, silentMs: now - this.lastReceived },
        "zenoh session lease expired: closed",
      );
      this.close(CloseReason.EXPIRED);
      return;
    }
    // Keep the router alive for the peer: something at least four times per lease, as zenoh does,
    // per the shorter of the two leases (a client may expire the router by either).
    const keepAliveMs = Math.min(peer.leaseMs, this.options.limits.leaseMs) / 4;
    if (now - this.lastSent >= keepAliveMs && this.openLanes === 0 && this.queuedUnits === 0) {
      const w = new BinaryWriter(4);
      w.u16(1);
      encodeKeepAlive(w);
      this.writeRaw(w.view());
    }
  }

  // ---- input --------------------------------------------------------------------------------

  private onWireBatch(batch: Buffer): void {
    if (this.state === "closed") return;
    this.lastReceived = Date.now();
    try {
      // A datagram is one batch: one larger than the batch size agreed is malformed.
      if (!this.wire.streamed && batch.length > this.batchSize)
        throw new DecodeError(`datagram of ${batch.length} bytes, larger than the batch size (${this.batchSize})`);
      this.onBatch(batch);
    } catch (err) {
      this.fail(err);
    }
  }

  private fail(err: unknown): void {
    const mandatory = err instanceof MandatoryExtensionError;
    const level = err instanceof DecodeError ? "info" : "warn";
    this.logger[level](
      { link: this.id, address: this.address, zid: this.peer?.zid, err: errorMessage(err) },
      "zenoh link closed: malformed or unsupported input",
    );
    this.close(mandatory ? CloseReason.UNSUPPORTED : CloseReason.INVALID);
  }

  private onBatch(batch: Buffer): void {
    const r = new BinaryReader(batch);
    while (!r.done && this.state !== "closed") {
      const t = decodeTransport(r);
      switch (t.kind) {
        case "init":
          if (this.initiating) {
            if (!t.msg.ack || this.state !== "init") throw new DecodeError("unexpected INIT");
            this.onInitAck(t.msg);
            break;
          }
          // On UDP an INIT ack may be lost: a repeated INIT syn is answered again (the cookie is stateless).
          if (t.msg.ack || !(this.state === "init" || (this.state === "open_wait" && !this.wire.streamed)))
            throw new DecodeError("unexpected INIT");
          this.onInitSyn(t.msg);
          break;
        case "open":
          if (this.state !== "open_wait" || t.msg.ack !== this.initiating) throw new DecodeError("unexpected OPEN");
          if (this.initiating) this.onOpenAck(t.msg);
          else this.onOpenSyn(t.msg);
          break;
        case "frame": {
          if (this.state !== "open") throw new DecodeError("FRAME before the session is open");
          const f = t.frame;
          const verdict = this.sequence("FRAME", f.sn, f.reliable, f.priority);
          if (verdict === undefined) return;
          // A stale FRAME's messages are read past, not delivered.
          while (!r.done && isNetworkHeader(r.peekU8())) {
            const msg = decodeNetwork(r, this.push);
            if (verdict !== "stale") this.deliver(msg);
          }
          break;
        }
        case "fragment": {
          if (this.state !== "open") throw new DecodeError("FRAGMENT before the session is open");
          const f = t.fragment;
          const verdict = this.sequence("FRAGMENT", f.sn, f.reliable, f.priority);
          if (verdict === undefined) return;
          if (verdict !== "stale") this.onFragment(f, verdict === "next");
          break;
        }
        case "keepalive":
        case "oam":
          break;
        case "close":
          this.closeReceived = t.reason;
          this.logger.debug({ link: this.id, zid: this.peer?.zid, reason: t.reason }, "zenoh peer closed the session");
          this.wire.end();
          this.closed();
          return;
        case "join":
          throw new DecodeError("JOIN on a unicast link");
      }
    }
  }

  private deliver(msg: NetworkMsg): void {
    this.handler?.onMessage(msg);
  }

  /** The lane of a priority: its own with QoS agreed; without, only the default priority is valid. */
  private laneOf(priority: number): number {
    if (this.peer?.qos) return priority;
    if (priority !== DEFAULT_PRIORITY)
      throw new DecodeError(`a message on priority ${priority}, but QoS lanes were not agreed`);
    return 0;
  }

  /**
   * Checks the SN of a FRAME or FRAGMENT on its lane and channel (docs/zenoh-protocol.md,
   * "Sequence numbers"): a later SN is taken and a stale one dropped, as zenoh does on every
   * link. A gap is not a fault even on TCP: zenoh-rust spends an SN past a fragmented message's
   * last fragment, so its next message arrives one SN ahead. Returns undefined when the session
   * was closed.
   */
  private sequence(kind: string, sn: number, reliable: boolean, priority: number): SnVerdict | undefined {
    const seq = this.inbound as InboundSequences;
    if (sn > seq.mask)
      throw new DecodeError(`${kind} sequence number ${sn} beyond the negotiated resolution (${seq.mask})`);
    const lane = this.laneOf(priority);
    const expected = seq.expected(lane, reliable);
    const verdict = seq.check(lane, reliable, sn);
    if (verdict === "stale") {
      this.staleDropped++;
      this.logger.debug(
        { link: this.id, kind, priority, reliable, sn, expected },
        "zenoh message with a stale SN dropped",
      );
    }
    return verdict;
  }

  /**
   * Reassembles a fragmented message on its lane and channel. `consecutive`: its SN follows the
   * previous one's; when it does not, the message held is missing a piece and is discarded.
   */
  private onFragment(f: FragmentMsg, consecutive: boolean): void {
    const ch = this.laneOf(f.priority) * 2 + (f.reliable ? 0 : 1);
    let d = this.defrag[ch];
    if (d === undefined) {
      d = { parts: [], bytes: 0, skipping: false };
      this.defrag[ch] = d;
    }
    const markers = (this.peer?.patch ?? 0) >= 1;
    if (f.drop) {
      d.parts.length = 0;
      d.bytes = 0;
      d.skipping = false;
      return;
    }
    if (markers) {
      // Patch ≥ 1: the first fragment of a message says so. Without the start, nothing is kept.
      if (f.first) {
        d.parts.length = 0;
        d.bytes = 0;
      } else if (!consecutive || d.parts.length === 0) {
        this.discardFragments(d, f, consecutive);
        return;
      }
    } else {
      if (!consecutive && d.parts.length > 0) {
        // The rest of this broken message is skipped up to its last fragment.
        this.discardFragments(d, f, consecutive);
        d.skipping = f.more;
        return;
      }
      if (d.skipping) {
        d.skipping = f.more;
        return;
      }
    }
    const total = d.bytes + f.payload.length;
    if (total > this.options.limits.maxFragmentedMessage) {
      throw new DecodeError(
        `fragmented message larger than ${this.options.limits.maxFragmentedMessage} bytes (the limit)`,
      );
    }
    d.parts.push(Buffer.from(f.payload));
    d.bytes = total;
    if (f.more) return;
    const whole = Buffer.concat(d.parts, total);
    d.parts.length = 0;
    d.bytes = 0;
    const r = new BinaryReader(whole);
    while (!r.done) this.deliver(decodeNetwork(r, this.push));
  }

  private discardFragments(d: Defrag, f: FragmentMsg, consecutive: boolean): void {
    if (d.parts.length > 0 || !consecutive)
      this.logger.debug(
        { link: this.id, zid: this.peer?.zid, sn: f.sn, held: d.bytes },
        "zenoh fragments with a broken SN chain discarded",
      );
    d.parts.length = 0;
    d.bytes = 0;
  }

  // ---- handshake ----------------------------------------------------------------------------

  private onInitSyn(m: InitMsg): void {
    if (m.version !== PROTOCOL_VERSION) {
      this.logger.info({ link: this.id, version: m.version }, "zenoh INIT with another protocol version: refused");
      this.close(CloseReason.UNSUPPORTED);
      return;
    }
    if (m.whatami === "router") {
      // Routers mesh over NATS, not over zenoh's router protocol (docs/zenoh-protocol.md).
      this.logger.info(
        { link: this.id, zid: m.zid },
        "zenoh router tried to connect: only clients and peers are accepted",
      );
      this.close(CloseReason.UNSUPPORTED);
      return;
    }
    const admitted = this.options.gate?.onInit(m, this.address);
    if (admitted !== undefined && "refused" in admitted) {
      this.close(CloseReason.GENERIC);
      return;
    }
    const state = {
      zid: m.zid,
      whatami: m.whatami,
      snRes: Math.min(m.snRes, 2),
      reqRes: Math.min(m.reqRes, 2),
      // Bounded by the link too: on UDP a batch is one datagram.
      batchSize: Math.min(m.batchSize, this.options.limits.batchSize, this.wire.mtu),
      patch: Math.min(m.patch, 1),
      qos: m.qos,
      issuedAt: Date.now(),
      nonce: admitted?.nonce,
    };
    const w = new BinaryWriter(128);
    w.u16(0);
    encodeInitAck(w, {
      whatami: "router",
      zid: this.options.zid,
      snRes: state.snRes,
      reqRes: state.reqRes,
      batchSize: state.batchSize,
      cookie: this.options.cookies.seal(state),
      patch: state.patch,
      qos: state.qos,
      auth: admitted?.auth,
    });
    w.patchU16(0, w.length - BATCH_LEN);
    this.state = "open_wait";
    this.writeRaw(w.view());
  }

  private onOpenSyn(m: OpenMsg): void {
    const state = this.options.cookies.open(m.cookie ?? Buffer.alloc(0), this.options.limits.handshakeTimeoutMs);
    if (m.initialSn > snMask(state.snRes))
      throw new DecodeError(`OPEN initial SN ${m.initialSn} beyond the negotiated resolution (${snMask(state.snRes)})`);
    const peer: PeerInfo = {
      zid: state.zid,
      whatami: state.whatami,
      address: this.address,
      leaseMs: honouredLease(m.leaseMs),
      batchSize: state.batchSize,
      patch: state.patch,
      qos: state.qos,
    };
    const admitted = this.options.gate?.onOpen(m, state.nonce, peer);
    if (admitted !== undefined && "refused" in admitted) {
      this.close(CloseReason.GENERIC);
      return;
    }
    if (admitted?.user !== undefined) peer.user = admitted.user;
    this.batchSize = state.batchSize;
    // zenoh's modulo, not 2^bits: a zenoh-rust peer refuses an SN beyond it.
    this.snMask = snMask(state.snRes);
    this.snOut.fill(randomInt(0, this.snMask + 1));
    this.inbound = new InboundSequences(this.snMask, m.initialSn);
    this.peer = peer;
    const w = new BinaryWriter(32);
    w.u16(0);
    encodeOpen(w, {
      ack: true,
      leaseMs: this.options.limits.leaseMs,
      initialSn: this.snOut[0] as number,
      qos: state.qos,
      auth: admitted?.auth,
    });
    w.patchU16(0, w.length - BATCH_LEN);
    this.writeRaw(w.view());
    this.state = "open";
    this.handler = this.options.onOpen(this, this.peer);
  }

  // ---- handshake, initiating side -----------------------------------------------------------

  /**
   * What this side asked for in its INIT syn: the resolutions and batch size zenoh's own
   * defaults use, fragment markers (patch 1) and QoS lanes; the acceptor answers with what it
   * takes of them.
   */
  private sendInitSyn(whatami: WhatAmI, credentials: { user: string; password: string } | undefined): void {
    const w = new BinaryWriter(64);
    w.u16(0);
    encodeInitSyn(w, {
      whatami,
      zid: this.options.zid,
      snRes: 2,
      reqRes: 2,
      batchSize: Math.min(this.options.limits.batchSize, this.wire.mtu),
      patch: 1,
      qos: true,
      auth: credentials === undefined ? undefined : usrPwdClient.initSyn(),
    });
    w.patchU16(0, w.length - BATCH_LEN);
    this.writeRaw(w.view());
  }

  /** The acceptor's INIT ack: what it took, and its cookie, which the OPEN syn carries back. */
  private onInitAck(m: InitMsg): void {
    if (m.version !== PROTOCOL_VERSION) {
      this.logger.info({ link: this.id, version: m.version }, "zenoh INIT ack with another protocol version: closed");
      this.close(CloseReason.UNSUPPORTED);
      return;
    }
    // The acceptor may only lower what was asked (zenoh takes the smaller of both).
    if (m.snRes > 2 || m.reqRes > 2 || m.batchSize > this.batchSize || m.batchSize < 64 || m.patch > 1)
      throw new DecodeError("INIT ack beyond what the INIT syn offered");
    this.peer = {
      zid: m.zid,
      whatami: m.whatami,
      address: this.address,
      leaseMs: 0,
      batchSize: m.batchSize,
      patch: m.patch,
      qos: m.qos,
    };
    this.batchSize = m.batchSize;
    this.snMask = snMask(m.snRes);
    this.snOut.fill(randomInt(0, this.snMask + 1));
    // user/password (docs/zenoh-protocol.md, "Credentials"): the HMAC of the password under the
    // ack's nonce. A router that sent no nonce takes no credentials: none are sent.
    const creds = this.options.initiate?.credentials;
    const auth = creds === undefined ? undefined : usrPwdClient.openSyn(m.auth, creds.user, creds.password);
    const w = new BinaryWriter(128 + (m.cookie?.length ?? 0) + (creds?.user.length ?? 0) * 3);
    w.u16(0);
    encodeOpen(w, {
      ack: false,
      leaseMs: this.options.limits.leaseMs,
      initialSn: this.snOut[0] as number,
      cookie: m.cookie ?? Buffer.alloc(0),
      qos: m.qos,
      auth,
    });
    w.patchU16(0, w.length - BATCH_LEN);
    this.state = "open_wait";
    this.writeRaw(w.view());
  }

  /** The acceptor's OPEN ack: its lease and initial SN; the session is open. */
  private onOpenAck(m: OpenMsg): void {
    const peer = this.peer as PeerInfo;
    if (m.initialSn > this.snMask)
      throw new DecodeError(`OPEN ack initial SN ${m.initialSn} beyond the negotiated resolution (${this.snMask})`);
    peer.leaseMs = honouredLease(m.leaseMs);
    this.inbound = new InboundSequences(this.snMask, m.initialSn);
    this.state = "open";
    this.lastReceived = Date.now();
    this.handler = this.options.onOpen(this, peer);
  }

  // ---- output -------------------------------------------------------------------------------

  /**
   * Starts a network message in the batch of its priority lane and returns the writer to encode
   * it with; `endMessage` must follow. Returns undefined (the message is dropped) when
   * `droppable` and that lane's queue is past the drop bound, or when the transport is closed;
   * a lane past the queue limit closes the session. `express` sends it without waiting for the
   * end of the event-loop turn.
   */
  startMessage(droppable: boolean, priority = DEFAULT_PRIORITY, express = false): BinaryWriter | undefined {
    if (this.state !== "open") return undefined;
    const lane = this.laneOut(priority >= 0 && priority <= 7 ? priority : DEFAULT_PRIORITY);
    const queued = lane.queued;
    if (queued > this.options.limits.dropQueueBytes) {
      if (queued > this.options.limits.maxQueueBytes) {
        this.logger.warn(
          { link: this.id, zid: this.peer?.zid, queued, priority: lane.priority },
          "zenoh session closed: its reader is too slow (the queue limit)",
        );
        this.close(CloseReason.GENERIC);
        return undefined;
      }
      if (droppable) {
        this.dropped++;
        return undefined;
      }
    }
    const w = lane.w;
    if (!lane.open) {
      w.reset();
      w.bytes(HEADER_ROOM_BYTES);
      lane.open = true;
      this.openLanes++;
    }
    this.current = lane;
    this.currentExpress = express;
    lane.msgStart = w.pos;
    return w;
  }

  /** Ends the message `startMessage` began: it stays in its batch, or moves to its own, or is fragmented. */
  endMessage(): void {
    const lane = this.current as OutLane;
    const w = lane.w;
    if (w.pos - HEADER_ROOM + MAX_FRAME_HEADER > this.batchSize) {
      const msg = Buffer.from(w.view().subarray(lane.msgStart));
      w.truncate(lane.msgStart);
      if (lane.msgStart === HEADER_ROOM) {
        lane.open = false;
        this.openLanes--;
      } else this.closeBatch(lane);
      if (msg.length + MAX_FRAME_HEADER <= this.batchSize) {
        w.reset();
        w.bytes(HEADER_ROOM_BYTES);
        w.bytes(msg);
        lane.open = true;
        this.openLanes++;
      } else this.enqueue(lane, msg, true);
    }
    if (this.currentExpress) {
      this.closeBatch(lane);
      this.pump();
      return;
    }
    if (!this.flushScheduled) {
      this.flushScheduled = true;
      queueMicrotask(this.flushSoon);
    }
  }

  /** The output lane of a priority, made on first use. */
  private laneOut(priority: number): OutLane {
    let lane = this.lanesOut[priority];
    if (lane === undefined) {
      lane = { priority, w: new BinaryWriter(1024), open: false, msgStart: 0, queue: [], queued: 0 };
      this.lanesOut[priority] = lane;
    }
    return lane;
  }

  /**
   * Runs at the microtask checkpoint of the task that wrote the first message of the batch: the
   * end of this turn, before the next I/O callback (a `setImmediate` would wait for the check
   * phase, after every other ready socket: microseconds on each routed message's way).
   */
  private readonly flushSoon = (): void => {
    this.flushScheduled = false;
    this.flush();
  };

  /** Ends every lane's batch and sends what the wire takes, highest priority first. */
  flush(): void {
    if (this.openLanes > 0) for (const lane of this.lanesOut) if (lane?.open) this.closeBatch(lane);
    this.pump();
  }

  private closeBatch(lane: OutLane): void {
    if (!lane.open) return;
    lane.open = false;
    this.openLanes--;
    this.enqueue(lane, lane.w.finish(), false);
  }

  private enqueue(lane: OutLane, bytes: Buffer, fragment: boolean): void {
    lane.queue.push({ bytes, fragment });
    lane.queued += bytes.length;
    this.queuedUnits++;
  }

  /**
   * Hands queued batches to the wire while it has room (below `WIRE_HIGH_WATER`), the highest
   * priority lane first; what stays queued waits for the wire to drain. Sequence numbers are
   * given here, in the order the batches leave, so they follow one another on each lane.
   */
  private pump(): void {
    while (this.queuedUnits > 0 && this.state !== "closed" && this.wire.queuedBytes < WIRE_HIGH_WATER) {
      let lane: OutLane | undefined;
      for (const l of this.lanesOut)
        if (l !== undefined && l.queue.length > 0) {
          lane = l;
          break;
        }
      if (lane === undefined) return;
      const unit = lane.queue.shift() as Queued;
      lane.queued -= unit.bytes.length;
      this.queuedUnits--;
      if (unit.fragment) this.writeFragments(lane.priority, unit.bytes);
      else this.writeFrame(lane.priority, unit.bytes);
    }
  }

  /** The SN lane of a priority: its own with QoS agreed, else the one lane. */
  private snLane(priority: number): number {
    return this.peer?.qos ? priority : 0;
  }

  /** Writes a batch's length and FRAME header into the room kept before its messages, and sends it. */
  private writeFrame(priority: number, body: Buffer): void {
    const sn = this.snLane(priority);
    const h = this.header;
    h.reset();
    encodeFrameHeader(h, this.snOut[sn] as number, true, priority, this.peer?.qos ?? false);
    this.snOut[sn] = nextSn(this.snOut[sn] as number, this.snMask);
    const start = HEADER_ROOM - h.pos - BATCH_LEN;
    body.set(h.view(), start + BATCH_LEN);
    body.writeUInt16LE(body.length - start - BATCH_LEN, start);
    this.writeRaw(body.subarray(start));
  }

  private writeFragments(priority: number, msg: Buffer): void {
    const room = this.batchSize - FRAME_OVERHEAD;
    const lane = this.snLane(priority);
    for (let at = 0; at < msg.length; at += room) {
      const end = Math.min(msg.length, at + room);
      const w = new BinaryWriter(end - at + FRAME_OVERHEAD + BATCH_LEN);
      w.u16(0);
      encodeFragment(w, {
        sn: this.snOut[lane] as number,
        reliable: true,
        more: end < msg.length,
        first: at === 0 && (this.peer?.patch ?? 0) >= 1,
        payload: msg.subarray(at, end),
        priority,
        qos: this.peer?.qos ?? false,
      });
      this.snOut[lane] = nextSn(this.snOut[lane] as number, this.snMask);
      w.patchU16(0, w.length - BATCH_LEN);
      this.writeRaw(w.view());
    }
  }

  private writeRaw(bytes: Uint8Array): void {
    if (this.state === "closed") return;
    this.lastSent = Date.now();
    this.wire.send(bytes);
  }

  /** Sends CLOSE with `reason` and ends the connection. */
  close(reason: number = CloseReason.GENERIC): void {
    if (this.state === "closed") return;
    this.flush();
    const w = new BinaryWriter(8);
    w.u16(2);
    encodeClose(w, reason);
    this.writeRaw(w.finish());
    this.wire.end();
    this.closed();
  }

  private closed(): void {
    if (this.state === "closed") return;
    this.state = "closed";
    const h = this.handler;
    this.handler = undefined;
    h?.onClose();
    this.options.onClosed(this);
  }
}
