/// <reference lib="dom" />
/// <reference lib="dom.iterable" />
/**
 * The explorer page's script (docs/explorer.md), run in the browser. It is compiled with the rest
 * of `src/` and served as `/?_explorer=app.js`; it only speaks the Variant A REST API of the
 * router that served it. Stored data is only ever put in the page as text (`textContent`,
 * `value`), never as markup.
 */

/** One entry of a Variant A GET or SSE message. */
interface Entry {
  key: string;
  value: unknown;
  encoding: string;
  time: string;
}

/** Rows shown per tree level before a "show more" row. */
const PAGE_ROWS = 200;
/** Bytes of a binary value shown in the hex dump. */
const HEX_LIMIT = 4096;

class TreeNode {
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

interface Row {
  node: TreeNode;
  level: number;
  pos: number;
  size: number;
  /** A "show more" row for `node`'s children. */
  more?: number;
}

const isDigit = (c: number): boolean => c >= 48 && c <= 57;

/**
 * Natural order (`room-2` before `room-10`), by code unit otherwise. Hand-written: creating an
 * `Intl.Collator` costs tens of milliseconds at start-up.
 */
function naturalCompare(a: string, b: string): number {
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

const $ = <T extends HTMLElement>(id: string): T => {
  const el = document.getElementById(id);
  if (!el) throw new Error(`missing #${id}`);
  return el as T;
};

/** Creates an element; strings become text nodes, never markup. */
function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  props: Record<string, string> = {},
  ...children: Array<Node | string>
): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(props)) {
    if (k === "text") el.textContent = v;
    else el.setAttribute(k, v);
  }
  el.append(...children);
  return el;
}

/** The URL path of a key expression (a selector may carry `?parameters`). */
function urlOf(selector: string): string {
  return `/${encodeURI(selector).replace(/#/g, "%23")}`;
}

/** A refusal or failure, as the one-line reason the router gave. */
async function reasonOf(res: Response): Promise<string> {
  const text = (await res.text()).trim();
  return `${res.status} ${text || res.statusText}`;
}

function compareTime(a: string, b: string): number {
  const ta = a.split("/")[0] ?? "";
  const tb = b.split("/")[0] ?? "";
  return ta < tb ? -1 : ta > tb ? 1 : 0;
}

// ---------------------------------------------------------------------------------------------
// The key tree.

let root = new TreeNode("", "", undefined);
let selectedPath: string | undefined;
let focusPath: string | undefined;
let liveSelector = "**";

function lookup(path: string): TreeNode | undefined {
  if (path === "") return root;
  let node: TreeNode | undefined = root;
  for (const chunk of path.split("/")) {
    node = node.children.get(chunk);
    if (!node) return undefined;
  }
  return node;
}

/** Adds or replaces a key's entry. `keepNewer`: an older entry never replaces a newer one. */
function putEntry(e: Entry, keepNewer: boolean, history = false): void {
  let node = root;
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

function removeEntry(key: string, time: string): void {
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

function sortedChildren(node: TreeNode): TreeNode[] {
  if (!node.sorted) node.sorted = [...node.children.values()].sort(byName);
  return node.sorted;
}

/** Rows opened at first sight: whole levels open while the tree stays this short. */
const AUTO_ROWS = 30;

/** Opens the first levels, one whole level at a time, as long as the tree fits in AUTO_ROWS rows. */
function autoExpand(): void {
  let shown = root.children.size;
  let level = sortedChildren(root).filter((n) => n.children.size > 0);
  while (level.length > 0) {
    const more = level.reduce((sum, n) => sum + n.children.size, 0);
    if (shown + more > AUTO_ROWS) return;
    shown += more;
    for (const n of level) n.expanded = true;
    level = level.flatMap((n) => sortedChildren(n).filter((c) => c.children.size > 0));
  }
}

function visibleRows(): Row[] {
  const rows: Row[] = [];
  const walk = (node: TreeNode, level: number): void => {
    const kids = sortedChildren(node);
    const n = Math.min(kids.length, node.limit);
    for (let i = 0; i < n; i++) {
      const kid = kids[i] as TreeNode;
      rows.push({ node: kid, level, pos: i + 1, size: kids.length });
      if (kid.expanded && kid.children.size > 0) walk(kid, level + 1);
    }
    if (kids.length > n) rows.push({ node, level, pos: n + 1, size: kids.length, more: kids.length - n });
  };
  walk(root, 1);
  return rows;
}

const rowNode = new WeakMap<Element, Row>();
let renderPending = false;

function scheduleRender(): void {
  if (renderPending) return;
  renderPending = true;
  requestAnimationFrame(() => {
    renderPending = false;
    renderTree();
    renderDetail();
  });
}

function previewOf(e: Entry): string {
  const v = e.value;
  if (typeof v !== "string") return JSON.stringify(v).slice(0, 80);
  if (isBinary(e)) return `${base64Size(v)} bytes`;
  return v.length > 80 ? `${v.slice(0, 80)}…` : v;
}

function renderTree(): void {
  const tree = $("tree");
  const hadFocus = tree.contains(document.activeElement);
  const rows = visibleRows();
  const els: HTMLElement[] = [];
  let focusEl: HTMLElement | undefined;
  for (const row of rows) {
    const li = h("li", {
      role: "treeitem",
      "aria-level": String(row.level),
      "aria-setsize": String(row.size),
      "aria-posinset": String(row.pos),
      tabindex: "-1",
    });
    li.style.setProperty("--level", String(row.level));
    rowNode.set(li, row);
    if (row.more !== undefined) {
      li.className = "more";
      li.append(
        h("span", { class: "twisty", "aria-hidden": "true" }),
        h("span", { text: `show ${Math.min(row.more, PAGE_ROWS * 5)} more of ${row.more}` }),
      );
      li.dataset.path = `${row.node.path}\u0000more`;
    } else {
      const node = row.node;
      const branch = node.children.size > 0;
      if (branch) li.setAttribute("aria-expanded", String(node.expanded));
      li.setAttribute("aria-selected", String(node.path === selectedPath));
      li.dataset.path = node.path;
      li.append(
        h("span", { class: "twisty", "aria-hidden": "true", text: branch ? (node.expanded ? "▾" : "▸") : "" }),
        h("span", { class: "name", text: node.name || "(empty chunk)" }),
      );
      if (branch) li.append(h("span", { class: "count", title: `${node.count} keys`, text: String(node.count) }));
      if (node.entry) li.append(h("span", { class: "preview", text: previewOf(node.entry) }));
    }
    if (li.dataset.path === focusPath) focusEl = li;
    els.push(li);
  }
  focusEl ??= els[0];
  if (focusEl) focusEl.tabIndex = 0;
  tree.replaceChildren(...els);
  if (els.length === 0) tree.append(h("li", { class: "muted", text: "No keys match." }));
  if (hadFocus && focusEl) focusEl.focus();
}

/** The row element for a tree node, if rendered. */
function rowEls(): HTMLElement[] {
  return Array.from($("tree").querySelectorAll<HTMLElement>('li[role="treeitem"]'));
}

function focusRow(el: HTMLElement | undefined): void {
  if (!el) return;
  for (const r of rowEls()) r.tabIndex = -1;
  el.tabIndex = 0;
  focusPath = el.dataset.path;
  el.focus();
}

function activate(row: Row, toggle: boolean): void {
  if (row.more !== undefined) {
    row.node.limit += PAGE_ROWS * 5;
    renderTree();
    return;
  }
  const node = row.node;
  focusPath = node.path;
  if (toggle && node.children.size > 0) node.expanded = !node.expanded;
  select(node.path);
}

function select(path: string): void {
  selectedPath = path;
  const node = lookup(path);
  if (node?.entry) fillWriteForm(node.entry);
  renderTree();
  renderDetail();
}

function onTreeKey(ev: KeyboardEvent): void {
  const el = (ev.target as HTMLElement).closest<HTMLElement>('li[role="treeitem"]');
  if (!el) return;
  const row = rowNode.get(el);
  if (!row) return;
  const els = rowEls();
  const i = els.indexOf(el);
  const node = row.node;
  switch (ev.key) {
    case "ArrowDown":
      focusRow(els[i + 1]);
      break;
    case "ArrowUp":
      focusRow(els[i - 1]);
      break;
    case "Home":
      focusRow(els[0]);
      break;
    case "End":
      focusRow(els[els.length - 1]);
      break;
    case "ArrowRight":
      if (row.more !== undefined || node.children.size === 0) break;
      if (!node.expanded) {
        node.expanded = true;
        focusPath = node.path;
        renderTree();
      } else focusRow(els[i + 1]);
      break;
    case "ArrowLeft":
      if (row.more === undefined && node.expanded && node.children.size > 0) {
        node.expanded = false;
        focusPath = node.path;
        renderTree();
      } else {
        const parentPath = row.more !== undefined ? node.path : node.parent?.path;
        const parent = els.find((e) => e.dataset.path === parentPath);
        focusRow(parent);
      }
      break;
    case "Enter":
    case " ":
      activate(row, true);
      break;
    default:
      return;
  }
  ev.preventDefault();
}

function onTreeClick(ev: MouseEvent): void {
  const el = (ev.target as HTMLElement).closest<HTMLElement>('li[role="treeitem"]');
  const row = el && rowNode.get(el);
  if (!row || !el) return;
  focusPath = el.dataset.path;
  activate(row, true);
  el.focus();
}

// ---------------------------------------------------------------------------------------------
// The value view.

const JSON_ENCODINGS = new Set([
  "application/json",
  "text/json",
  "application/integer",
  "application/float",
  "application/properties",
]);
const TEXT_ENCODINGS = new Set([
  "application/xml",
  "application/x-www-form-urlencoded",
  "application/javascript",
  "application/yaml",
  "application/sql",
]);

function mediaType(encoding: string): string {
  return (encoding.split(";")[0] ?? "").trim().toLowerCase();
}

/** Variant A renders values of these encodings as base64. */
function isBinary(e: Entry): boolean {
  const t = mediaType(e.encoding);
  return typeof e.value === "string" && !t.startsWith("text/") && !TEXT_ENCODINGS.has(t) && !JSON_ENCODINGS.has(t);
}

function base64Size(b64: string): number {
  const pad = b64.endsWith("==") ? 2 : b64.endsWith("=") ? 1 : 0;
  return Math.floor((b64.length * 3) / 4) - pad;
}

function bytesOf(b64: string): Uint8Array | undefined {
  try {
    const bin = atob(b64);
    const out = new Uint8Array(bin.length);
    for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
    return out;
  } catch {
    return undefined;
  }
}

function hexDump(bytes: Uint8Array): string {
  const lines: string[] = [];
  const n = Math.min(bytes.length, HEX_LIMIT);
  for (let off = 0; off < n; off += 16) {
    const slice = bytes.subarray(off, Math.min(off + 16, n));
    const hex = Array.from(slice, (b) => b.toString(16).padStart(2, "0")).join(" ");
    const ascii = Array.from(slice, (b) => (b >= 0x20 && b < 0x7f ? String.fromCharCode(b) : ".")).join("");
    lines.push(`${off.toString(16).padStart(8, "0")}  ${hex.padEnd(47)}  ${ascii}`);
  }
  if (bytes.length > n) lines.push(`… ${bytes.length - n} more bytes`);
  return lines.join("\n");
}

function utf8Size(s: string): number {
  return new TextEncoder().encode(s).length;
}

function describeTime(time: string): string {
  if (time === "None") return "none (a computed reply)";
  const [stamp = "", router = ""] = time.split("/");
  const ms = Date.parse(stamp.replace(/(\.\d{3})\d*Z$/, "$1Z"));
  const ago = Number.isNaN(ms) ? "" : ` (${agoText(Date.now() - ms)})`;
  return `${stamp.replace("T", " ").replace("Z", " UTC")}${ago}${router ? `, router ${router}` : ""}`;
}

function agoText(ms: number): string {
  const s = Math.round(ms / 1000);
  if (s < 1) return "just now";
  if (s < 90) return `${s} s ago`;
  if (s < 5400) return `${Math.round(s / 60)} min ago`;
  if (s < 129600) return `${Math.round(s / 3600)} h ago`;
  return `${Math.round(s / 86400)} days ago`;
}

/** The value of one entry, shown by encoding; data only ever lands in `textContent`. */
function valueView(e: Entry): HTMLElement[] {
  const out: HTMLElement[] = [];
  const meta = h("dl", { class: "meta" });
  const add = (term: string, desc: string): HTMLElement => {
    const dd = h("dd", { text: desc });
    meta.append(h("dt", { text: term }), dd);
    return dd;
  };
  add("encoding", e.encoding);
  add("time", describeTime(e.time)).dataset.time = e.time;
  out.push(meta);
  const v = e.value;
  if (typeof v !== "string") {
    const text = JSON.stringify(v, null, 2);
    add("size", `${utf8Size(JSON.stringify(v))} bytes as JSON`);
    out.push(h("p", { class: "value-label", text: "JSON" }), h("pre", { class: "value", text }));
  } else if (isBinary(e)) {
    const bytes = bytesOf(v);
    if (!bytes) {
      add("size", `${utf8Size(v)} bytes`);
      out.push(h("pre", { class: "value", text: v }));
    } else {
      add("size", `${bytes.length} bytes`);
      out.push(h("p", { class: "value-label", text: "hex" }), h("pre", { class: "value hex", text: hexDump(bytes) }));
      out.push(h("p", { class: "value-label", text: "base64" }), h("pre", { class: "value", text: v }));
    }
  } else {
    add("size", `${utf8Size(v)} bytes`);
    out.push(h("p", { class: "value-label", text: "text" }), h("pre", { class: "value", text: v }));
  }
  return out;
}

let deleteArmed: HTMLButtonElement | undefined;

function renderDetail(): void {
  const title = $("detail-title");
  const body = $("detail-body");
  const node = selectedPath === undefined ? undefined : lookup(selectedPath);
  if (selectedPath === undefined) {
    title.textContent = "Select a key";
    body.replaceChildren(h("p", { class: "muted", text: "The value, its encoding, size and timestamp show here." }));
    return;
  }
  title.replaceChildren(h("span", { class: "key-title", text: selectedPath || "(root)" }));
  if (!node) {
    body.replaceChildren(h("p", { class: "muted", text: "This key no longer exists." }));
    return;
  }
  const parts: HTMLElement[] = [];
  if (node.children.size > 0)
    parts.push(
      h("p", {
        class: "muted small",
        text: `${node.count} key${node.count === 1 ? "" : "s"} at or below ${node.path}`,
      }),
    );
  if (node.history) {
    parts.push(
      h("p", { class: "small", text: `${node.history.length} samples (consolidation off); the newest first` }),
    );
    for (const e of [...node.history].reverse()) parts.push(...valueView(e));
  } else if (node.entry) parts.push(...valueView(node.entry));
  if (node.children.size > 0) {
    const sub = h("button", { type: "button", class: "secondary", text: `Show ${node.path}/**` });
    sub.addEventListener("click", () => {
      ($("selector") as HTMLInputElement).value = `${node.path}/**`;
      void load(`${node.path}/**`);
    });
    parts.push(h("div", { class: "row" }, sub));
  }
  body.replaceChildren(...parts);
}

// ---------------------------------------------------------------------------------------------
// Loading and live updates.

let source: EventSource | undefined;
let loadSeq = 0;
/** Events that arrived while a GET was in flight, applied after it. */
let buffered: Array<[kind: string, e: Entry]> | undefined;

function setLive(state: "connecting" | "live" | "error", text: string): void {
  const el = $("live");
  el.dataset.state = state;
  el.textContent = text;
}

function keyExprOf(selector: string): string {
  const q = selector.indexOf("?");
  return q === -1 ? selector : selector.slice(0, q);
}

function onEvent(kind: string, data: string): void {
  let e: Entry;
  try {
    e = JSON.parse(data) as Entry;
  } catch {
    return;
  }
  if (buffered) {
    buffered.push([kind, e]);
    return;
  }
  apply(kind, e);
  scheduleRender();
}

function apply(kind: string, e: Entry): void {
  if (kind === "PUT") putEntry(e, true);
  else removeEntry(e.key, e.time);
}

function subscribe(selector: string): void {
  source?.close();
  setLive("connecting", "connecting");
  let failed = false;
  const es = new EventSource(urlOf(keyExprOf(selector)));
  source = es;
  es.addEventListener("open", () => {
    setLive("live", "live");
    document.body.dataset.live = "true";
    // Without a resume the router cannot replay what a broken stream missed: read again.
    if (failed) void load(liveSelector, false);
  });
  es.addEventListener("error", () => {
    failed = true;
    document.body.dataset.live = "false";
    setLive("error", es.readyState === EventSource.CLOSED ? "not live (reload to retry)" : "reconnecting");
  });
  es.addEventListener("PUT", (ev) => onEvent("PUT", (ev as MessageEvent<string>).data));
  es.addEventListener("DELETE", (ev) => onEvent("DELETE", (ev as MessageEvent<string>).data));
  // A gap the router's log could not fill: read everything again.
  es.addEventListener("RESET", () => void load(liveSelector, false));
}

/** Reads `selector` into a new tree; `resubscribe` also opens a new SSE stream on it. */
async function load(selector: string, resubscribe = true): Promise<void> {
  const seq = ++loadSeq;
  const started = performance.now();
  const summary = $("summary");
  summary.className = "muted";
  summary.textContent = `Reading ${selector} …`;
  liveSelector = selector;
  if (location.hash !== `#sel=${encodeURIComponent(selector)}` && (selector !== "**" || location.hash))
    history.replaceState(null, "", `#sel=${encodeURIComponent(selector)}`);
  buffered = [];
  if (resubscribe) subscribe(selector);
  let entries: Entry[];
  let status: number;
  try {
    const res = await fetch(urlOf(selector), { headers: { accept: "application/json" } });
    status = res.status;
    if (!res.ok && res.headers.get("content-type")?.startsWith("application/json") !== true)
      throw new Error(await reasonOf(res));
    entries = (await res.json()) as Entry[];
  } catch (err) {
    if (seq !== loadSeq) return;
    buffered = undefined;
    summary.className = "error";
    summary.textContent = `Cannot read ${selector}: ${(err as Error).message}`;
    root = new TreeNode("", "", undefined);
    renderTree();
    return;
  }
  if (seq !== loadSeq) return;
  const fetched = performance.now();
  const fresh = new TreeNode("", "", undefined);
  const expanded = collectExpanded(root);
  root = fresh;
  const errors: string[] = [];
  for (const e of entries) {
    // A key twice in one answer: consolidation was off (`_time`), keep them all.
    if (e.key !== "ERROR") putEntry(e, false, true);
    else errors.push(typeof e.value === "string" ? e.value : JSON.stringify(e.value));
  }
  for (const [kind, e] of buffered ?? []) apply(kind, e);
  buffered = undefined;
  let restored = 0;
  for (const path of expanded) {
    const n = lookup(path);
    if (n) {
      n.expanded = true;
      restored++;
    }
  }
  if (restored === 0) autoExpand();
  renderTree();
  renderDetail();
  const rendered = performance.now();
  summary.textContent = `${root.count} key${root.count === 1 ? " matches" : "s match"} ${selector} · read in ${Math.round(fetched - started)} ms, shown in ${Math.round(rendered - fetched)} ms`;
  if (errors.length > 0 || status >= 400) {
    summary.className = "error";
    summary.textContent += ` · ${status}: ${errors.join("; ")}`;
  }
  if (seq === 1) {
    performance.mark("zest-tree-rendered");
    document.body.dataset.ready = "true";
  }
}

function collectExpanded(node: TreeNode, out = new Set<string>()): Set<string> {
  for (const kid of node.children.values()) {
    if (kid.expanded) {
      out.add(kid.path);
      collectExpanded(kid, out);
    }
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Writes.

function status(el: HTMLElement, ok: boolean, text: string): void {
  el.className = `small ${ok ? "ok" : "error"}`;
  el.textContent = text;
}

/**
 * A two-step button: the first press arms it ("Confirm ..."), the second within 5 s runs `act`.
 * No `confirm()` dialog, so it works the same from the keyboard and on a phone.
 */
function armOrRun(button: HTMLButtonElement, label: string, act: () => void): void {
  if (deleteArmed === button) {
    deleteArmed = undefined;
    delete button.dataset.armed;
    button.textContent = label;
    act();
    return;
  }
  if (deleteArmed) {
    delete deleteArmed.dataset.armed;
    deleteArmed.textContent = deleteArmed.dataset.label ?? "Delete";
  }
  deleteArmed = button;
  button.dataset.armed = "true";
  button.dataset.label = label;
  button.textContent = `Confirm ${label.toLowerCase()}`;
  setTimeout(() => {
    if (deleteArmed !== button) return;
    deleteArmed = undefined;
    delete button.dataset.armed;
    button.textContent = label;
  }, 5000);
}

async function write(method: "PUT" | "DELETE", key: string, body?: string, contentType?: string): Promise<Response> {
  const headers: Record<string, string> = {};
  if (contentType) headers["content-type"] = contentType;
  return fetch(urlOf(key), { method, headers, ...(body === undefined ? {} : { body }) });
}

/** Puts a key in the write form, ready to edit (binary values are not editable as text). */
function fillWriteForm(e: Entry): void {
  ($("w-key") as HTMLInputElement).value = e.key;
  if (isBinary(e)) return;
  ($("w-enc") as HTMLInputElement).value = e.encoding;
  ($("w-value") as HTMLTextAreaElement).value =
    typeof e.value === "string" ? e.value : JSON.stringify(e.value, null, 2);
}

function setupWriteForm(): void {
  const form = $<HTMLFormElement>("write-form");
  const out = $("w-status");
  const keyOf = (): string => ($("w-key") as HTMLInputElement).value.trim();
  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    const key = keyOf();
    const enc = ($("w-enc") as HTMLInputElement).value.trim();
    void write("PUT", key, ($("w-value") as HTMLTextAreaElement).value, enc || undefined).then(
      async (res) => status(out, res.ok, res.ok ? `Put ${key}` : `Put refused: ${await reasonOf(res)}`),
      (err: Error) => status(out, false, `Put failed: ${err.message}`),
    );
  });
  const del = $<HTMLButtonElement>("w-delete");
  del.addEventListener("click", () => {
    const key = keyOf();
    if (!key) {
      status(out, false, "Give the key to delete.");
      return;
    }
    armOrRun(del, "Delete", () => {
      void write("DELETE", key).then(
        async (res) => status(out, res.ok, res.ok ? `Deleted ${key}` : `Delete refused: ${await reasonOf(res)}`),
        (err: Error) => status(out, false, `Delete failed: ${err.message}`),
      );
    });
  });
}

// ---------------------------------------------------------------------------------------------
// The admin space.

const SM = "status/plugins/storage_manager";
/** Whether the admin write probe says this client may change the admin space. */
let adminWritable = false;
let localZid = "";

async function adminGet(selector: string): Promise<Entry[]> {
  const res = await fetch(urlOf(selector), { headers: { accept: "application/json" } });
  if (!res.ok) throw new Error(await reasonOf(res));
  return ((await res.json()) as Entry[]).filter((e) => e.key !== "ERROR");
}

function obj(v: unknown): Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
}

/** The body of one of the admin tables. */
function tbody(table: string): HTMLTableSectionElement {
  return ($(table) as HTMLTableElement).tBodies[0] ?? ($(table) as HTMLTableElement).createTBody();
}

function cell(...children: Array<Node | string>): HTMLTableCellElement {
  return h("td", {}, ...children);
}

function code(text: string): HTMLElement {
  return h("code", { text });
}

function zidOf(key: string): string {
  return key.split("/")[2] ?? "";
}

async function loadAdmin(): Promise<void> {
  const out = $("admin-status");
  try {
    const [local, routers, sm] = await Promise.all([
      adminGet("@/router/local"),
      adminGet("@/router/*"),
      adminGet(`@/router/*/${SM}/*/*`),
    ]);
    localZid = local[0] ? zidOf(local[0].key) : "";
    $("router").textContent = localZid ? `router ${localZid}` : "";
    renderRouters(routers);
    renderStorageManager(sm);
    out.className = "small muted";
    out.textContent = `${routers.length} router${routers.length === 1 ? "" : "s"}, read at ${new Date().toLocaleTimeString()}`;
  } catch (err) {
    status(out, false, `Cannot read the admin space: ${(err as Error).message}`);
  }
}

function renderRouters(routers: Entry[]): void {
  const rows = routers.map((e) => {
    const v = obj(e.value);
    const zid = String(v.zid ?? zidOf(e.key));
    const fabric = obj(v.fabric);
    const peers = Array.isArray(v.sessions) ? v.sessions.map((s) => String(obj(s).peer ?? "")) : [];
    const locators = Array.isArray(v.locators) ? v.locators.map(String) : [];
    const fabricText = `${String(fabric.kind ?? "local")}${fabric.connected === false ? " (disconnected)" : ""}`;
    return h(
      "tr",
      {},
      cell(code(zid), zid === localZid ? " (this router)" : ""),
      cell(String(v.version ?? "")),
      cell(...locators.flatMap((l, i) => (i ? [" ", code(l)] : [code(l)]))),
      cell(fabricText),
      cell(peers.length ? peers.join(", ") : "none"),
    );
  });
  tbody("routers").replaceChildren(...rows);
  const zids = routers.map((e) => zidOf(e.key));
  for (const id of ["s-router", "v-router"]) {
    const sel = $<HTMLSelectElement>(id);
    const current = sel.value;
    sel.replaceChildren(...zids.map((z) => h("option", { value: z, text: z === localZid ? `${z} (this router)` : z })));
    sel.value = zids.includes(current) ? current : localZid;
  }
}

function configUrl(zid: string, kind: "storages" | "volumes", name: string): string {
  return `@/router/${zid}/config/plugins/storage_manager/${kind}/${name}`;
}

function removeButton(zid: string, kind: "storages" | "volumes", name: string): HTMLElement {
  const b = h("button", {
    type: "button",
    class: "danger admin-write",
    "aria-label": `Remove ${kind === "storages" ? "storage" : "volume"} ${name}`,
    text: "Remove",
  });
  b.hidden = !adminWritable;
  b.addEventListener("click", () =>
    armOrRun(b, "Remove", () => {
      void adminWrite(
        "DELETE",
        configUrl(zid, kind, name),
        undefined,
        `Removed ${kind === "storages" ? "storage" : "volume"} ${name}`,
      );
    }),
  );
  return b;
}

function renderStorageManager(entries: Entry[]): void {
  const storages: HTMLElement[] = [];
  const volumes: HTMLElement[] = [];
  const volumeNames = new Set<string>();
  for (const e of entries) {
    const parts = e.key.split("/");
    const zid = parts[2] ?? "";
    const kind = parts[parts.length - 2];
    const name = parts[parts.length - 1] ?? "";
    const v = obj(e.value);
    const error = typeof v.error === "string" ? h("div", { class: "error small", text: v.error }) : "";
    if (kind === "storages") {
      const volume = typeof v.volume === "string" ? v.volume : JSON.stringify(v.volume ?? "");
      storages.push(
        h(
          "tr",
          {},
          cell(code(zid)),
          cell(name, error),
          cell(code(String(v.key_expr ?? ""))),
          cell(code(volume)),
          cell(removeButton(zid, "storages", name)),
        ),
      );
    } else if (kind === "volumes") {
      volumeNames.add(name);
      const rm = name === "memory" ? "" : removeButton(zid, "volumes", name);
      volumes.push(h("tr", {}, cell(code(zid)), cell(name, error), cell(code(JSON.stringify(v))), cell(rm)));
    }
  }
  tbody("storages").replaceChildren(...storages);
  tbody("volumes").replaceChildren(...volumes);
  $("volume-names").replaceChildren(...[...volumeNames].map((n) => h("option", { value: n })));
}

async function adminWrite(
  method: "PUT" | "DELETE",
  key: string,
  body: string | undefined,
  done: string,
): Promise<void> {
  const out = $("admin-status");
  try {
    const res = await write(method, key, body, body === undefined ? undefined : "application/json");
    if (!res.ok) {
      status(out, false, `Refused: ${await reasonOf(res)}`);
      return;
    }
    await loadAdmin();
    status(out, true, done);
  } catch (err) {
    status(out, false, `Failed: ${(err as Error).message}`);
  }
}

/**
 * May this client change the admin space? A PUT on an admin key no router takes answers 404 to a
 * client allowed to write the admin space and 401/403 to one that is not, and changes nothing.
 */
async function probeAdminWrites(): Promise<void> {
  let reason = "";
  try {
    const res = await fetch("/@/explorer/write-probe", { method: "PUT", body: "" });
    adminWritable = res.status === 404;
    if (!adminWritable) reason = await reasonOf(res);
  } catch (err) {
    reason = (err as Error).message;
  }
  for (const el of document.querySelectorAll<HTMLElement>(".admin-write")) el.hidden = !adminWritable;
  if (!adminWritable) $("admin-status").after(h("p", { class: "small muted", text: `Read-only here: ${reason}` }));
}

function setupAdminForms(): void {
  $("admin-refresh").addEventListener("click", () => void loadAdmin());
  $<HTMLFormElement>("storage-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    const f = ev.target as HTMLFormElement;
    const val = (name: string): string => (f.elements.namedItem(name) as HTMLInputElement).value.trim();
    let config: Record<string, unknown>;
    try {
      const volumeText = val("volume") || "memory";
      const volume: unknown = volumeText.startsWith("{") ? JSON.parse(volumeText) : volumeText;
      config = { ...(val("options") ? obj(JSON.parse(val("options"))) : {}), key_expr: val("key_expr"), volume };
    } catch (err) {
      status($("admin-status"), false, `Not JSON: ${(err as Error).message}`);
      return;
    }
    void adminWrite(
      "PUT",
      configUrl(val("router") || "local", "storages", val("name")),
      JSON.stringify(config),
      `Created storage ${val("name")}`,
    );
  });
  $<HTMLFormElement>("volume-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    const f = ev.target as HTMLFormElement;
    const val = (name: string): string => (f.elements.namedItem(name) as HTMLInputElement).value.trim();
    void adminWrite(
      "PUT",
      configUrl(val("router") || "local", "volumes", val("name")),
      val("config"),
      `Created volume ${val("name")}`,
    );
  });
}

// ---------------------------------------------------------------------------------------------

function start(): void {
  const tree = $("tree");
  tree.addEventListener("keydown", onTreeKey);
  tree.addEventListener("click", onTreeClick);
  $<HTMLFormElement>("select-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    const sel = ($("selector") as HTMLInputElement).value.trim() || "**";
    selectedPath = undefined;
    void load(sel);
  });
  setupWriteForm();
  setupAdminForms();
  const fromHash = location.hash.startsWith("#sel=") ? decodeURIComponent(location.hash.slice(5)) : "";
  const selector = fromHash || "**";
  ($("selector") as HTMLInputElement).value = selector;
  // The admin space once the tree is drawn: the router answers the big GET first.
  void load(selector).finally(() => probeAdminWrites().then(() => loadAdmin()));
  // Keeps "n s ago" honest for the key on show (only the text of its time: no scroll lost).
  setInterval(() => {
    if (document.hidden) return;
    for (const dd of document.querySelectorAll<HTMLElement>("#detail-body dd[data-time]"))
      dd.textContent = describeTime(dd.dataset.time ?? "None");
  }, 10_000);
}

start();

export {};
