/**
 * How the explorer shows a value (docs/explorer.md, "What it shows"): by its encoding, JSON
 * pretty-printed, text as text, binary as hex and base64, with its size and timestamp. Data only
 * ever lands in `textContent`.
 */
import { type Entry, h } from "./dom.js";

/** Bytes of a binary value shown in the hex dump. */
const HEX_LIMIT = 4096;

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
export function isBinary(e: Entry): boolean {
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

/** A Variant A time as a person reads it: the instant, how long ago, and the router. */
export function describeTime(time: string): string {
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

/**
 * The time left before a deadline (`expires`, RFC 3339) as the countdown shows it: tenths of a
 * second under 10 s, then seconds, minutes, hours, days.
 */
export function timeLeftText(expires: string, now = Date.now()): string {
  const ms = Date.parse(expires) - now;
  if (Number.isNaN(ms)) return "";
  if (ms <= 0) return "expiring";
  if (ms < 10_000) return `${(Math.floor(ms / 100) / 10).toFixed(1)} s`;
  const s = Math.floor(ms / 1000);
  if (s < 90) return `${s} s`;
  if (s < 5400) return `${Math.floor(s / 60)} min`;
  if (s < 129600) return `${Math.floor(s / 3600)} h`;
  return `${Math.floor(s / 86400)} days`;
}

/** A countdown element for a deadline: its text is kept current by `tickCountdowns`. */
export function countdown(tag: "span" | "dd", expires: string, cls: string): HTMLElement {
  const el = h(tag, { class: cls, title: `expires ${expires}`, text: timeLeftText(expires) });
  el.dataset.expires = expires;
  return el;
}

/** Sets the text of every countdown on the page (only their text: no redraw, no scroll lost). */
export function tickCountdowns(): void {
  const now = Date.now();
  for (const el of document.querySelectorAll<HTMLElement>("[data-expires]"))
    el.textContent = timeLeftText(el.dataset.expires ?? "", now);
}

/** The short form of a value shown beside its key in the tree. */
export function previewOf(e: Entry): string {
  const v = e.value;
  if (typeof v !== "string") return JSON.stringify(v).slice(0, 80);
  if (isBinary(e)) return `${base64Size(v)} bytes`;
  return v.length > 80 ? `${v.slice(0, 80)}…` : v;
}

/** The value of one entry, shown by encoding; data only ever lands in `textContent`. */
export function valueView(e: Entry): HTMLElement[] {
  const out: HTMLElement[] = [];
  const meta = h("dl", { class: "meta" });
  const add = (term: string, desc: string): HTMLElement => {
    const dd = h("dd", { text: desc });
    meta.append(h("dt", { text: term }), dd);
    return dd;
  };
  add("encoding", e.encoding);
  add("time", describeTime(e.time)).dataset.time = e.time;
  if (typeof e.expires === "string")
    meta.append(h("dt", { text: "expires in" }), countdown("dd", e.expires, "expires"));
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
