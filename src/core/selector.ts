import { ZestError } from "./errors.js";
import { parseTimeRange, type TimeRange } from "./time-range.js";

/**
 * Selector parameters. Accepts the seed form `(a=b;c=d)` (docs/key-expressions.md §1.6), and `a=b&c=d` / `a=b;c=d`; names and
 * values are percent-decoded, and in the `&` form a `+` is a space (URL form decoding, as a
 * browser form sends it). The first occurrence of a name wins.
 */
export class Parameters {
  private readonly map: Map<string, string>;
  /** The parameter string as given (without `?`). */
  readonly raw: string;
  /** `null` until `timeRange` parsed `_time`. */
  private range: TimeRange | undefined | null = null;

  constructor(raw = "") {
    this.raw = raw;
    this.map = parseParameters(raw);
  }

  get(name: string): string | undefined {
    return this.map.get(name);
  }
  has(name: string): boolean {
    return this.map.has(name);
  }
  get size(): number {
    return this.map.size;
  }
  entries(): IterableIterator<[string, string]> {
    return this.map.entries();
  }
  /**
   * The `_time` range, if given; throws a 400 ZestError when it does not parse. Parsed once: the
   * REST layer checks it and every storage the query reaches reads it, all with the same `now()`.
   */
  timeRange(): TimeRange | undefined {
    if (this.range === null) {
      const t = this.map.get("_time");
      this.range = t === undefined ? undefined : parseTimeRange(t);
    }
    return this.range;
  }
  toString(): string {
    return this.raw;
  }
}

/** Percent-decodes; `form` (the `&` form, URL-form encoded as in docs/rest-gateway.md §A.1) also reads `+` as a space. */
function decode(s: string, form: boolean): string {
  if (form && s.includes("+")) s = s.replace(PLUS, " ");
  if (!s.includes("%")) return s;
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}

const PLUS = /\+/g;

function addEntry(map: Map<string, string>, entry: string, form: boolean): void {
  const e = entry.trim();
  if (e === "") return;
  const eq = e.indexOf("=");
  const name = decode(eq === -1 ? e : e.slice(0, eq), form).trim();
  const value = eq === -1 ? "" : decode(e.slice(eq + 1), form);
  if (name !== "" && !map.has(name)) map.set(name, value);
}

function parseParameters(raw: string): Map<string, string> {
  const map = new Map<string, string>();
  let s = decodeParens(raw);
  while (s.length > 0) {
    if (s[0] === "(") {
      const close = matchingParen(s);
      if (close === -1) throw ZestError.badRequest(`invalid selector parameters "${raw}": missing ")"`);
      for (const e of s.slice(1, close).split(";")) addEntry(map, e, false);
      s = s.slice(close + 1).replace(/^[&;]+/, "");
      continue;
    }
    const next = s.search(/[&;]/);
    const entry = next === -1 ? s : s.slice(0, next);
    // `_time=[a;1h]` holds a `;` inside brackets: keep the bracketed part whole.
    const open = entry.indexOf("[");
    if (open !== -1 && !entry.includes("]")) {
      const close = s.indexOf("]", open);
      const end = close === -1 ? s.length : close + 1;
      addEntry(map, s.slice(0, end), true);
      s = s.slice(end).replace(/^[&;]+/, "");
      continue;
    }
    addEntry(map, entry, true);
    s = next === -1 ? "" : s.slice(next + 1);
  }
  return map;
}

/** Index of the `)` closing the `(` at 0, so values such as `now()-1m` keep their parentheses. */
function matchingParen(s: string): number {
  let depth = 0;
  for (let i = 0; i < s.length; i++) {
    if (s[i] === "(") depth++;
    else if (s[i] === ")" && --depth === 0) return i;
  }
  return -1;
}

/** Browsers and curl may send `(` `)` percent-encoded; the parenthesised form needs them raw. */
function decodeParens(raw: string): string {
  return raw.replace(/%28/gi, "(").replace(/%29/gi, ")");
}

/** A key expression plus parameters: what a query asks for. */
export interface Selector {
  /** Canonical key expression. */
  readonly key: string;
  readonly parameters: Parameters;
}

/** Splits `ke?params` at the first `?` (the key part is returned as given, not validated). */
export function splitSelector(s: string): { key: string; parameters: string } {
  const q = s.indexOf("?");
  return q === -1 ? { key: s, parameters: "" } : { key: s.slice(0, q), parameters: s.slice(q + 1) };
}
