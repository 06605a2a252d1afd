/**
 * A transport's output (docs/zenoh-protocol.md, "Transport"), as zenoh-pico's transport/common/tx.c:
 * network messages written into one batch per priority lane, closed at the end of the event-loop
 * turn (or at once for an express message), queued for a slow reader with a drop bound and a
 * limit, and handed to the wire highest priority first, as FRAMEs or, when larger than a batch,
 * as FRAGMENTs, with the next sequence number of their lane.
 */
import { Buffer } from "node:buffer";
import { BinaryWriter } from "../../core/binary.js";
import { encodeFragment, encodeFrameHeader } from "../codec/transport.js";
import type { Wire } from "../links/wire.js";
import { nextSn } from "./sequence.js";

/** zenoh's default priority (`Data`), the one lane of a session without QoS. */
export const DEFAULT_PRIORITY = 5;

/** The batch length before each batch on a streamed link (bytes). */
export const BATCH_LEN = 2;

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

/** The queue bounds of a transport's output (bytes), from its `LinkLimits`. */
export interface TxLimits {
  /** Bytes queued to a slow reader beyond which droppable samples are dropped. */
  dropQueueBytes: number;
  /** Bytes queued to a slow reader beyond which the transport is closed. */
  maxQueueBytes: number;
}

/** The output side of one transport. */
export class TransportTx {
  /** Messages are taken (`startMessage`): the session is open. */
  accepting = false;
  /** Nothing more is written: the transport is closed. */
  ended = false;
  /** The batch size agreed (bytes). */
  batchSize: number;
  /** The SN modulo agreed, zenoh's, not 2^bits: a zenoh-rust peer refuses an SN beyond it. */
  snMask = 0x0fff_ffff;
  /** QoS lanes were agreed: each priority has its SN lane. */
  qos = false;
  /** The patch agreed (≥ 1: fragment markers). */
  patch = 0;
  /** When the last bytes were handed to the wire (ms). */
  lastSent = Date.now();
  /** Samples dropped because the reader was slow. */
  dropped = 0;
  /** The output lanes, by priority (0 highest), made on first use. */
  private readonly lanesOut: Array<OutLane | undefined> = [];
  /** Lanes with a batch being filled. */
  private openLanes = 0;
  /** Batches and fragmented messages waiting for the wire, in all lanes. */
  private queuedUnits = 0;
  /** Bytes in every lane's queue. */
  private queuedTotal = 0;
  /** The lane and express flag of the message being written. */
  private current: OutLane | undefined;
  private currentExpress = false;
  /** Where FRAME headers are encoded before they are copied in front of their batch. */
  private readonly header = new BinaryWriter(16);
  private flushScheduled = false;
  /** The next SN of each reliable lane (one lane, 0, without QoS). */
  private readonly snOut = [0, 0, 0, 0, 0, 0, 0, 0];

  /**
   * `overflow` is told when a lane is past `maxQueueBytes`, and closes the transport.
   */
  constructor(
    private readonly wire: Wire,
    private readonly limits: TxLimits,
    batchSize: number,
    private readonly overflow: (queued: number, priority: number) => void,
  ) {
    this.batchSize = batchSize;
  }

  /** Bytes waiting in the output lanes for a slow reader (not yet handed to the wire). */
  get queuedBytes(): number {
    return this.queuedTotal;
  }

  /** Nothing is being batched or waits for the wire. */
  get idle(): boolean {
    return this.openLanes === 0 && this.queuedUnits === 0;
  }

  /** Sets every lane's next SN (the initial SN this side announces). */
  startSn(sn: number): void {
    this.snOut.fill(sn);
  }

  /** The initial SN this side announces (every lane starts there). */
  get initialSn(): number {
    return this.snOut[0] as number;
  }

  /** See `ZenohLink.startMessage`. */
  startMessage(droppable: boolean, priority = DEFAULT_PRIORITY, express = false): BinaryWriter | undefined {
    if (!this.accepting) return undefined;
    const lane = this.laneOut(priority >= 0 && priority <= 7 ? priority : DEFAULT_PRIORITY);
    const queued = lane.queued;
    if (queued > this.limits.dropQueueBytes) {
      if (queued > this.limits.maxQueueBytes) {
        this.overflow(queued, lane.priority);
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
    this.queuedTotal += bytes.length;
    this.queuedUnits++;
  }

  /**
   * Hands queued batches to the wire while it has room (below `WIRE_HIGH_WATER`), the highest
   * priority lane first; what stays queued waits for the wire to drain. Sequence numbers are
   * given here, in the order the batches leave, so they follow one another on each lane.
   */
  pump(): void {
    this.handOut();
    this.pumped?.();
  }

  /** Told after each `pump`, when the lanes may hold less than before. */
  pumped: (() => void) | undefined;

  private handOut(): void {
    while (this.queuedUnits > 0 && !this.ended && this.wire.queuedBytes < WIRE_HIGH_WATER) {
      let lane: OutLane | undefined;
      for (const l of this.lanesOut)
        if (l !== undefined && l.queue.length > 0) {
          lane = l;
          break;
        }
      if (lane === undefined) return;
      const unit = lane.queue.shift() as Queued;
      lane.queued -= unit.bytes.length;
      this.queuedTotal -= unit.bytes.length;
      this.queuedUnits--;
      if (unit.fragment) this.writeFragments(lane.priority, unit.bytes);
      else this.writeFrame(lane.priority, unit.bytes);
    }
  }

  /** The SN lane of a priority: its own with QoS agreed, else the one lane. */
  private snLane(priority: number): number {
    return this.qos ? priority : 0;
  }

  /** Writes a batch's length and FRAME header into the room kept before its messages, and sends it. */
  private writeFrame(priority: number, body: Buffer): void {
    const sn = this.snLane(priority);
    const h = this.header;
    h.reset();
    encodeFrameHeader(h, this.snOut[sn] as number, true, priority, this.qos);
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
        first: at === 0 && this.patch >= 1,
        payload: msg.subarray(at, end),
        priority,
        qos: this.qos,
      });
      this.snOut[lane] = nextSn(this.snOut[lane] as number, this.snMask);
      w.patchU16(0, w.length - BATCH_LEN);
      this.writeRaw(w.view());
    }
  }

  /** Hands bytes to the wire as they are (a handshake message, KEEP_ALIVE, CLOSE, a batch). */
  writeRaw(bytes: Uint8Array): void {
    if (this.ended) return;
    this.lastSent = Date.now();
    this.wire.send(bytes);
  }
}
