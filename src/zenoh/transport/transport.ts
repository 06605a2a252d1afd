/**
 * One zenoh transport over one link, a `Wire` (TCP, TLS or UDP: src/zenoh/links/), as in
 * docs/zenoh-protocol.md: the INIT/OPEN handshake with a stateless cookie and a deadline,
 * the lease and KEEP_ALIVE, CLOSE, FRAME and FRAGMENT in and out. Network messages are handed
 * to a `NetworkHandler` once the session is open; what the handler sends goes out in one batch
 * per event-loop turn, written at the end of that turn (its microtask checkpoint). Malformed input closes this transport with a log line, never the router.
 *
 * This module holds the transport's state and reads its batches; the parts are beside it, on
 * zenoh-pico's lines: handshake.ts (accept.c), rx.ts (rx.c), tx.ts (common/tx.c), lease.ts
 * (lease.c) and sequence.ts.
 */
import type { Buffer } from "node:buffer";
import { BinaryReader, BinaryWriter, DecodeError } from "../../core/binary.js";
import { errorMessage } from "../../core/errors.js";
import type { Logger } from "../../core/log.js";
import { MandatoryExtensionError, type WhatAmI } from "../codec/core.js";
import { CloseReason, decodeTransport, encodeClose } from "../codec/transport.js";
import type { CookieJar } from "../cookie.js";
import type { Wire } from "../links/wire.js";
import {
  type Agreed,
  answerInitAck,
  answerInitSyn,
  answerOpenSyn,
  type Closing,
  type HandshakeContext,
  type HandshakeGate,
  initSyn,
  type PeerInfo,
  takeOpenAck,
} from "./handshake.js";
import { keepAliveBatch, keepAlivePeriod, leaseDue } from "./lease.js";
import { type NetworkHandler, TransportRx } from "./rx.js";
import { InboundSequences } from "./sequence.js";
import { DEFAULT_PRIORITY, TransportTx } from "./tx.js";

export type { HandshakeGate, PeerInfo, Refusal } from "./handshake.js";
export { honouredLease, PEER_LEASE_MAX_MS, PEER_LEASE_MIN_MS } from "./lease.js";
export type { NetworkHandler } from "./rx.js";

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

let linkIds = 0;

export class ZenohLink {
  readonly id = ++linkIds;
  readonly address: string;
  /** The link's locator as the admin space shows it (`udp/127.0.0.1:51000`). */
  readonly locator: string;
  peer: PeerInfo | undefined;
  private state: State = "init";
  private readonly options: LinkOptions;
  private readonly logger: Logger;
  private readonly openedAt = Date.now();
  private lastReceived = Date.now();
  /** Reading is paused (`pauseReading`). */
  private readPaused = false;
  private readonly handshake: HandshakeContext;
  private readonly rx: TransportRx;
  private readonly tx: TransportTx;
  /**
   * Told each time the output lanes were handed to the wire (at the end of a turn, and when the
   * wire drained): they may hold less than before.
   */
  onPumped: (() => void) | undefined;
  /** The reason of the CLOSE the peer sent, if it sent one. */
  closeReceived: number | undefined;

  constructor(
    readonly wire: Wire,
    options: LinkOptions,
  ) {
    this.options = options;
    this.logger = options.logger;
    const host = wire.remoteAddress.includes(":") ? `[${wire.remoteAddress}]` : wire.remoteAddress;
    this.address = `${host}:${wire.remotePort}`;
    this.locator = `${wire.protocol}/${this.address}`;
    const { limits } = options;
    this.handshake = {
      linkId: this.id,
      address: this.address,
      mtu: wire.mtu,
      zid: options.zid,
      cookies: options.cookies,
      logger: options.logger,
      gate: options.gate,
      limits,
    };
    this.rx = new TransportRx(this.id, this.logger, limits.maxFragmentedMessage);
    this.tx = new TransportTx(wire, limits, Math.min(limits.batchSize, wire.mtu), (queued, priority) => {
      this.logger.warn(
        { link: this.id, zid: this.peer?.zid, queued, priority },
        "zenoh session closed: its reader is too slow (the queue limit)",
      );
      this.close(CloseReason.GENERIC);
    });
    this.tx.pumped = () => this.onPumped?.();
    wire.bind({
      batch: (b) => this.onWireBatch(b),
      closed: () => this.closed(),
      drained: () => this.tx.pump(),
    });
    const initiate = options.initiate;
    if (initiate !== undefined) this.tx.writeRaw(initSyn(initiate.whatami, initiate.credentials, this.handshake));
  }

  /** True when this side opened the transport (it sent the INIT syn). */
  get initiating(): boolean {
    return this.options.initiate !== undefined;
  }

  /** True once the session is open and not yet closed. */
  get isOpen(): boolean {
    return this.state === "open";
  }

  /** Samples dropped because the reader was slow. */
  get dropped(): number {
    return this.tx.dropped;
  }

  /** FRAMEs and FRAGMENTs dropped because their SN was stale (a repeat, or older). */
  get staleDropped(): number {
    return this.rx.staleDropped;
  }

  /** Bytes waiting in the output lanes for a slow reader (not yet handed to the wire). */
  get queuedBytes(): number {
    return this.tx.queuedBytes;
  }

  /**
   * How often `tick` must run for this link (ms): a quarter of the shorter of the two leases once
   * the session is open (its KEEP_ALIVEs, its expiry), a quarter of the handshake deadline before.
   */
  get tickPeriodMs(): number {
    if (this.peer === undefined || this.state !== "open") return this.options.limits.handshakeTimeoutMs / 4;
    return keepAlivePeriod(this.peer.leaseMs, this.options.limits.leaseMs);
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
    const due = leaseDue(now, {
      lastReceived: this.lastReceived,
      lastSent: this.tx.lastSent,
      readPaused: this.readPaused,
      peerLeaseMs: peer.leaseMs,
      ownLeaseMs: this.options.limits.leaseMs,
      idle: this.tx.idle,
    });
    if (due === "expired") {
      this.logger.info(
        { link: this.id, zid: peer.zid, leaseMs: peer.leaseMs, silentMs: now - this.lastReceived },
        "zenoh session lease expired: closed",
      );
      this.close(CloseReason.EXPIRED);
    } else if (due === "keepalive") this.tx.writeRaw(keepAliveBatch());
  }

  // ---- input --------------------------------------------------------------------------------

  private onWireBatch(batch: Buffer): void {
    if (this.state === "closed") return;
    this.lastReceived = Date.now();
    try {
      // A datagram is one batch: one larger than the batch size agreed is malformed.
      if (!this.wire.streamed && batch.length > this.tx.batchSize)
        throw new DecodeError(`datagram of ${batch.length} bytes, larger than the batch size (${this.tx.batchSize})`);
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
            const offered = this.tx.batchSize;
            const creds = this.options.initiate?.credentials;
            if (this.agreed(answerInitAck(t.msg, offered, creds, this.handshake))) this.state = "open_wait";
            break;
          }
          // On UDP an INIT ack may be lost: a repeated INIT syn is answered again (the cookie is stateless).
          if (t.msg.ack || !(this.state === "init" || (this.state === "open_wait" && !this.wire.streamed)))
            throw new DecodeError("unexpected INIT");
          this.onInitSyn(answerInitSyn(t.msg, this.handshake));
          break;
        case "open":
          if (this.state !== "open_wait" || t.msg.ack !== this.initiating) throw new DecodeError("unexpected OPEN");
          if (this.initiating) {
            const peer = this.peer as PeerInfo;
            takeOpenAck(t.msg, peer, this.tx.snMask);
            this.rx.inbound = new InboundSequences(this.tx.snMask, t.msg.initialSn);
            this.lastReceived = Date.now();
            this.open(peer);
          } else {
            const step = answerOpenSyn(t.msg, this.handshake);
            if (!this.agreed(step)) break;
            this.rx.inbound = new InboundSequences(step.snMask, t.msg.initialSn);
            this.open(step.peer);
          }
          break;
        case "frame":
          if (this.state !== "open") throw new DecodeError("FRAME before the session is open");
          if (!this.rx.frame(r, t.frame)) return;
          break;
        case "fragment":
          if (this.state !== "open") throw new DecodeError("FRAGMENT before the session is open");
          if (!this.rx.fragment(t.fragment)) return;
          break;
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

  // ---- handshake ----------------------------------------------------------------------------

  private onInitSyn(step: { reply: Uint8Array } | Closing): void {
    if ("close" in step) {
      this.close(step.close);
      return;
    }
    this.state = "open_wait";
    this.tx.writeRaw(step.reply);
  }

  /**
   * A handshake step that agreed the session's parameters (the acceptor's OPEN syn, the
   * initiator's INIT ack): they are taken and the answer sent. Returns false when the step
   * refused: the transport is closed.
   */
  private agreed(step: Agreed | Closing): step is Agreed {
    if ("close" in step) {
      this.close(step.close);
      return false;
    }
    const { peer, batchSize, snMask, initialSn, reply } = step;
    this.peer = peer;
    this.tx.batchSize = batchSize;
    this.tx.snMask = snMask;
    this.tx.startSn(initialSn);
    this.tx.qos = this.rx.qos = peer.qos;
    this.tx.patch = this.rx.patch = peer.patch;
    this.rx.zid = peer.zid;
    this.tx.writeRaw(reply);
    return true;
  }

  /** The session is open: its messages go to the handler `onOpen` returns. */
  private open(peer: PeerInfo): void {
    this.state = "open";
    this.tx.accepting = true;
    this.rx.handler = this.options.onOpen(this, peer);
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
    return this.tx.startMessage(droppable, priority, express);
  }

  /** Ends the message `startMessage` began: it stays in its batch, or moves to its own, or is fragmented. */
  endMessage(): void {
    this.tx.endMessage();
  }

  /** Ends every lane's batch and sends what the wire takes, highest priority first. */
  flush(): void {
    this.tx.flush();
  }

  /** Sends CLOSE with `reason` and ends the connection. */
  close(reason: number = CloseReason.GENERIC): void {
    if (this.state === "closed") return;
    this.tx.flush();
    const w = new BinaryWriter(8);
    w.u16(2);
    encodeClose(w, reason);
    this.tx.writeRaw(w.finish());
    this.wire.end();
    this.closed();
  }

  private closed(): void {
    if (this.state === "closed") return;
    this.state = "closed";
    this.tx.accepting = false;
    this.tx.ended = true;
    const h = this.rx.handler;
    this.rx.handler = undefined;
    h?.onClose();
    this.options.onClosed(this);
  }
}
