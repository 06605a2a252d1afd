/**
 * Loading and live updates (docs/explorer.md, "What it shows"): one GET of the selector builds a
 * new tree, and an SSE stream on its key expression keeps it current. Events that arrive while
 * the GET is in flight are applied after it.
 */
import { $, type Entry, reasonOf, urlWithExpires } from "./dom.js";
import { renderDetail } from "./detail.js";
import { collectExpanded, lookup, putEntry, removeEntry, state, TreeNode } from "./state.js";
import { autoExpand, renderTree, scheduleRender } from "./tree.js";

let source: EventSource | undefined;
let loadSeq = 0;
/** Events that arrived while a GET was in flight, applied after it. */
let buffered: Array<[kind: string, e: Entry]> | undefined;

function setLive(mode: "connecting" | "live" | "error", text: string): void {
  const el = $("live");
  el.dataset.state = mode;
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
  // Deadlines too: rows of keys with a lifetime count down (docs/explorer.md).
  const es = new EventSource(urlWithExpires(keyExprOf(selector)));
  source = es;
  es.addEventListener("open", () => {
    setLive("live", "live");
    document.body.dataset.live = "true";
    // Without a resume the router cannot replay what a broken stream missed: read again.
    if (failed) void load(state.liveSelector, false);
  });
  es.addEventListener("error", () => {
    failed = true;
    document.body.dataset.live = "false";
    setLive("error", es.readyState === EventSource.CLOSED ? "not live (reload to retry)" : "reconnecting");
  });
  es.addEventListener("PUT", (ev) => onEvent("PUT", (ev as MessageEvent<string>).data));
  es.addEventListener("DELETE", (ev) => onEvent("DELETE", (ev as MessageEvent<string>).data));
  // A gap the router's log could not fill: read everything again.
  es.addEventListener("RESET", () => void load(state.liveSelector, false));
}

/** Reads `selector` into a new tree; `resubscribe` also opens a new SSE stream on it. */
export async function load(selector: string, resubscribe = true): Promise<void> {
  const seq = ++loadSeq;
  const started = performance.now();
  const summary = $("summary");
  summary.className = "muted";
  summary.textContent = `Reading ${selector} …`;
  state.liveSelector = selector;
  if (location.hash !== `#sel=${encodeURIComponent(selector)}` && (selector !== "**" || location.hash))
    history.replaceState(null, "", `#sel=${encodeURIComponent(selector)}`);
  buffered = [];
  if (resubscribe) subscribe(selector);
  let entries: Entry[];
  let status: number;
  try {
    const res = await fetch(urlWithExpires(selector), { headers: { accept: "application/json" } });
    status = res.status;
    if (!res.ok && res.headers.get("content-type")?.startsWith("application/json") !== true)
      throw new Error(await reasonOf(res));
    entries = (await res.json()) as Entry[];
  } catch (err) {
    if (seq !== loadSeq) return;
    buffered = undefined;
    summary.className = "error";
    summary.textContent = `Cannot read ${selector}: ${(err as Error).message}`;
    state.root = new TreeNode("", "", undefined);
    renderTree();
    return;
  }
  if (seq !== loadSeq) return;
  const fetched = performance.now();
  const fresh = new TreeNode("", "", undefined);
  const expanded = collectExpanded(state.root);
  state.root = fresh;
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
  summary.textContent = `${state.root.count} key${state.root.count === 1 ? " matches" : "s match"} ${selector} · read in ${Math.round(fetched - started)} ms, shown in ${Math.round(rendered - fetched)} ms`;
  if (errors.length > 0 || status >= 400) {
    summary.className = "error";
    summary.textContent += ` · ${status}: ${errors.join("; ")}`;
  }
  if (seq === 1) {
    performance.mark("zest-tree-rendered");
    document.body.dataset.ready = "true";
  }
}
