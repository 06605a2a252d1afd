/**
 * The explorer page's script (docs/explorer.md), run in the browser. esbuild bundles this entry
 * and the modules it imports into the one asset served as `/?_explorer=app.js`
 * (scripts/build-explorer.mjs); tsconfig.explorer.json type-checks them with the DOM library,
 * apart from the server code. It only speaks the Variant A REST API of the router that served it.
 * Stored data is only ever put in the page as text (`textContent`, `value`), never as markup.
 */
import { loadAdmin, probeAdminWrites, setupAdminForms } from "./admin.js";
import { $, SHOW_SELECTOR } from "./dom.js";
import { setupWriteForm } from "./forms.js";
import { load } from "./live.js";
import { state } from "./state.js";
import { onTreeClick, onTreeKey } from "./tree.js";
import { describeTime, tickCountdowns } from "./values.js";

function start(): void {
  const tree = $("tree");
  tree.addEventListener("keydown", onTreeKey);
  tree.addEventListener("click", onTreeClick);
  $<HTMLFormElement>("select-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    const sel = ($("selector") as HTMLInputElement).value.trim() || "**";
    state.selectedPath = undefined;
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
  // Countdowns of keys with a lifetime tick; the key's row goes when its expiry's DELETE comes.
  setInterval(() => {
    if (!document.hidden) tickCountdowns();
  }, 200);
  document.addEventListener(SHOW_SELECTOR, (ev) => void load((ev as CustomEvent<string>).detail));
}

start();
