/**
 * An index of concrete keys (no wildcards) for storages: a chunk trie, so a wild query visits
 * only the subtrees that can match instead of every key, and a query can be answered in slices
 * (`KeyWalk.step`) that give the event loop back between them. A plain key costs one Map lookup
 * per chunk, whatever the number of keys.
 *
 * Memory matters (a storage may hold millions of keys): a key that is no other key's prefix
 * (most of them) is its value stored right in its parent's Map under its last chunk, with no node
 * object; it becomes a `KeyNode` only when a longer key is stored under it.
 */
import { performance } from "node:perf_hooks";
import { chunkIntersects } from "./chunk.js";
import { isVerbatimChunk, validate } from "./validate.js";

const LITERAL = 0;
const STAR = 1;
const DOUBLE = 2;
const GLOB = 3;

/**
 * `chunk` as a string of its own. V8 makes a slice of 13 characters or more a view that keeps
 * the whole sliced string alive: a chunk kept as an index key would hold its entire key (for a
 * UUID chunk, 40 bytes more per key). Rebuilding it from its code units costs about half a
 * microsecond, once per new key; very long chunks stay views (the key is mostly that chunk).
 */
function ownString(chunk: string): string {
  const n = chunk.length;
  if (n < 13 || n > 1024) return chunk;
  const units = new Array<number>(n);
  for (let i = 0; i < n; i++) units[i] = chunk.charCodeAt(i);
  return String.fromCharCode.apply(null, units);
}

/**
 * Up to this many children, a scan visits them in key order, from a sorted list of their
 * "events" kept until the node's children change (see `ChildScan`). A node with more children
 * is scanned in insertion order, and what the walk finds under it is flagged as out of order
 * (`KeyWalk.step`): the caller sorts that run in slices, since sorting a million chunks at once
 * would hold the event loop.
 */
const SORTED_SCAN_MAX = 4096;

/** A key prefix that has longer keys under it; `value` is set when it is a key itself. */
class KeyNode<V> {
  kids: Map<string, KeyNode<V> | V> | null = null;
  value: V | undefined = undefined;
  /** The children's events in key order, once a scan needed them; null again when they change. */
  sorted: SortedKids<V> | null = null;
}

/**
 * A node's children events in key order (see `childEvents`), each with its chunk, its child and
 * whether it stands for the child's own key or the keys under it: while the node's `sorted` is
 * this very object, nothing it lists has changed, and a scan reads it without a Map lookup.
 */
interface SortedKids<V> {
  readonly chunks: string[];
  readonly children: Array<KeyNode<V> | V>;
  /** Per event: true for "the keys under the child", false for "the child's own key". */
  readonly under: boolean[];
}

/** `ChildScan.part`. */
const BOTH = 0;
const KEY_ONLY = 1;
const UNDER_ONLY = 2;

/**
 * The events of a node's children, sorted so that walking them depth first gives the keys in
 * string order: a child's own key sorts as its chunk `c`, the keys under it as `c/`. (Sorting
 * the chunks alone is not enough: `a.b` sorts before `a/x` as a string, after `a` as a chunk.)
 * A chunk never holds `/`, so a trailing one tells the two kinds apart.
 */
function childEvents<V>(kids: Map<string, KeyNode<V> | V>): SortedKids<V> {
  const events: string[] = [];
  for (const [c, e] of kids) {
    if (!(e instanceof KeyNode)) events.push(c);
    else {
      if (e.value !== undefined) events.push(c);
      if (e.kids !== null) events.push(`${c}/`);
    }
  }
  events.sort();
  const chunks: string[] = new Array(events.length);
  const children: Array<KeyNode<V> | V> = new Array(events.length);
  const under: boolean[] = new Array(events.length);
  for (let i = 0; i < events.length; i++) {
    const ev = events[i]!;
    const u = ev.charCodeAt(ev.length - 1) === 0x2f; // "/"
    const c = u ? ev.slice(0, -1) : ev;
    chunks[i] = c;
    children[i] = kids.get(c)!;
    under[i] = u;
  }
  return { chunks, children, under };
}

/**
 * Where the scan of one node's children is: through its sorted events, or (a node with more
 * than `SORTED_SCAN_MAX` children) its Map in insertion order.
 */
class ChildScan<V> {
  readonly #node: KeyNode<V>;
  readonly #kids: Map<string, KeyNode<V> | V>;
  readonly #sorted: SortedKids<V> | null;
  readonly #entries: Iterator<[string, KeyNode<V> | V]> | null;
  #i = 0;
  /** The child `next` found (valid when it returned true). */
  chunk = "";
  child: KeyNode<V> | V | undefined = undefined;
  /**
   * What of the child to visit: `KEY_ONLY` its own key (its value, or the value of its node),
   * `UNDER_ONLY` the keys under it (its node, without its own key), `BOTH` its node whole.
   */
  part = BOTH;

  constructor(node: KeyNode<V>) {
    const kids = node.kids!;
    this.#node = node;
    this.#kids = kids;
    if (kids.size <= SORTED_SCAN_MAX) {
      node.sorted ??= childEvents(kids);
      this.#sorted = node.sorted;
      this.#entries = null;
    } else {
      this.#sorted = null;
      this.#entries = kids.entries();
    }
  }

  /** True when this scan goes through the children in key order. */
  get ordered(): boolean {
    return this.#sorted !== null;
  }

  /** Moves to the next child; false when there is none left. */
  next(): boolean {
    const sorted = this.#sorted;
    if (sorted !== null) {
      const { chunks, children, under } = sorted;
      // Unchanged since sorted: the listed children are the node's. Otherwise (keys set or
      // deleted between two slices of this walk) each is looked up: a child removed since is
      // skipped; one added meanwhile may be missed.
      const current = this.#node.sorted === sorted;
      while (this.#i < chunks.length) {
        const i = this.#i++;
        const c = chunks[i]!;
        const u = under[i]!;
        const e = current ? children[i]! : this.#kids.get(c);
        if (e === undefined) continue;
        if (e instanceof KeyNode) {
          if (u ? e.kids === null : e.value === undefined) continue;
          this.part = u ? UNDER_ONLY : KEY_ONLY;
        } else {
          if (u) continue;
          this.part = BOTH;
        }
        this.chunk = c;
        this.child = e;
        return true;
      }
      return false;
    }
    const n = this.#entries!.next();
    if (n.done) return false;
    this.chunk = n.value[0];
    this.child = n.value[1];
    this.part = BOTH;
    return true;
  }
}

/** What `KeyIndex.set` and `delete` did, for memory accounting. */
export interface IndexChange<V> {
  /** Key prefixes (index nodes) created (set) or removed (delete), and their chunks' total length. */
  nodes: number;
  chars: number;
  /** The value the key held before (set) or held (delete). */
  old: V | undefined;
}

/**
 * A map from concrete keys to values, indexed by chunk for key-expression queries. Values must
 * not be `KeyNode`s (any other object, or a primitive other than undefined, will do).
 */
/** Keys whose value `KeyIndex` remembers beside its tree, at most (emptied when full). */
const RECENT_KEYS_MAX = 16_384;
/**
 * Longest key it remembers there: the map's strings are nobody's quota (16,384 keys of 4,096
 * characters would be 64 MiB), so longer keys always take the tree walk.
 */
const RECENT_KEY_MAX_LENGTH = 256;

export class KeyIndex<V> {
  readonly #root = new KeyNode<V>();
  #size = 0;
  /**
   * The values of keys set or read lately, a subset of the tree kept in step with it: a hot key
   * is found with one hash lookup (its string's hash is cached when a caller hands the same string
   * again) instead of a walk that slices and hashes each chunk.
   */
  readonly #recent = new Map<string, V>();

  /** Number of keys holding a value. */
  get size(): number {
    return this.#size;
  }

  /** The value at the concrete key `key`. */
  get(key: string): V | undefined {
    let value = this.#recent.get(key);
    if (value === undefined) {
      value = this.#find(key);
      if (value !== undefined) this.#remember(key, value);
    }
    return value;
  }

  #remember(key: string, value: V): void {
    // Bounded: a stream of distinct keys must not grow it without end.
    if (key.length > RECENT_KEY_MAX_LENGTH) return;
    if (this.#recent.size >= RECENT_KEYS_MAX) this.#recent.clear();
    this.#recent.set(key, value);
  }

  #find(key: string): V | undefined {
    let node = this.#root;
    let start = 0;
    for (;;) {
      let end = key.indexOf("/", start);
      if (end === -1) end = key.length;
      const e = node.kids?.get(key.slice(start, end));
      if (e === undefined) return undefined;
      if (end === key.length) return e instanceof KeyNode ? e.value : e;
      if (!(e instanceof KeyNode)) return undefined;
      node = e;
      start = end + 1;
    }
  }

  /** Sets the value of the concrete key `key` (not validated: the caller holds checked keys). */
  set(key: string, value: V): IndexChange<V> {
    const change = this.#insert(key, value);
    this.#remember(key, value);
    return change;
  }

  #insert(key: string, value: V): IndexChange<V> {
    let nodes = 0;
    let chars = 0;
    let node = this.#root;
    let parent: KeyNode<V> | null = null;
    let start = 0;
    // Scans remember each node's children events (`KeyNode.sorted`): any change to what they
    // list (a child added, a child's own key or keys under it appearing) drops that list.
    for (;;) {
      let end = key.indexOf("/", start);
      if (end === -1) end = key.length;
      const chunk = key.slice(start, end);
      if (node.kids === null) {
        node.kids = new Map();
        if (parent !== null) parent.sorted = null;
      }
      const kids = node.kids;
      const e = kids.get(chunk);
      if (end === key.length) {
        let old: V | undefined;
        if (e === undefined) {
          kids.set(ownString(chunk), value);
          node.sorted = null;
          nodes++;
          chars += chunk.length;
        } else if (e instanceof KeyNode) {
          old = e.value;
          e.value = value;
          if (old === undefined) node.sorted = null;
        } else {
          old = e;
          kids.set(chunk, value);
          // The sorted list holds the old value (`SortedKids`).
          if (value !== e) node.sorted = null;
        }
        if (old === undefined) this.#size++;
        return { nodes, chars, old };
      }
      let next: KeyNode<V>;
      if (e instanceof KeyNode) {
        next = e;
      } else {
        // A new prefix, or a key that now gets a longer key under it.
        next = new KeyNode<V>();
        if (e === undefined) {
          nodes++;
          chars += chunk.length;
          kids.set(ownString(chunk), next);
          node.sorted = null;
        } else {
          next.value = e;
          kids.set(chunk, next);
          node.sorted = null;
        }
      }
      parent = node;
      node = next;
      start = end + 1;
    }
  }

  /** Removes `key` and the prefixes left empty; `old` is undefined when it held no value. */
  delete(key: string): IndexChange<V> {
    this.#recent.delete(key);
    return this.#remove(key);
  }

  #remove(key: string): IndexChange<V> {
    const path: KeyNode<V>[] = [];
    const chunks = key.split("/");
    let node = this.#root;
    const last = chunks.length - 1;
    for (let i = 0; i < last; i++) {
      const e = node.kids?.get(chunks[i]!);
      if (!(e instanceof KeyNode)) return { nodes: 0, chars: 0, old: undefined };
      path.push(node);
      node = e;
    }
    const leaf = chunks[last]!;
    const e = node.kids?.get(leaf);
    if (e === undefined) return { nodes: 0, chars: 0, old: undefined };
    let old: V | undefined;
    let nodes = 0;
    let chars = 0;
    if (e instanceof KeyNode) {
      old = e.value;
      if (old === undefined) return { nodes: 0, chars: 0, old: undefined };
      e.value = undefined;
      if (e.kids !== null) {
        this.#size--;
        return { nodes: 0, chars: 0, old };
      }
    } else {
      old = e;
    }
    this.#size--;
    node.kids!.delete(leaf);
    node.sorted = null;
    nodes++;
    chars += leaf.length;
    // Prune the prefixes left with neither a value nor keys under them.
    for (let i = last - 1; i >= 0 && node.kids!.size === 0; i--) {
      node.kids = null;
      if (node.value !== undefined) break;
      const parent = path[i]!;
      parent.kids!.delete(chunks[i]!);
      parent.sorted = null;
      nodes++;
      chars += chunks[i]!.length;
      node = parent;
    }
    if (node.kids !== null && node.kids.size === 0) node.kids = null;
    return { nodes, chars, old };
  }

  /** Removes every key. */
  clear(): void {
    this.#root.kids = null;
    this.#size = 0;
    this.#recent.clear();
  }

  /**
   * A walk over the keys that intersect the canonical key expression `ke` (validated): call
   * `step` until it returns true. Keys set between steps may or may not be reported.
   *
   * Keys come out in string order (UTF-16 code units, as `<` compares them), except under a
   * node with more than `SORTED_SCAN_MAX` children: `step` tells its caller which keys those are,
   * and they are one run of consecutive keys in the order, for the caller to sort.
   */
  walk(ke: string): KeyWalk<V> {
    validate(ke);
    return new KeyWalk(this.#root, ke);
  }
}

/**
 * A depth-first walk of a `KeyIndex` that simulates the query as an NFA over its chunk
 * positions (as `KeTrie` does), with an explicit stack, resumable between slices.
 */
export class KeyWalk<V> {
  readonly #chunks: string[];
  readonly #kinds: Uint8Array;
  readonly #n: number;
  /** `#ends[j]`: the query can end at position j (the rest is empty or one `**`). */
  readonly #ends: Uint8Array;
  /** Per-position stamps, to add each position once per step of the walk. */
  readonly #stamp: Uint32Array;
  #gen = 0;
  readonly #nodes: KeyNode<V>[];
  readonly #lives: Int32Array[];
  readonly #paths: string[];
  /** For a frame whose children are being scanned, where the scan is. */
  readonly #iters: Array<ChildScan<V> | null>;
  /** Per frame: whether its node's own key is still to visit (not when a scan visited it already). */
  readonly #own: boolean[];
  /** Frames on the stack whose scan is in insertion order, not key order. */
  #unordered = 0;
  /** Keys visited in the current step. */
  #visited = 0;

  /** @internal */
  constructor(root: KeyNode<V>, ke: string) {
    const chunks = ke.split("/");
    const n = chunks.length;
    this.#chunks = chunks;
    this.#n = n;
    this.#kinds = new Uint8Array(n);
    for (let i = 0; i < n; i++) {
      const c = chunks[i]!;
      this.#kinds[i] = c === "**" ? DOUBLE : c === "*" ? STAR : !isVerbatimChunk(c) && c.includes("$") ? GLOB : LITERAL;
    }
    this.#ends = new Uint8Array(n + 1);
    for (let j = n; j >= 0; j--)
      this.#ends[j] = j === n || (this.#kinds[j] === DOUBLE && this.#ends[j + 1] === 1) ? 1 : 0;
    this.#stamp = new Uint32Array(n + 1);
    const gen = this.#nextGen();
    const start: number[] = [];
    this.#add(start, 0, gen);
    this.#nodes = [root];
    this.#lives = [Int32Array.from(start)];
    this.#paths = [""];
    this.#iters = [null];
    this.#own = [true];
  }

  /**
   * Advances the walk, calling `visit` with every matching key and its value, until it is over
   * (returns true), or `budgetMs` milliseconds have passed, or about `maxKeys` keys were visited
   * (returns false). `inOrder` is false for the keys found under a node scanned in insertion order
   * (see `KeyIndex.walk`).
   */
  step(
    visit: (key: string, value: V, inOrder: boolean) => void,
    budgetMs = Number.POSITIVE_INFINITY,
    maxKeys = Number.POSITIVE_INFINITY,
  ): boolean {
    const until = performance.now() + budgetMs;
    let work = 0;
    this.#visited = 0;
    while (this.#nodes.length > 0) {
      if (this.#visited >= maxKeys) return false;
      const top = this.#nodes.length - 1;
      const node = this.#nodes[top]!;
      const live = this.#lives[top]!;
      const path = this.#paths[top]!;
      let kids = this.#iters[top];
      if (kids === null) {
        // First visit: the node itself, then either one lookup or a scan of its children.
        if (this.#own[top] && node.value !== undefined && this.#endsIn(live)) {
          this.#visited++;
          visit(path, node.value, this.#unordered === 0);
        }
        const lookup = node.kids === null ? null : this.#literalOnly(live);
        if (node.kids === null || lookup !== null) {
          this.#pop();
          if (lookup !== null) {
            // Only one literal chunk is alive: its child is found by lookup.
            const c = this.#chunks[lookup]!;
            const e = node.kids!.get(c);
            if (e !== undefined) this.#child(c, e, BOTH, live, path, visit);
          }
          work++;
          continue;
        }
        kids = this.#iters[top] = new ChildScan(node);
        if (!kids.ordered) this.#unordered++;
      }
      // A scan, resumable: a node may have a million children. Children found are pushed above
      // this frame, so they are walked first (depth first) and the scan resumes after them.
      for (;;) {
        if (!kids.next()) {
          // Every frame pushed above this one is finished: it is on top again.
          this.#pop();
          break;
        }
        this.#child(kids.chunk, kids.child!, kids.part, live, path, visit);
        // Reading the clock costs; every few hundred children is often enough.
        if (++work >= 256) {
          work = 0;
          if (performance.now() >= until) return false;
        }
        if (this.#nodes.length - 1 !== top) break; // descend into the child just pushed
        if (this.#visited >= maxKeys) return false;
      }
    }
    return true;
  }

  /** False while the walk is under a node it scans in insertion order (see `step`). */
  get inOrder(): boolean {
    return this.#unordered === 0;
  }

  #pop(): void {
    this.#nodes.pop();
    this.#lives.pop();
    this.#paths.pop();
    const scan = this.#iters.pop();
    if (scan && !scan.ordered) this.#unordered--;
    this.#own.pop();
  }

  #endsIn(live: Int32Array): boolean {
    return live[live.length - 1] === this.#n;
  }

  /** The position of the only alive chunk when it is literal (so lookup suffices), else null. */
  #literalOnly(live: Int32Array): number | null {
    const n = this.#n;
    const i = live[0]!;
    if (i >= n || this.#kinds[i] !== LITERAL) return null;
    return live.length === 1 || (live.length === 2 && live[1] === n) ? i : null;
  }

  /** Whether query position `i` (not `**`) matches the key chunk `c`. */
  #matches(i: number, c: string, verbatim: boolean): boolean {
    const kind = this.#kinds[i]!;
    if (kind === LITERAL) return c === this.#chunks[i];
    if (kind === STAR) return !verbatim;
    return chunkIntersects(this.#chunks[i]!, c);
  }

  /**
   * Handles the child `c` of a node whose alive positions are `live`: its own key, the keys
   * under it, or both (`part`, see `ChildScan`).
   */
  #child(
    c: string,
    e: KeyNode<V> | V,
    part: number,
    live: Int32Array,
    path: string,
    visit: (key: string, value: V, inOrder: boolean) => void,
  ): void {
    const n = this.#n;
    const verbatim = isVerbatimChunk(c);
    const node = e instanceof KeyNode ? e : undefined;
    if (node === undefined || part === KEY_ONLY) {
      // The child's own key: only "can the query end right after it" matters.
      const value = node === undefined ? (e as V) : node.value!;
      for (const i of live) {
        if (i >= n) break;
        const hit =
          this.#kinds[i] === DOUBLE
            ? !verbatim && this.#ends[i] === 1
            : this.#ends[i + 1] === 1 && this.#matches(i, c, verbatim);
        if (hit) {
          this.#visited++;
          visit(path === "" ? c : `${path}/${c}`, value, this.#unordered === 0);
          return;
        }
      }
      return;
    }
    const gen = this.#nextGen();
    const next: number[] = [];
    for (const i of live) {
      if (i >= n) break;
      if (this.#kinds[i] === DOUBLE) {
        // The query `**` eats this chunk and stays alive (never over a verbatim chunk).
        if (!verbatim) this.#add(next, i, gen);
      } else if (this.#matches(i, c, verbatim)) {
        this.#add(next, i + 1, gen);
      }
    }
    if (next.length === 0) return;
    // Sorted, so "the query can end here" is the last position.
    next.sort((a, b) => a - b);
    this.#nodes.push(node);
    this.#lives.push(Int32Array.from(next));
    this.#paths.push(path === "" ? c : `${path}/${c}`);
    this.#iters.push(null);
    this.#own.push(part === BOTH);
  }

  #nextGen(): number {
    if (++this.#gen === 0xffffffff) {
      this.#stamp.fill(0);
      this.#gen = 1;
    }
    return this.#gen;
  }

  /** Adds position `j` and, through query `**` chunks that may eat nothing, those after it. */
  #add(out: number[], j: number, gen: number): void {
    for (;;) {
      if (this.#stamp[j] !== gen) {
        this.#stamp[j] = gen;
        out.push(j);
      }
      if (j >= this.#n || this.#kinds[j] !== DOUBLE) return;
      j++;
    }
  }
}
