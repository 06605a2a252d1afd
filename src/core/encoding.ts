/**
 * Encodings are MIME strings (`text/plain`, `application/json`, ...), as Zenoh shows them.
 * The empty string means "no encoding given".
 */
export type Encoding = string;

/** The encodings zest knows by name (Zenoh 0.6 list, in its index order). */
export const Encoding = {
  EMPTY: "",
  APP_OCTET_STREAM: "application/octet-stream",
  APP_CUSTOM: "application/custom",
  TEXT_PLAIN: "text/plain",
  APP_PROPERTIES: "application/properties",
  APP_JSON: "application/json",
  APP_SQL: "application/sql",
  APP_INTEGER: "application/integer",
  APP_FLOAT: "application/float",
  APP_XML: "application/xml",
  APP_XHTML_XML: "application/xhtml+xml",
  APP_X_WWW_FORM_URLENCODED: "application/x-www-form-urlencoded",
  TEXT_JSON: "text/json",
  TEXT_HTML: "text/html",
  TEXT_XML: "text/xml",
  TEXT_CSS: "text/css",
  TEXT_CSV: "text/csv",
  TEXT_JAVASCRIPT: "text/javascript",
  IMAGE_JPEG: "image/jpeg",
  IMAGE_PNG: "image/png",
  IMAGE_GIF: "image/gif",
} as const;

/**
 * The encoding of an HTTP `Content-Type` header: its essence (type/subtype, lower-cased,
 * parameters dropped). An absent header gives `application/octet-stream` (the seed's default).
 */
export function encodingFromContentType(contentType: string | undefined): Encoding {
  if (contentType === undefined) return Encoding.APP_OCTET_STREAM;
  const semi = contentType.indexOf(";");
  const essence = (semi === -1 ? contentType : contentType.slice(0, semi)).trim().toLowerCase();
  return essence === "" ? Encoding.APP_OCTET_STREAM : essence;
}

/** Parses an `application/properties` payload: `k=v;k=v` or one per line, `=` or `:` separators, `#` comments. */
export function parseProperties(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const raw of text.split(/[;\n]/)) {
    const entry = raw.trim();
    if (entry === "" || entry.startsWith("#")) continue;
    const eq = entry.search(/[=:]/);
    if (eq === -1) out[entry] = "";
    else out[entry.slice(0, eq).trim()] = entry.slice(eq + 1).trim();
  }
  return out;
}
