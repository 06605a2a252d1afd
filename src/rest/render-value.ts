import type { Buffer } from "node:buffer";
import { Encoding, parseProperties } from "../core/encoding.js";

/** A JSON number exactly as RFC 8259 spells it. */
const JSON_NUMBER = /^-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?$/;
const decoder = new TextDecoder("utf-8", { fatal: true });

/** The payload as UTF-8 text, or undefined when it is not valid UTF-8. */
export function utf8(payload: Buffer): string | undefined {
  try {
    return decoder.decode(payload);
  } catch {
    return undefined;
  }
}

/** Rendered values are cached per payload buffer: storages hand out the same buffer each GET. */
const cache = new WeakMap<Buffer, Map<string, string>>();
/**
 * Payloads shorter than this are rendered afresh each time: a WeakMap entry and a Map cost more
 * to make (and to collect: a wide GET renders 100,000 of them) than the rendering they spare.
 */
export const CACHED_VALUE_BYTES = 256;

/**
 * A payload as a JSON value (Variant A rules, docs/rest-gateway.md §A.2): always valid JSON whatever the
 * bytes. JSON encodings render as JSON when they parse, numbers as numbers, properties as an
 * object, text as a string; anything else, or text that is not UTF-8, as a base64 string.
 * `cached: false` for a payload rendered once as it passes (a live event): a `WeakMap` keeps its
 * values through a young-generation collection even once the key is gone, so caching a passing
 * payload only makes the collector copy it.
 */
export function renderValueJson(payload: Buffer, encoding: string, cached = true): string {
  if (!cached || payload.length < CACHED_VALUE_BYTES) return computeValueJson(payload, encoding);
  let byEnc = cache.get(payload);
  const hit = byEnc?.get(encoding);
  if (hit !== undefined) return hit;
  const out = computeValueJson(payload, encoding);
  if (!byEnc) {
    byEnc = new Map();
    cache.set(payload, byEnc);
  }
  byEnc.set(encoding, out);
  return out;
}

function computeValueJson(payload: Buffer, encoding: string): string {
  const kind = valueKind(encoding);
  if (kind === "binary") return JSON.stringify(payload.toString("base64"));
  if (kind === "text" && payload.length <= SHORT_TEXT_BYTES) {
    const quoted = quotedPlainAscii(payload);
    if (quoted !== undefined) return quoted;
  }
  const text = utf8(payload);
  if (text === undefined) return JSON.stringify(payload.toString("base64"));
  switch (kind) {
    case "json":
      return jsonValue(text);
    case "number": {
      if (JSON_NUMBER.test(text)) return text;
      const t = text.trim();
      const n = t === "" ? Number.NaN : Number(t);
      return Number.isFinite(n) ? String(n) : JSON.stringify(text);
    }
    case "properties":
      return JSON.stringify(parseProperties(text));
    default:
      return JSON.stringify(text);
  }
}

/**
 * Text payloads up to this size are first tried as plain ASCII in JavaScript: a wide GET renders
 * one per entry, and most are short, where decoding through `TextDecoder` and quoting through
 * `JSON.stringify` cost three times as much as the loop.
 */
const SHORT_TEXT_BYTES = 64;

/**
 * `JSON.stringify` of the payload's text when every byte is printable ASCII other than `"` and
 * `\` (the text needs no escape, and is its own UTF-8 decoding); undefined otherwise.
 */
function quotedPlainAscii(payload: Buffer): string | undefined {
  let out = '"';
  for (let i = 0; i < payload.length; i++) {
    const c = payload[i]!;
    if (c < 0x20 || c > 0x7e || c === 0x22 || c === 0x5c) return undefined;
    out += String.fromCharCode(c);
  }
  return `${out}"`;
}

/**
 * A JSON payload's text as a JSON value, in both variants: parsed only to validate, then kept as
 * written (a parse/stringify round trip turns 12345678901234567890 into 12345678901234567000),
 * on one line for the layout and SSE framing. Malformed JSON becomes a JSON string.
 */
export function jsonValue(text: string): string {
  try {
    JSON.parse(text);
  } catch {
    return JSON.stringify(text);
  }
  return compactJson(text);
}

/**
 * Valid JSON text without the insignificant whitespace outside strings: one line (JSON strings
 * cannot hold a raw newline), every number and escape spelled as the writer spelled it.
 */
function compactJson(text: string): string {
  let out = "";
  let from = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c)
        i++; // backslash: the next character is escaped
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) {
      inString = true;
    } else if (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) {
      if (i > from) out += text.slice(from, i);
      from = i + 1;
    }
  }
  return from === 0 ? text : out + text.slice(from);
}

type ValueKind = "json" | "number" | "properties" | "text" | "binary";

function valueKind(encoding: string): ValueKind {
  if (encoding === Encoding.APP_JSON || encoding === Encoding.TEXT_JSON || encoding.endsWith("+json")) return "json";
  if (encoding === Encoding.APP_INTEGER || encoding === Encoding.APP_FLOAT) return "number";
  if (encoding === Encoding.APP_PROPERTIES) return "properties";
  if (
    encoding.startsWith("text/") ||
    encoding === Encoding.APP_X_WWW_FORM_URLENCODED ||
    encoding === Encoding.APP_XML ||
    encoding === Encoding.APP_XHTML_XML ||
    encoding === Encoding.APP_SQL
  )
    return "text";
  return "binary";
}

/** Escapes text for HTML element content and attribute values. */
export function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) =>
    c === "&" ? "&amp;" : c === "<" ? "&lt;" : c === ">" ? "&gt;" : c === '"' ? "&quot;" : "&#39;",
  );
}
