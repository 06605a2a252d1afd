/**
 * A min-heap of deadlines over small integer ids (a memory storage's record slots), held in typed
 * arrays: 16 bytes per id (its deadline, its place in the heap, the heap's entry), no JS object
 * per entry, so a million keys with a TTL cost 16 MB and no garbage collection work. A deadline
 * changed in place moves its entry (no stale copies are left behind to skip later).
 */

/** Ids with no deadline have 0 here. */
const NONE = 0;

export class ExpiryHeap {
  /** Deadline by id (Unix ms; 0: none). */
  #deadline = new Float64Array(0);
  /** Place of each id in `#heap`, plus one (0: not in the heap). */
  #pos = new Uint32Array(0);
  /** The heap: ids, earliest deadline first. */
  #heap: Uint32Array = new Uint32Array(0);
  #size = 0;

  /** Ids in the heap. */
  get size(): number {
    return this.#size;
  }

  /** Bytes of the arrays (for the memory benchmark). */
  get bytes(): number {
    return this.#deadline.byteLength + this.#pos.byteLength + this.#heap.byteLength;
  }

  /** The deadline of `id` (0: none). */
  deadline(id: number): number {
    return id < this.#deadline.length ? this.#deadline[id]! : NONE;
  }

  /** The earliest deadline held, or undefined when none. */
  peekDeadline(): number | undefined {
    return this.#size === 0 ? undefined : this.#deadline[this.#heap[0]!];
  }

  /** The id with the earliest deadline (call only when `size > 0`). */
  peek(): number {
    return this.#heap[0]!;
  }

  /** Sets (or moves) the deadline of `id`; 0 removes it. */
  set(id: number, deadline: number): void {
    if (deadline === NONE) {
      this.remove(id);
      return;
    }
    this.#ensure(id);
    const p = this.#pos[id]!;
    const old = this.#deadline[id]!;
    this.#deadline[id] = deadline;
    if (p === 0) {
      if (this.#size === this.#heap.length) this.#heap = grown(this.#heap, this.#size + 1);
      this.#heap[this.#size] = id;
      this.#pos[id] = ++this.#size;
      this.#up(this.#size - 1);
    } else if (deadline < old) this.#up(p - 1);
    else this.#down(p - 1);
  }

  /** Removes `id`'s deadline (nothing when it has none). */
  remove(id: number): void {
    if (id >= this.#pos.length) return;
    const p = this.#pos[id]!;
    this.#deadline[id] = NONE;
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
    this.#deadline = new Float64Array(0);
    this.#pos = new Uint32Array(0);
    this.#heap = new Uint32Array(0);
    this.#size = 0;
  }

  #ensure(id: number): void {
    if (id < this.#deadline.length) return;
    const cap = Math.max(64, Math.ceil((id + 1) * 1.5));
    const d = new Float64Array(cap);
    d.set(this.#deadline);
    this.#deadline = d;
    const p = new Uint32Array(cap);
    p.set(this.#pos);
    this.#pos = p;
  }

  #less(a: number, b: number): boolean {
    return this.#deadline[this.#heap[a]!]! < this.#deadline[this.#heap[b]!]!;
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
