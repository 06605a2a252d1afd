/**
 * The explorer's shared state (docs/explorer.md): the key tree the page shows, which key is
 * selected and focused, and the selector the live stream follows.
 */
import type { Entry } from "./dom.js";

/** Rows shown per tree level before a "show more" row. */
export const PAGE_ROWS = 200;

/** One chunk of the key tree. */
export class TreeNode {
  readonly children = new Map<string, TreeNode>();
  sorted: TreeNode[] | undefined;
  /** The latest sample of this key, when the key itself exists. */
  entry: Entry | undefined;
  /** Every entry of the key, when a GET answered several (`_time` turns consolidation off). */
  history: Entry[] | undefined;
  /** Keys at or below this node. */
  count = 0;
  expanded = false;
  limit = PAGE_ROWS;
  constructor(
    readonly name: string,
    readonly path: string,
    readonly parent: TreeNode | undefined,
  ) {}
}

/** The page's mutable state, one object so that every part sees the same values. */
export const state = {
  root: new TreeNode("", "", undefined),
  /** The key shown in the detail pane. */
  selectedPath: undefined as string | undefined,
  /** The tree row holding the keyboard focus. */
  focusPath: undefined as string | undefined,
  /** The selector the tree and its live stream show. */
  liveSelector: "**",
};

const isDigit = (c: number): boolean => c >= 48 && c <= 57;

/**
 * Natural order (`room-2` before `room-10`), by code unit otherwise. Hand-written: creating an
 * `Intl.Collator` costs tens of milliseconds at start-up.
 */
export function naturalCompare(a: string, b: string): number {
  let i = 0;
  let j = 0;
  while (i < a.length && j < b.length) {
    const ca = a.charCodeAt(i);
    const cb = b.charCodeAt(j);
    if (isDigit(ca) && isDigit(cb)) {
      let si = i;
      while (si < a.length - 1 && a.charCodeAt(si) === 48 && isDigit(a.charCodeAt(si + 1))) si++;
      let sj = j;
      while (sj < b.length - 1 && b.charCodeAt(sj) === 48 && isDigit(b.charCodeAt(sj + 1))) sj++;
      let ei = si;
      while (ei < a.length && isDigit(a.charCodeAt(ei))) ei++;
      let ej = sj;
      while (ej < b.length && isDigit(b.charCodeAt(ej))) ej++;
      if (ei - si !== ej - sj) return ei - si - (ej - sj);
      for (let k = 0; k < ei - si; k++) {
        const d = a.charCodeAt(si + k) - b.charCodeAt(sj + k);
        if (d !== 0) return d;
      }
      i = ei;
      j = ej;
    } else {
      if (ca !== cb) return ca - cb;
      i++;
      j++;
    }
  }
  if (a.length - i !== b.length - j) return a.length - i - (b.length - j);
  return a < b ? -1 : a > b ? 1 : 0;
}

const byName = (a: TreeNode, b: TreeNode): number => naturalCompare(a.name, b.name);

/** Orders two Variant A times (`<RFC 3339>/<router id>`) by their instant. */
function compareTime(a: string, b: string): number {
  const ta = a.split("/")[0] ?? "";
  const tb = b.split("/")[0] ?? "";
  return ta < tb ? -1 : ta > tb ? 1 : 0;
}

/** The node of a key, if the tree holds it. */
export function lookup(path: string): TreeNode | undefined {
  if (path === "") return state.root;
  let node: TreeNode | undefined = state.root;
  for (const chunk of path.split("/")) {
    node = node.children.get(chunk);
    if (!node) return undefined;
  }
  return node;
}

/** Adds or replaces a key's entry. `keepNewer`: an older entry never replaces a newer one. */
export function putEntry(e: Entry, keepNewer: boolean, history = false): void {
  let node = state.root;
  let start = 0;
  const key = e.key;
  for (;;) {
    const slash = key.indexOf("/", start);
    const chunk = slash === -1 ? key.slice(start) : key.slice(start, slash);
    let child = node.children.get(chunk);
    if (!child) {
      child = new TreeNode(chunk, slash === -1 ? key : key.slice(0, slash), node);
      node.children.set(chunk, child);
      node.sorted = undefined;
    }
    node = child;
    if (slash === -1) break;
    start = slash + 1;
  }
  const old = node.entry;
  if (old && keepNewer && old.time !== "None" && e.time !== "None" && compareTime(e.time, old.time) < 0) return;
  if (history && old) {
    node.history ??= [old];
    node.history.push(e);
  } else node.history = undefined;
  node.entry = e;
  if (!old) for (let n: TreeNode | undefined = node; n; n = n.parent) n.count++;
}

/** Removes a key, unless its entry is newer than the removal. */
export function removeEntry(key: string, time: string): void {
  const node = lookup(key);
  if (!node?.entry) return;
  if (node.entry.time !== "None" && time !== "None" && compareTime(time, node.entry.time) < 0) return;
  node.entry = undefined;
  node.history = undefined;
  for (let n: TreeNode | undefined = node; n; n = n.parent) n.count--;
  // Prune the chunks nothing is left under.
  let n: TreeNode | undefined = node;
  while (n?.parent && n.count === 0) {
    n.parent.children.delete(n.name);
    n.parent.sorted = undefined;
    n = n.parent;
  }
}

/** A node's children in natural order, sorted once per change. */
export function sortedChildren(node: TreeNode): TreeNode[] {
  if (!node.sorted) node.sorted = [...node.children.values()].sort(byName);
  return node.sorted;
}

/** The paths of the expanded nodes under `node`. */
export function collectExpanded(node: TreeNode, out = new Set<string>()): Set<string> {
  for (const kid of node.children.values()) {
    if (kid.expanded) {
      out.add(kid.path);
      collectExpanded(kid, out);
    }
  }
  return out;
}
