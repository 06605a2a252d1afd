/**
 * One zenoh transport over one link, a `Wire` (TCP, TLS or UDP: src/zenoh/links/), as in
 * docs/zenoh-protocol.md: the INIT/OPEN handshake with a stateless cookie and a deadline,
 * the lease and KEEP_ALIVE, CLOSE, FRAME and FRAGMENT in and out. Network messages are handed
 * to a `NetworkHandler` once the session is open; what the handler sends goes out in one batch
 * per event-loop turn. Malformed input closes this transport with a log line, never the router.
 */
import { Buffer } from "node:buffer";
import { randomInt } from "node:crypto";
import { BinaryReader, BinaryWriter, DecodeError } from "../core/binary.js";
import { errorMessage } from "../core/errors.js";
import type { Logger } from "../core/log.js";
import { MandatoryExtensionError, PROTOCOL_VERSION, type WhatAmI } from "./codec/core.js";
import { decodeNetwork, type NetworkMsg } from "./codec/network.js";
import {
  CloseReason,
  decodeTransport,
  encodeClose,
  encodeFragment,
  encodeFrameHeader,
  encodeInitAck,
  encodeKeepAlive,
  encodeOpen,
  type FragmentMsg,
  type InitMsg,
  isNetworkHeader,
  type OpenMsg,
} from "./codec/transport.js";
import type { CookieJar } from "./cookie.js";
import type { Wire } from "./links/wire.js";

/** What a transport does with the network messages of an open session. */
export interface NetworkHandler {
  onMessage(msg: NetworkMsg): void;
  /** The transport closed (either side); release everything the session holds. */
  onClose(): void;
}

/** The limits of one transport. */
export interface LinkLimits {
  /** Time allowed from connect to OPEN ack (ms). */
  handshakeTimeoutMs: number;
  /** The router's lease: a transport silent this long is closed (ms). */
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
  leaseMs: number;
  batchSize: number;
  patch: number;
  qos: boolean;
}

export interface LinkOptions {
  zid: string;
  cookies: CookieJar;
  logger: Logger;
  limits: LinkLimits;
  /** Called when the handshake completes; returns the handler of the session's network messages. */
  onOpen(link: ZenohLink, peer: PeerInfo): NetworkHandler;
  onClosed(link: ZenohLink): void;
}

type State = "init" | "open_wait" | "open" | "closed";

/** The FRAME/FRAGMENT header room kept in each batch (bytes). */
const FRAME_OVERHEAD = 16;
const BATCH_LEN = 2;
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
  private lastSent = Date.now();
  /** The batch being filled: its length prefix, a FRAME header, then network messages. */
  private readonly out = new BinaryWriter(1024);
  private batchOpen = false;
  private flushScheduled = false;
  private snReliable = 0;
  private snMask = 0xffff_ffff;
  private batchSize = 65_535;
  private msgStart = 0;
  /** Fragments being reassembled, per channel (reliable, best effort). */
  private readonly fragments: [Buffer[], Buffer[]] = [[], []];
  private readonly fragmentBytes = [0, 0];
  /** Samples dropped because the reader was slow. */
  dropped = 0;

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
    wire.bind({ batch: (b) => this.onWireBatch(b), closed: () => this.closed() });
  }

  /** True once the session is open and not yet closed. */
  get isOpen(): boolean {
    return this.state === "open";
  }

  /** Lease and deadline checks, called about once a second by the server. */
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
    if (now - this.lastReceived > this.options.limits.leaseMs) {
      this.logger.info({ link: this.id, zid: this.peer?.zid }, "zenoh session lease expired: closed");
      this.close(CloseReason.EXPIRED);
      return;
    }
    // Keep the peer's lease alive: something at least four times per lease, as zenoh does.
    const keepAliveMs = Math.min(this.peer?.leaseMs ?? 10_000, this.options.limits.leaseMs) / 4;
    if (now - this.lastSent >= keepAliveMs && !this.batchOpen) {
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
          // On UDP an INIT ack may be lost: a repeated INIT syn is answered again (the cookie is stateless).
          if (t.msg.ack || !(this.state === "init" || (this.state === "open_wait" && !this.wire.streamed)))
            throw new DecodeError("unexpected INIT");
          this.onInitSyn(t.msg);
          break;
        case "open":
          if (this.state !== "open_wait" || t.msg.ack) throw new DecodeError("unexpected OPEN");
          this.onOpenSyn(t.msg);
          break;
        case "frame":
          if (this.state !== "open") throw new DecodeError("FRAME before the session is open");
          while (!r.done && isNetworkHeader(r.peekU8())) this.deliver(decodeNetwork(r));
          break;
        case "fragment":
          if (this.state !== "open") throw new DecodeError("FRAGMENT before the session is open");
          this.onFragment(t.fragment);
          break;
        case "keepalive":
        case "oam":
          break;
        case "close":
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

  private onFragment(f: FragmentMsg): void {
    const ch = f.reliable ? 0 : 1;
    const parts = this.fragments[ch];
    if (f.drop) {
      parts.length = 0;
      this.fragmentBytes[ch] = 0;
      return;
    }
    if (f.first && parts.length > 0) {
      // A new message starts: what was held was never finished (patch ≥ 1 marks first fragments).
      parts.length = 0;
      this.fragmentBytes[ch] = 0;
    }
    const total = (this.fragmentBytes[ch] as number) + f.payload.length;
    if (total > this.options.limits.maxFragmentedMessage) {
      throw new DecodeError(
        `fragmented message larger than ${this.options.limits.maxFragmentedMessage} bytes (the limit)`,
      );
    }
    parts.push(Buffer.from(f.payload));
    this.fragmentBytes[ch] = total;
    if (f.more) return;
    const whole = Buffer.concat(parts, total);
    parts.length = 0;
    this.fragmentBytes[ch] = 0;
    const r = new BinaryReader(whole);
    while (!r.done) this.deliver(decodeNetwork(r));
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
    });
    w.patchU16(0, w.length - BATCH_LEN);
    this.state = "open_wait";
    this.writeRaw(w.view());
  }

  private onOpenSyn(m: OpenMsg): void {
    const state = this.options.cookies.open(m.cookie ?? Buffer.alloc(0), this.options.limits.handshakeTimeoutMs);
    this.batchSize = state.batchSize;
    this.snMask = state.snRes >= 3 ? Number.MAX_SAFE_INTEGER : 2 ** (8 << state.snRes) - 1;
    this.snReliable = randomInt(0, Math.min(this.snMask, 0xffff_ffff));
    this.peer = {
      zid: state.zid,
      whatami: state.whatami,
      address: this.address,
      leaseMs: m.leaseMs,
      batchSize: state.batchSize,
      patch: state.patch,
      qos: state.qos,
    };
    const w = new BinaryWriter(32);
    w.u16(0);
    encodeOpen(w, { ack: true, leaseMs: this.options.limits.leaseMs, initialSn: this.snReliable, qos: state.qos });
    w.patchU16(0, w.length - BATCH_LEN);
    this.writeRaw(w.view());
    this.state = "open";
    this.handler = this.options.onOpen(this, this.peer);
  }

  // ---- output -------------------------------------------------------------------------------

  /**
   * Starts a network message in the current batch and returns the writer to encode it with;
   * `endMessage` must follow. Returns undefined (the message is dropped) when `droppable` and the
   * reader is slow, or when the transport is closed.
   */
  startMessage(droppable: boolean): BinaryWriter | undefined {
    if (this.state !== "open") return undefined;
    const queued = this.wire.queuedBytes;
    if (queued > this.options.limits.dropQueueBytes) {
      if (queued > this.options.limits.maxQueueBytes) {
        this.logger.warn(
          { link: this.id, zid: this.peer?.zid, queued },
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
    const w = this.out;
    if (!this.batchOpen) {
      w.reset();
      w.u16(0);
      encodeFrameHeader(w, this.snReliable, true);
      this.frameHeaderEnd = w.pos;
      this.snReliable = this.snReliable >= this.snMask ? 0 : this.snReliable + 1;
      this.batchOpen = true;
    }
    this.msgStart = w.pos;
    return w;
  }

  /** Ends the message `startMessage` began: it stays in the batch, or moves to its own, or is fragmented. */
  endMessage(): void {
    const w = this.out;
    if (w.pos - BATCH_LEN > this.batchSize) {
      const msg = Buffer.from(w.view().subarray(this.msgStart));
      w.pos = this.msgStart;
      if (this.onlyHeaderInBatch()) {
        // Nothing else in this batch: give its sequence number back and send the message alone.
        this.batchOpen = false;
        this.snReliable = this.snReliable === 0 ? this.snMask : this.snReliable - 1;
      } else this.flush();
      if (msg.length + FRAME_OVERHEAD <= this.batchSize) {
        const again = this.startMessage(false);
        again?.bytes(msg);
      } else {
        this.fragment(msg);
        return;
      }
    }
    if (!this.flushScheduled) {
      this.flushScheduled = true;
      setImmediate(this.flushSoon);
    }
  }

  /** Where the current batch's FRAME header ends (its first message starts). */
  private frameHeaderEnd = 0;
  private onlyHeaderInBatch(): boolean {
    return this.msgStart === this.frameHeaderEnd;
  }

  private readonly flushSoon = (): void => {
    this.flushScheduled = false;
    this.flush();
  };

  /** Sends the current batch, if any. */
  flush(): void {
    if (!this.batchOpen) return;
    this.batchOpen = false;
    const w = this.out;
    w.patchU16(0, w.length - BATCH_LEN);
    this.writeRaw(w.finish());
  }

  private fragment(msg: Buffer): void {
    this.flush();
    const room = this.batchSize - FRAME_OVERHEAD;
    const w = new BinaryWriter(Math.min(this.batchSize + BATCH_LEN, 65_537));
    for (let at = 0; at < msg.length; at += room) {
      const end = Math.min(msg.length, at + room);
      w.reset();
      w.u16(0);
      encodeFragment(w, {
        sn: this.snReliable,
        reliable: true,
        more: end < msg.length,
        first: at === 0 && (this.peer?.patch ?? 0) >= 1,
        payload: msg.subarray(at, end),
      });
      this.snReliable = this.snReliable >= this.snMask ? 0 : this.snReliable + 1;
      w.patchU16(0, w.length - BATCH_LEN);
      this.writeRaw(w.finish());
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
