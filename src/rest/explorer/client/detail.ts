/**
 * The detail pane (docs/explorer.md, "What it shows"): the selected key's value or values, and a
 * button that reads the subtree under it.
 */
import { $, h, SHOW_SELECTOR } from "./dom.js";
import { lookup, state } from "./state.js";
import { valueView } from "./values.js";

/** Draws the detail pane for the selected key. */
export function renderDetail(): void {
  const title = $("detail-title");
  const body = $("detail-body");
  const selectedPath = state.selectedPath;
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
      document.dispatchEvent(new CustomEvent<string>(SHOW_SELECTOR, { detail: `${node.path}/**` }));
    });
    parts.push(h("div", { class: "row" }, sub));
  }
  body.replaceChildren(...parts);
}
