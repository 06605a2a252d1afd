/**
 * What every part of the explorer page shares (docs/explorer.md): the entry type of the Variant A
 * answers, element helpers that only ever put data in the page as text, the router's reasons,
 * and the two-step confirm button.
 */

/** One entry of a Variant A GET or SSE message. */
export interface Entry {
  key: string;
  value: unknown;
  encoding: string;
  time: string;
  /** The deadline (RFC 3339) of a value with a lifetime, null for a permanent one (`?_expires=true`). */
  expires?: string | null;
}

/** The element with this id; the page always has it. */
export const $ = <T extends HTMLElement>(id: string): T => {
  const el = document.getElementById(id);
  if (!el) throw new Error(`missing #${id}`);
  return el as T;
};

/** Creates an element; strings become text nodes, never markup. */
export function h<K extends keyof HTMLElementTagNameMap>(
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
export function urlOf(selector: string): string {
  return `/${encodeURI(selector).replace(/#/g, "%23")}`;
}

/** The URL of a selector whose entries name their deadlines (docs/ttl-and-leases.md). */
export function urlWithExpires(selector: string): string {
  const url = urlOf(selector);
  return `${url}${url.includes("?") ? "&" : "?"}_expires=true`;
}

/** A refusal or failure, as the one-line reason the router gave. */
export async function reasonOf(res: Response): Promise<string> {
  const text = (await res.text()).trim();
  return `${res.status} ${text || res.statusText}`;
}

/** Shows an outcome in a status line. */
export function status(el: HTMLElement, ok: boolean, text: string): void {
  el.className = `small ${ok ? "ok" : "error"}`;
  el.textContent = text;
}

/** The one button armed by `armOrRun`, waiting for its second press. */
let armed: HTMLButtonElement | undefined;

/**
 * A two-step button: the first press arms it ("Confirm ..."), the second within 5 s runs `act`.
 * No `confirm()` dialog, so it works the same from the keyboard and on a phone.
 */
export function armOrRun(button: HTMLButtonElement, label: string, act: () => void): void {
  if (armed === button) {
    armed = undefined;
    delete button.dataset.armed;
    button.textContent = label;
    act();
    return;
  }
  if (armed) {
    delete armed.dataset.armed;
    armed.textContent = armed.dataset.label ?? "Delete";
  }
  armed = button;
  button.dataset.armed = "true";
  button.dataset.label = label;
  button.textContent = `Confirm ${label.toLowerCase()}`;
  setTimeout(() => {
    if (armed !== button) return;
    armed = undefined;
    delete button.dataset.armed;
    button.textContent = label;
  }, 5000);
}

/**
 * The event a part of the page sends to have another selector read (`detail` is the selector).
 * Sent on `document`; the loader listens. A DOM event rather than an import keeps the parts
 * free of import circles.
 */
export const SHOW_SELECTOR = "zest-show-selector";
