/**
 * Drops the second copy of a sample that reached this router twice (through two overlapping
 * subscriptions, e.g. `zest.k.a.*.c` and `zest.k.a.b.*`): each publisher numbers its samples,
 * and a number not above the highest seen from that publisher's epoch is a copy. A new epoch
 * (the publisher restarted) starts over. See docs/fabric-protocol.md.
 */
import type { SampleOrigin } from "./envelope.js";

export class DuplicateFilter {
  private readonly last = new Map<string, { epoch: number; seq: number }>();

  /** True when the sample is new; false for a copy already seen. */
  accept(origin: SampleOrigin): boolean {
    const seen = this.last.get(origin.zid);
    if (seen === undefined || seen.epoch !== origin.epoch) {
      this.last.set(origin.zid, { epoch: origin.epoch, seq: origin.seq });
      return true;
    }
    if (origin.seq <= seen.seq) return false;
    seen.seq = origin.seq;
    return true;
  }

  /** Forgets a publisher (it left or went silent). */
  forget(zid: string): void {
    this.last.delete(zid);
  }
}
