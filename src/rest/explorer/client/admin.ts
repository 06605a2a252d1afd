/**
 * The admin space (docs/explorer.md, "What it shows" and "Who may write"): every router with its
 * fabric peers, every storage and volume, and forms to create and remove them on any router of
 * the cluster, shown only when this client may write the admin space.
 */
import { $, armOrRun, type Entry, h, reasonOf, status, urlOf } from "./dom.js";
import { write } from "./forms.js";

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

export async function loadAdmin(): Promise<void> {
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
export async function probeAdminWrites(): Promise<void> {
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

export function setupAdminForms(): void {
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
