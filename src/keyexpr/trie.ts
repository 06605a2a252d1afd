/**
 * The routing index: a chunk trie of declared key expressions (docs/key-expressions.md §3).
 *
 * Each node keeps its literal children in a Map keyed by chunk and its wild children (`*`,
 * `**`, non-verbatim chunks holding `$*`) in a short list. A query is simulated as an NFA over
 * query chunk positions while walking the trie depth-first, as zenoh's KeTrees do: each visited
 * node carries the sorted set of query positions still alive there, and a child is entered only
 * if some position survives. For a literal query chunk the literal child is found by one Map
 * lookup, so a concrete key costs O(depth × wild children on the path), whatever the number of
 * declarations.
 */
import { chunkIncludes, chunkIntersects } from "./chunk.js";
import { isVerbatimChunk, validate } from "./validate.js";

/** Chunk classes, for both declared chunks and query chunks. */
const LITERAL = 0; // matched by lookup; includes verbatim chunks even when they hold `$*`
const STAR = 1; // `*`
const DOUBLE = 2; // `**`
const GLOB = 3; // non-verbatim chunk holding `$*`

function classify(chunk: string): number {
  if (chunk === "**") return DOUBLE;
  if (chunk === "*") return STAR;
  if (isVerbatimChunk(chunk) || !chunk.includes("$")) return LITERAL;
  return GLOB;
}

class Node<T> {
  readonly chunk: string;
  readonly kind: number;
  readonly verbatim: boolean;
  readonly parent: Node<T> | null;
  /**
   * The declared KE this node stands for, set while it holds values. Not kept on every node:
   * a declaration of n chunks would otherwise hold n prefixes, O(n²) characters.
   */
  ke = "";
  literal: Map<string, Node<T>> | null = null;
  wild: Node<T>[] | null = null;
  values: Set<T> | null = null;

  constructor(chunk: string, parent: Node<T> | null) {
    this.chunk = chunk;
    this.kind = classify(chunk);
    this.verbatim = isVerbatimChunk(chunk);
    this.parent = parent;
  }

  isEmpty(): boolean {
    return this.values === null && this.literal === null && this.wild === null;
  }
}

/** A query split once into chunks, with per-chunk classes; shared by the whole walk. */
interface Query {
  readonly chunks: readonly string[];
  readonly kinds: Uint8Array;
  readonly verbatim: Uint8Array;
  readonly n: number;
  /** True when some chunk is wild, so literal children must be scanned, not looked up. */
  readonly wild: boolean;
}

function makeQuery(ke: string): Query {
  validate(ke);
  const chunks = ke.split("/");
  const n = chunks.length;
  const kinds = new Uint8Array(n);
  const verbatim = new Uint8Array(n);
  let wild = false;
  for (let i = 0; i < n; i++) {
    const c = chunks[i]!;
    const k = classify(c);
    kinds[i] = k;
    verbatim[i] = isVerbatimChunk(c) ? 1 : 0;
    if (k !== LITERAL) wild = true;
  }
  return { chunks, kinds, verbatim, n, wild };
}

/** Inserts `j` into the sorted, duplicate-free array `arr` (position sets are tiny). */
function insertPos(arr: number[], j: number): void {
  let k = arr.length;
  while (k > 0 && arr[k - 1]! > j) k--;
  if (k > 0 && arr[k - 1] === j) return;
  arr.splice(k, 0, j);
}

/** Adds `j` and, through any query `**` at `j`, the positions it may skip to (it may eat nothing). */
function insertClosed(arr: number[], j: number, q: Query): void {
  insertPos(arr, j);
  while (j < q.n && q.kinds[j] === DOUBLE) insertPos(arr, ++j);
}

/**
 * Positions alive after a declared `**` node, given those alive before it: it may eat nothing,
 * or any run of query chunks that holds no verbatim chunk. `live` is sorted and non-empty.
 */
function afterDouble(live: readonly number[], q: Query): number[] {
  const out: number[] = [];
  let k = 0;
  let alive = false;
  for (let j = live[0]!; j <= q.n; j++) {
    if (k < live.length && live[k] === j) {
      alive = true;
      k++;
    } else if (alive && q.verbatim[j - 1] === 1) {
      alive = false;
      if (k === live.length) break;
    }
    if (alive) out.push(j);
  }
  return out;
}

/** Intersection step: positions alive at `child` given `live` at its parent, or null. */
function stepIntersect<T>(child: Node<T>, live: readonly number[], q: Query): number[] | null {
  if (child.kind === DOUBLE) return afterDouble(live, q);
  let out: number[] | null = null;
  for (const i of live) {
    if (i >= q.n) break;
    if (q.kinds[i] === DOUBLE) {
      // The query `**` eats the key chunk this declared chunk matches, and stays (it may
      // still stop right after, hence the closure).
      if (!child.verbatim) {
        out ??= [];
        insertClosed(out, i, q);
      }
    } else if (chunkIntersects(child.chunk, q.chunks[i]!)) {
      out ??= [];
      insertClosed(out, i + 1, q);
    }
  }
  return out;
}

/** Inclusion step (declared side on the left, as in `includes(declared, query)`), or null. */
function stepInclude<T>(child: Node<T>, live: readonly number[], q: Query): number[] | null {
  if (child.kind === DOUBLE) return afterDouble(live, q);
  let out: number[] | null = null;
  for (const i of live) {
    if (i >= q.n) break;
    if (q.kinds[i] !== DOUBLE && chunkIncludes(child.chunk, q.chunks[i]!)) {
      out ??= [];
      out.push(i + 1);
    }
  }
  return out;
}

function collect<T>(node: Node<T>, out: Set<T>): void {
  if (node.values !== null) for (const v of node.values) out.add(v);
}

/** A chunk trie mapping declared KEs (canonical strings, possibly wild) to values: the routing index. */
export class KeTrie<T> {
  readonly #root = new Node<T>("", null);
  #size = 0;

  /** Number of (ke, value) pairs. */
  get size(): number {
    return this.#size;
  }

  /** Declares `value` at the canonical KE `ke` (validated). A ke may hold many values; re-adding a pair is a no-op. */
  add(ke: string, value: T): void {
    validate(ke);
    let node = this.#root;
    for (const chunk of ke.split("/")) {
      let child = this.#child(node, chunk);
      if (child === undefined) {
        child = new Node<T>(chunk, node);
        if (child.kind === LITERAL) {
          node.literal ??= new Map();
          node.literal.set(chunk, child);
        } else {
          node.wild ??= [];
          node.wild.push(child);
        }
      }
      node = child;
    }
    node.ke = ke;
    node.values ??= new Set();
    const values = node.values;
    if (!values.has(value)) {
      values.add(value);
      this.#size++;
    }
  }

  /** Removes the pair (ke, value); returns whether it was there. Nodes left empty are pruned. */
  delete(ke: string, value: T): boolean {
    let node: Node<T> | undefined = this.#root;
    for (const chunk of ke.split("/")) {
      node = this.#child(node, chunk);
      if (node === undefined) return false;
    }
    if (node.values === null || !node.values.delete(value)) return false;
    this.#size--;
    if (node.values.size === 0) node.values = null;
    while (node.parent !== null && node.isEmpty()) {
      const parent: Node<T> = node.parent;
      if (node.kind === LITERAL) {
        parent.literal!.delete(node.chunk);
        if (parent.literal!.size === 0) parent.literal = null;
      } else {
        const list = parent.wild!;
        list.splice(list.indexOf(node), 1);
        if (list.length === 0) parent.wild = null;
      }
      node = parent;
    }
    return true;
  }

  /** Every value whose declared KE intersects `ke` (canonical, possibly wild), each value once. */
  intersecting(ke: string): T[] {
    const q = makeQuery(ke);
    const out = new Set<T>();
    const start: number[] = [];
    insertClosed(start, 0, q);
    this.#walkIntersect(this.#root, start, q, out);
    return [...out];
  }

  /** Every value whose declared KE includes `ke` (with the `includes` answers of §1.5), each once. */
  including(ke: string): T[] {
    const q = makeQuery(ke);
    const out = new Set<T>();
    this.#walkInclude(this.#root, [0], q, out);
    return [...out];
  }

  /** Number of trie nodes below the root: a diagnostic, used to check that deletes prune. */
  get nodeCount(): number {
    let count = 0;
    const stack: Node<T>[] = [this.#root];
    while (stack.length > 0) {
      const node = stack.pop()!;
      if (node.literal !== null) for (const c of node.literal.values()) stack.push(c);
      if (node.wild !== null) for (const c of node.wild) stack.push(c);
      count += (node.literal?.size ?? 0) + (node.wild?.length ?? 0);
    }
    return count;
  }

  /** The declared KEs (those holding at least one value). */
  keys(): string[] {
    const out: string[] = [];
    const stack: Node<T>[] = [this.#root];
    while (stack.length > 0) {
      const node = stack.pop()!;
      if (node.values !== null) out.push(node.ke);
      if (node.literal !== null) for (const c of node.literal.values()) stack.push(c);
      if (node.wild !== null) for (const c of node.wild) stack.push(c);
    }
    return out;
  }

  #child(node: Node<T>, chunk: string): Node<T> | undefined {
    if (classify(chunk) === LITERAL) return node.literal?.get(chunk);
    if (node.wild === null) return undefined;
    for (const c of node.wild) if (c.chunk === chunk) return c;
    return undefined;
  }

  /**
   * Intersection walk, depth-first with an explicit stack (a declaration may be thousands of
   * chunks deep: recursion per level would overflow the call stack). Each entry is a node with
   * its `live` query positions: sorted, closed under a query `**` eating nothing.
   */
  #walkIntersect(root: Node<T>, start: number[], q: Query, out: Set<T>): void {
    const nodes: Node<T>[] = [root];
    const lives: number[][] = [start];
    const push = (child: Node<T>, next: number[] | null): void => {
      if (next === null) return;
      nodes.push(child);
      lives.push(next);
    };
    while (nodes.length > 0) {
      const node = nodes.pop()!;
      const live = lives.pop()!;
      if (live[live.length - 1] === q.n) collect(node, out);
      const literal = node.literal;
      if (literal !== null) {
        if (q.wild && this.#needsScan(live, q)) {
          // A wild query chunk is alive here: every literal child may match it.
          for (const child of literal.values()) push(child, stepIntersect(child, live, q));
        } else if (live.length === 1) {
          const i = live[0]!;
          const child = i < q.n ? literal.get(q.chunks[i]!) : undefined;
          if (child !== undefined) {
            const next: number[] = [];
            insertClosed(next, i + 1, q);
            push(child, next);
          }
        } else {
          // Several positions alive (below a declared `**`): look each up, visit each child once.
          let seen: Node<T>[] | null = null;
          for (const i of live) {
            if (i >= q.n) break;
            const child = literal.get(q.chunks[i]!);
            if (child === undefined || seen?.includes(child)) continue;
            seen ??= [];
            seen.push(child);
            push(child, stepIntersect(child, live, q));
          }
        }
      }
      const wild = node.wild;
      if (wild !== null) for (const child of wild) push(child, stepIntersect(child, live, q));
    }
  }

  /** True when some alive position holds a wild query chunk (a `**` there eats any literal child). */
  #needsScan(live: readonly number[], q: Query): boolean {
    for (const i of live) if (i < q.n && q.kinds[i] !== LITERAL) return true;
    return false;
  }

  /**
   * Inclusion walk, iterative like `#walkIntersect`. A literal declared chunk includes only the
   * identical query chunk, so literal children are always found by lookup, even for a wild query.
   */
  #walkInclude(root: Node<T>, start: number[], q: Query, out: Set<T>): void {
    const nodes: Node<T>[] = [root];
    const lives: number[][] = [start];
    while (nodes.length > 0) {
      const node = nodes.pop()!;
      const live = lives.pop()!;
      if (live[live.length - 1] === q.n) collect(node, out);
      const literal = node.literal;
      if (literal !== null) {
        let seen: Node<T>[] | null = null;
        for (const i of live) {
          if (i >= q.n) break;
          const child = literal.get(q.chunks[i]!);
          if (child === undefined || seen?.includes(child)) continue;
          if (live.length > 1) {
            seen ??= [];
            seen.push(child);
          }
          const next = stepInclude(child, live, q);
          if (next !== null) {
            nodes.push(child);
            lives.push(next);
          }
        }
      }
      const wild = node.wild;
      if (wild !== null) {
        for (const child of wild) {
          const next = stepInclude(child, live, q);
          if (next !== null) {
            nodes.push(child);
            lives.push(next);
          }
        }
      }
    }
  }
}
