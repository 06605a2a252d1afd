/**
 * Transport sequence numbers (docs/zenoh-protocol.md, "Sequence numbers"): their modulo for a
 * negotiated resolution, as zenoh computes it, and the check of incoming FRAMEs and FRAGMENTs,
 * per priority lane and channel (reliable, best effort).
 */

/**
 * The largest sequence number of a resolution (0: 8 bits … 3: 64 bits). zenoh keeps its SNs a
 * few bits short of the resolution, so that they encode in at most that many bytes:
 * 2^7 - 1, 2^14 - 1, 2^28 - 1 (zenoh's `get_mask`, pico's `_z_sn_max`). 64 bits is never agreed
 * here: the router answers at most 32.
 */
export function snMask(resolution: number): number {
  return resolution <= 0 ? 0x7f : resolution === 1 ? 0x3fff : 0x0fff_ffff;
}

/** The SN after `sn`. */
export function nextSn(sn: number, mask: number): number {
  return sn >= mask ? 0 : sn + 1;
}

/** True when `sn` comes after `last`: less than half the modulo ahead of it (zenoh's `precedes`). */
export function precedes(last: number, sn: number, mask: number): boolean {
  const gap = (sn - last) & mask;
  return gap !== 0 && gap <= mask >>> 1;
}

/** What the check makes of an incoming SN. */
export type SnVerdict = "next" | "later" | "stale";

/**
 * The last SN received on each lane (8 priorities) and channel, all starting just before the
 * initial SN the peer gave in its OPEN.
 */
export class InboundSequences {
  private readonly last: number[];

  constructor(
    readonly mask: number,
    initialSn: number,
  ) {
    const before = initialSn === 0 ? mask : initialSn - 1;
    this.last = new Array<number>(16).fill(before);
  }

  /** The SN expected next on a lane and channel. */
  expected(lane: number, reliable: boolean): number {
    return nextSn(this.last[lane * 2 + (reliable ? 0 : 1)]!, this.mask);
  }

  /**
   * Checks `sn` on a lane and channel: `next` (the one expected), `later` (a gap: some were
   * lost), or `stale` (a repeat or older). `next` and `later` move the lane on.
   */
  check(lane: number, reliable: boolean, sn: number): SnVerdict {
    const i = lane * 2 + (reliable ? 0 : 1);
    const last = this.last[i]!;
    if (sn === nextSn(last, this.mask)) {
      this.last[i] = sn;
      return "next";
    }
    if (precedes(last, sn, this.mask)) {
      this.last[i] = sn;
      return "later";
    }
    return "stale";
  }
}
