/**
 * A min-heap of deadlines over small integer ids (a memory storage's record slots), held in typed
 * arrays: 12 bytes per id (its deadline, its place in the heap, the heap's entry), no JS object
 * per entry, so a million keys with a TTL cost about 12 MB and no garbage collection work. A
 * deadline changed in place moves its entry (no stale copies are left behind to skip later).
 *
 * Deadlines are whole milliseconds (a fractional one is rounded up, so it never fires early),
 * kept as 32-bit offsets from a base that stays at least `MARGIN` behind the clock: a deadline
 * before the base is long past, and is kept as "due at once". A deadline more than about 49 days
 * past the base (a TTL of months) sorts after every other and keeps its exact value in a side
 * map until the base moves up to it. The base moves up (an O(n) pass) by `SHIFT_MIN` at least,
 * so at most once in 12 days. docs/ttl-and-leases.md, "Memory".
 */

/** Offset of ids with no deadline. */
const NONE = 0;
/** Offset of ids whose deadline is beyond the range (exact value in `#far`). */
const FAR = 0xffffffff;
/** Largest offset held in the array. */
const MAX_REL = 0xfffffffe;
/** Room the base keeps behind the clock and the earliest deadline (4.6 h: writes a bit in the past fit). */
const MARGIN = 2 ** 24;
/** Smallest move of the base (12 days): moves are O(n), so rare. */
const SHIFT_MIN = 2 ** 30;

export class ExpiryHeap {
  /** Deadline of each id as an offset from `#base` (NONE: none; FAR: in `#far`). */
  #rel = new Uint32Array(0);
  /** Place of each id in `#heap`, plus one (0: not in the heap). */
  #pos = new Uint32Array(0);
  /** The heap: ids, earliest deadline first. */
  #heap: Uint32Array = new Uint32Array(0);
  #size = 0;
  /** Unix ms that offset 0 stands for; NaN until the first deadline. */
  #base = Number.NaN;
  /** Exact deadlines of the ids whose offset is FAR. */
  readonly #far = new Map<number, number>();

  /** Ids in the heap. */
  get size(): number {
    return this.#size;
  }

  /** Bytes of the arrays (for the memory benchmark). */
  get bytes(): number {
    return this.#rel.byteLength + this.#pos.byteLength + this.#heap.byteLength;
  }

  /** The deadline of `id` (0: none), in whole Unix ms. */
  deadline(id: number): number {
    if (id >= this.#rel.length) return NONE;
    const r = this.#rel[id]!;
    return r === NONE ? NONE : r === FAR ? this.#far.get(id)! : this.#base + r;
  }

  /**
   * The earliest deadline held, or undefined when none. When every deadline held is beyond the
   * range, a time before which none is due (the range's end) instead: still later than now.
   */
  peekDeadline(): number | undefined {
    if (this.#size === 0) return undefined;
    this.#settleTop();
    const top = this.#heap[0]!;
    return this.#rel[top] === FAR ? this.#base + FAR : this.deadline(top);
  }

  /** The id with the earliest deadline (call only when `size > 0`). */
  peek(): number {
    this.#settleTop();
    return this.#heap[0]!;
  }

  /** Sets (or moves) the deadline of `id` (Unix ms); 0 removes it. */
  set(id: number, deadline: number): void {
    if (deadline === NONE) {
      this.remove(id);
      return;
    }
    const d = Math.ceil(deadline);
    if (Number.isNaN(this.#base)) this.#base = Math.min(d, Date.now()) - MARGIN;
    let rel = d - this.#base;
    // Before the base: long past (the base is behind the clock), due at once.
    if (rel < 1) rel = 1;
    else if (rel > MAX_REL && this.#size > 0 && this.#moveBase(d)) rel = Math.max(1, d - this.#base);
    this.#ensure(id);
    const old = this.#rel[id]!;
    if (rel > MAX_REL) {
      this.#far.set(id, d);
      rel = FAR;
    } else if (old === FAR) this.#far.delete(id);
    this.#rel[id] = rel;
    const p = this.#pos[id]!;
    if (p === 0) {
      if (this.#size === this.#heap.length) this.#heap = grown(this.#heap, this.#size + 1);
      this.#heap[this.#size] = id;
      this.#pos[id] = ++this.#size;
      this.#up(this.#size - 1);
    } else if (rel < old) this.#up(p - 1);
    else this.#down(p - 1);
  }

  /**
   * Takes the id with the earliest deadline, which must be due, out of the heap (call only when
   * `size > 0`). It still reads as expired (`deadline` gives a time long past) until `set` or
   * `remove`, so that reads keep hiding the expired value until the delete its expiry routes
   * has landed.
   */
  pop(): number {
    const id = this.peek();
    this.#pos[id] = 0;
    if (this.#rel[id] === FAR) this.#far.delete(id);
    // Offset 1 is before the clock whatever the base becomes (it stays behind the clock).
    this.#rel[id] = 1;
    const last = this.#heap[--this.#size]!;
    if (this.#size > 0) {
      this.#heap[0] = last;
      this.#pos[last] = 1;
      this.#down(0);
    }
    return id;
  }

  /** Removes `id`'s deadline (nothing when it has none). */
  remove(id: number): void {
    if (id >= this.#pos.length) return;
    const p = this.#pos[id]!;
    if (this.#rel[id] === FAR) this.#far.delete(id);
    this.#rel[id] = NONE;
    if (p === 0) return;
    this.#pos[id] = 0;
    const last = this.#heap[--this.#size]!;
    if (p - 1 === this.#size) return;
    this.#heap[p - 1] = last;
    this.#pos[last] = p;
    this.#down(p - 1);
    this.#up(this.#pos[last]! - 1);
  }

  /** Forgets everything. */
  clear(): void {
    this.#rel = new Uint32Array(0);
    this.#pos = new Uint32Array(0);
    this.#heap = new Uint32Array(0);
    this.#size = 0;
    this.#base = Number.NaN;
    this.#far.clear();
  }

  /** The earliest deadline held (size > 0). */
  #minDeadline(): number {
    const top = this.#heap[0]!;
    if (this.#rel[top] !== FAR) return this.#base + this.#rel[top]!;
    let min = Number.POSITIVE_INFINITY;
    for (const d of this.#far.values()) if (d < min) min = d;
    return min;
  }

  /** When every deadline held is beyond the range, moves the base up if it may. */
  #settleTop(): void {
    if (this.#rel[this.#heap[0]!] === FAR) this.#moveBase(Number.POSITIVE_INFINITY);
  }

  /**
   * Moves the base up towards the clock and the earliest deadline held (and `d`), when that is a
   * move of `SHIFT_MIN` or more; true when it moved.
   */
  #moveBase(d: number): boolean {
    const now = Date.now();
    if (now - MARGIN - this.#base < SHIFT_MIN) return false;
    const base = Math.min(this.#minDeadline(), d, now) - MARGIN;
    if (base - this.#base < SHIFT_MIN) return false;
    this.#shift(base);
    return true;
  }

  /** Makes `base` offset 0: every offset is computed again, and the heap rebuilt (O(n)). */
  #shift(base: number): void {
    const rel = this.#rel;
    const heap = this.#heap;
    const n = this.#size;
    for (let i = 0; i < n; i++) {
      const id = heap[i]!;
      const d = this.deadline(id);
      const r = d - base;
      if (r > MAX_REL) {
        this.#far.set(id, d);
        rel[id] = FAR;
      } else {
        if (rel[id] === FAR) this.#far.delete(id);
        // A deadline below the new base is long past: due at once, whatever its exact value.
        rel[id] = Math.max(1, r);
      }
    }
    this.#base = base;
    for (let i = (n >> 1) - 1; i >= 0; i--) this.#down(i);
  }

  #ensure(id: number): void {
    if (id < this.#rel.length) return;
    const cap = Math.max(64, Math.ceil((id + 1) * 1.5));
    const r = new Uint32Array(cap);
    r.set(this.#rel);
    this.#rel = r;
    const p = new Uint32Array(cap);
    p.set(this.#pos);
    this.#pos = p;
  }

  #less(a: number, b: number): boolean {
    return this.#rel[this.#heap[a]!]! < this.#rel[this.#heap[b]!]!;
  }

  #swap(a: number, b: number): void {
    const h = this.#heap;
    const x = h[a]!;
    const y = h[b]!;
    h[a] = y;
    h[b] = x;
    this.#pos[y] = a + 1;
    this.#pos[x] = b + 1;
  }

  #up(i: number): void {
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!this.#less(i, parent)) return;
      this.#swap(i, parent);
      i = parent;
    }
  }

  #down(i: number): void {
    const n = this.#size;
    for (;;) {
      const l = 2 * i + 1;
      if (l >= n) return;
      const r = l + 1;
      const c = r < n && this.#less(r, l) ? r : l;
      if (!this.#less(c, i)) return;
      this.#swap(i, c);
      i = c;
    }
  }
}

function grown(a: Uint32Array, need: number): Uint32Array {
  const b = new Uint32Array(Math.max(64, Math.ceil(need * 1.5)));
  b.set(a);
  return b;
}
