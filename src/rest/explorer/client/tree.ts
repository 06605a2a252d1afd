/**
 * The key tree (docs/explorer.md, "What it shows" and "Keyboard and small screens"): an ARIA
 * tree with one tab stop, drawn level by level from the shared state, with "show more" rows.
 */
import { $, h } from "./dom.js";
import { renderDetail } from "./detail.js";
import { fillWriteForm } from "./forms.js";
import { lookup, PAGE_ROWS, sortedChildren, state, type TreeNode } from "./state.js";
import { countdown, previewOf } from "./values.js";

/** One row of the drawn tree. */
interface Row {
  node: TreeNode;
  level: number;
  pos: number;
  size: number;
  /** A "show more" row for `node`'s children. */
  more?: number;
}

/** Rows opened at first sight: whole levels open while the tree stays this short. */
const AUTO_ROWS = 30;

/** Opens the first levels, one whole level at a time, as long as the tree fits in AUTO_ROWS rows. */
export function autoExpand(): void {
  let shown = state.root.children.size;
  let level = sortedChildren(state.root).filter((n) => n.children.size > 0);
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
  walk(state.root, 1);
  return rows;
}

const rowNode = new WeakMap<Element, Row>();
let renderPending = false;

export function scheduleRender(): void {
  if (renderPending) return;
  renderPending = true;
  requestAnimationFrame(() => {
    renderPending = false;
    renderTree();
    renderDetail();
  });
}

export function renderTree(): void {
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
      li.setAttribute("aria-selected", String(node.path === state.selectedPath));
      li.dataset.path = node.path;
      li.append(
        h("span", { class: "twisty", "aria-hidden": "true", text: branch ? (node.expanded ? "▾" : "▸") : "" }),
        h("span", { class: "name", text: node.name || "(empty chunk)" }),
      );
      if (branch) li.append(h("span", { class: "count", title: `${node.count} keys`, text: String(node.count) }));
      const expires = node.entry?.expires;
      if (typeof expires === "string") li.append(countdown("span", expires, "ttl"));
      if (node.entry) li.append(h("span", { class: "preview", text: previewOf(node.entry) }));
    }
    if (li.dataset.path === state.focusPath) focusEl = li;
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
  state.focusPath = el.dataset.path;
  el.focus();
}

function activate(row: Row, toggle: boolean): void {
  if (row.more !== undefined) {
    row.node.limit += PAGE_ROWS * 5;
    renderTree();
    return;
  }
  const node = row.node;
  state.focusPath = node.path;
  if (toggle && node.children.size > 0) node.expanded = !node.expanded;
  select(node.path);
}

function select(path: string): void {
  state.selectedPath = path;
  const node = lookup(path);
  if (node?.entry) fillWriteForm(node.entry);
  renderTree();
  renderDetail();
}

export function onTreeKey(ev: KeyboardEvent): void {
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
        state.focusPath = node.path;
        renderTree();
      } else focusRow(els[i + 1]);
      break;
    case "ArrowLeft":
      if (row.more === undefined && node.expanded && node.children.size > 0) {
        node.expanded = false;
        state.focusPath = node.path;
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

export function onTreeClick(ev: MouseEvent): void {
  const el = (ev.target as HTMLElement).closest<HTMLElement>('li[role="treeitem"]');
  const row = el && rowNode.get(el);
  if (!row || !el) return;
  state.focusPath = el.dataset.path;
  activate(row, true);
  el.focus();
}
