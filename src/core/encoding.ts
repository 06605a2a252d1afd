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
 * parameters dropped). An absent header gives `application/octet-stream` (docs/rest-gateway.md §A.2).
 */
export function encodingFromContentType(contentType: string | undefined): Encoding {
  if (contentType === undefined) return Encoding.APP_OCTET_STREAM;
  // A client mostly sends one Content-Type again and again: the last one is remembered, and the
  // same encoding string comes back (the storages then compare it by identity).
  if (contentType === lastContentType) return lastEncoding;
  const semi = contentType.indexOf(";");
  const essence = (semi === -1 ? contentType : contentType.slice(0, semi)).trim().toLowerCase();
  lastContentType = contentType;
  lastEncoding = essence === "" ? Encoding.APP_OCTET_STREAM : essence;
  return lastEncoding;
}
let lastContentType: string | undefined;
let lastEncoding: Encoding = Encoding.APP_OCTET_STREAM;

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

/**
 * Zenoh 1.x's predefined encodings by id (its wire table), as MIME strings. zest keeps an
 * encoding as its MIME string; the remote API sends the id, and a schema after `;`.
 */
const ZENOH_ENCODINGS: readonly string[] = [
  "zenoh/bytes",
  "zenoh/string",
  "zenoh/serialized",
  "application/octet-stream",
  "text/plain",
  "application/json",
  "text/json",
  "application/cdr",
  "application/cbor",
  "application/yaml",
  "text/yaml",
  "text/json5",
  "application/python-serialized-object",
  "application/protobuf",
  "application/java-serialized-object",
  "application/openmetrics-text",
  "image/png",
  "image/jpeg",
  "image/gif",
  "image/bmp",
  "image/webp",
  "application/xml",
  "application/x-www-form-urlencoded",
  "text/html",
  "text/xml",
  "text/css",
  "text/javascript",
  "text/markdown",
  "text/csv",
  "application/sql",
  "application/coap-payload",
  "application/json-patch+json",
  "application/json-seq",
  "application/jsonpath",
  "application/jwt",
  "application/mp4",
  "application/soap+xml",
  "application/yang",
  "audio/aac",
  "audio/flac",
  "audio/mp4",
  "audio/ogg",
  "audio/vorbis",
  "video/h261",
  "video/h263",
  "video/h264",
  "video/h265",
  "video/h266",
  "video/mp4",
  "video/ogg",
  "video/raw",
  "video/vp8",
  "video/vp9",
];
const ZENOH_ENCODING_IDS = new Map(ZENOH_ENCODINGS.map((mime, id) => [mime, id]));

/** Zenoh's id for a MIME type it does not know: the whole string then travels as the schema. */
export const ZENOH_CUSTOM_ENCODING = 0xffff;

/** zest encoding → Zenoh `(id, schema)`. The empty encoding is Zenoh's default, `zenoh/bytes`. */
export function toZenohEncoding(encoding: Encoding): { id: number; schema: string } {
  if (encoding === "") return { id: 0, schema: "" };
  const semi = encoding.indexOf(";");
  const mime = semi === -1 ? encoding : encoding.slice(0, semi);
  const id = ZENOH_ENCODING_IDS.get(mime);
  if (id === undefined) return { id: ZENOH_CUSTOM_ENCODING, schema: encoding };
  return { id, schema: semi === -1 ? "" : encoding.slice(semi + 1) };
}

/**
 * Zenoh `(id, schema)` → zest encoding: `mime` or `mime;schema`; a custom id gives its schema
 * (the whole MIME string); an id outside the table keeps its number as `zenoh/<id>`.
 */
export function fromZenohEncoding(id: number, schema: string): Encoding {
  if (id === ZENOH_CUSTOM_ENCODING) return schema;
  const mime = ZENOH_ENCODINGS[id] ?? `zenoh/${id}`;
  return schema === "" ? mime : `${mime};${schema}`;
}
