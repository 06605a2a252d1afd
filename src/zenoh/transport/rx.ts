/**
 * A transport's input once its session is open (docs/zenoh-protocol.md, "Transport" and "Sequence
 * numbers"), as zenoh-pico's transport/unicast/rx.c: FRAMEs and FRAGMENTs checked against the
 * sequence numbers of their lane and channel, fragments reassembled within a size limit, and the
 * network messages handed to the session's `NetworkHandler`.
 */
import { Buffer } from "node:buffer";
import { BinaryReader, DecodeError } from "../../core/binary.js";
import type { Logger } from "../../core/log.js";
import { decodeNetwork, type NetworkMsg, pushScratch } from "../codec/network.js";
import { type FragmentMsg, type FrameHeader, isNetworkHeader } from "../codec/transport.js";
import type { InboundSequences, SnVerdict } from "./sequence.js";
import { DEFAULT_PRIORITY } from "./tx.js";

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

/** A fragmented message being reassembled on one lane and channel. */
interface Defrag {
  parts: Buffer[];
  bytes: number;
  /** Patch 0: the rest of a broken message is being skipped. */
  skipping: boolean;
}

/** The input side of one transport. */
export class TransportRx {
  /** The session's handler, once it is open. */
  handler: NetworkHandler | undefined;
  /** The SNs received, per lane and channel (set by the OPEN). */
  inbound: InboundSequences | undefined;
  /** QoS lanes were agreed. */
  qos = false;
  /** The patch agreed (≥ 1: fragment markers). */
  patch = 0;
  /** The peer's zid, for log lines. */
  zid: string | undefined;
  /** FRAMEs and FRAGMENTs dropped because their SN was stale (a repeat, or older). */
  staleDropped = 0;
  /** What every PUSH received is decoded into (the handler uses each before the next is read). */
  private readonly push = pushScratch();
  /** Fragments being reassembled, per lane and channel (`lane * 2 + (reliable ? 0 : 1)`), made on demand. */
  private readonly defrag: Array<Defrag | undefined> = [];

  constructor(
    private readonly linkId: number,
    private readonly logger: Logger,
    /** The largest network message reassembled from fragments (bytes). */
    private readonly maxFragmentedMessage: number,
  ) {}

  /**
   * A FRAME whose header `r` has just read: its network messages, up to the next transport
   * message, are delivered, or read past when its SN is stale. Returns false when the session
   * was closed.
   */
  frame(r: BinaryReader, f: FrameHeader): boolean {
    const verdict = this.sequence("FRAME", f.sn, f.reliable, f.priority);
    if (verdict === undefined) return false;
    // A stale FRAME's messages are read past, not delivered.
    while (!r.done && isNetworkHeader(r.peekU8())) {
      const msg = decodeNetwork(r, this.push);
      if (verdict !== "stale") this.deliver(msg);
    }
    return true;
  }

  /** A FRAGMENT: reassembled with the others of its message. Returns false when the session was closed. */
  fragment(f: FragmentMsg): boolean {
    const verdict = this.sequence("FRAGMENT", f.sn, f.reliable, f.priority);
    if (verdict === undefined) return false;
    if (verdict !== "stale") this.onFragment(f, verdict === "next");
    return true;
  }

  private deliver(msg: NetworkMsg): void {
    this.handler?.onMessage(msg);
  }

  /** The lane of a priority: its own with QoS agreed; without, only the default priority is valid. */
  private laneOf(priority: number): number {
    if (this.qos) return priority;
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
        { link: this.linkId, kind, priority, reliable, sn, expected },
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
    const markers = this.patch >= 1;
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
    if (total > this.maxFragmentedMessage) {
      throw new DecodeError(`fragmented message larger than ${this.maxFragmentedMessage} bytes (the limit)`);
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
        { link: this.linkId, zid: this.zid, sn: f.sn, held: d.bytes },
        "zenoh fragments with a broken SN chain discarded",
      );
    d.parts.length = 0;
    d.bytes = 0;
  }
}
