/**
 * Long work in slices: a query over many keys, or its consolidation and rendering, gives the
 * event loop back every few milliseconds so that other clients' requests are not held behind it.
 */
import { performance } from "node:perf_hooks";
import { setImmediate as nextTurn } from "node:timers/promises";

/** How long one slice may run before giving the event loop back, in milliseconds. */
export const SLICE_MS = 4;
/** Below this many items the work is done in one go: slicing would cost more than it spares. */
const SMALL = 2048;

/** A clock for one slice: `due()` is true once the slice has run its time (checked every 256 calls). */
export class Slice {
  #until = performance.now() + SLICE_MS;
  #calls = 0;

  /** True when the caller should `await next()` before going on. */
  due(): boolean {
    if ((++this.#calls & 255) !== 0) return false;
    return performance.now() >= this.#until;
  }

  /** True when the slice has run its time, read from the clock now (for callers that check rarely). */
  over(): boolean {
    return performance.now() >= this.#until;
  }

  /** Gives the event loop back, then starts a new slice. */
  async next(): Promise<void> {
    await nextTurn();
    this.#until = performance.now() + SLICE_MS;
  }
}

/**
 * A stable sort of `items` (in place, also returned), in slices: runs of `SMALL` items are
 * sorted with `Array.prototype.sort`, then merged pairwise, yielding between slices. Items
 * already in order (a storage that answers from an ordered index) cost one pass of comparisons.
 */
export async function sortInSlices<T>(items: T[], cmp: (a: T, b: T) => number): Promise<T[]> {
  const n = items.length;
  if (n <= SMALL) return items.sort(cmp);
  const slice = new Slice();
  let ordered = true;
  for (let i = 1; i < n && ordered; i++) {
    if (cmp(items[i - 1]!, items[i]!) > 0) ordered = false;
    else if (slice.due()) await slice.next();
  }
  if (ordered) return items;
  for (let lo = 0; lo < n; lo += SMALL) {
    const run = items.slice(lo, lo + SMALL).sort(cmp);
    for (let k = 0; k < run.length; k++) items[lo + k] = run[k]!;
    await slice.next();
  }
  let src = items;
  let dst = new Array<T>(n);
  for (let width = SMALL; width < n; width *= 2) {
    for (let lo = 0; lo < n; lo += 2 * width) {
      const mid = Math.min(lo + width, n);
      const hi = Math.min(lo + 2 * width, n);
      let i = lo;
      let j = mid;
      let k = lo;
      while (i < mid && j < hi) {
        // `<= 0` takes the left one first on ties: the merge is stable.
        dst[k++] = cmp(src[i]!, src[j]!) <= 0 ? src[i++]! : src[j++]!;
        if (slice.due()) await slice.next();
      }
      while (i < mid) dst[k++] = src[i++]!;
      while (j < hi) dst[k++] = src[j++]!;
    }
    [src, dst] = [dst, src];
  }
  if (src !== items) for (let k = 0; k < n; k++) items[k] = src[k]!;
  return items;
}
