import { Buffer } from "node:buffer";
import { encodingFromContentType } from "../core/encoding.js";
import { toKeyExpr } from "../core/key.js";
import type { Reply } from "../core/reply.js";
import type { KeyExprLimits } from "../keyexpr/index.js";
import type { Sample } from "../core/sample.js";
import { AdminSpace } from "../admin/admin-space.js";
import type { RestCodec, RestVariant } from "./codec.js";
import type { Rendered } from "./layout.js";
import { escapeHtml, renderValueJson, utf8 } from "./render-value.js";
import { decodePath } from "./paths.js";
import type { Layout } from "./layout.js";
import { expiresJson } from "./lifetime.js";
import { adminConfigPath, type OpenApiPart } from "./openapi.js";

const ROUTER_PREFIX = "@/router/";

/**
 * `@/router/local...` and `@/local/router...` (docs/rest-gateway.md §A.5) name this router. Router ids are shown
 * in uppercase; a hex id chunk is uppercased, so `@/router/0a0b/...` names router `0A0B`.
 */
function resolveAdminAlias(key: string, zid: string): string {
  if (key === "@/router/local" || key === "@/local/router" || key === "@/local") return `@/router/${zid}`;
  if (key.startsWith("@/router/local/")) return `@/router/${zid}/${key.slice(15)}`;
  if (key.startsWith("@/local/router/")) return `@/router/${zid}/${key.slice(15)}`;
  if (key.startsWith(ROUTER_PREFIX)) return upperRouterId(key);
  return key;
}

function upperRouterId(key: string): string {
  const start = ROUTER_PREFIX.length;
  let end = key.indexOf("/", start);
  if (end === -1) end = key.length;
  let lower = false;
  for (let i = start; i < end; i++) {
    const c = key.charCodeAt(i);
    if (c >= 0x61 && c <= 0x66)
      lower = true; // a-f
    else if (!((c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x46))) return key; // not hex: not an id
  }
  return lower ? ROUTER_PREFIX + key.slice(start, end).toUpperCase() + key.slice(end) : key;
}

/** One entry line: `{ "key": ..., "value": ..., "encoding": ..., "time": ... }`; `cached: false` for a live event (see `renderValueJson`). */
export function entryJson(sample: Sample, cached = true): string {
  const time = sample.timestamp ? sample.timestamp.toString() : "None";
  return `{ "key": ${JSON.stringify(sample.key)}, "value": ${renderValueJson(sample.payload, sample.encoding, cached)}, "encoding": ${encodingJson(sample.encoding)}, "time": "${time}" }`;
}

/** An entry line asked with `?_expires=true`: the same, then `"expires"`, the deadline or null. */
export function entryJsonExpires(sample: Sample, cached = true): string {
  const time = sample.timestamp ? sample.timestamp.toString() : "None";
  return `{ "key": ${JSON.stringify(sample.key)}, "value": ${renderValueJson(sample.payload, sample.encoding, cached)}, "encoding": ${encodingJson(sample.encoding)}, "time": "${time}", "expires": ${expiresJson(sample.deadline)} }`;
}

/** The encoding as a JSON string; the last one is remembered (the entries of an answer mostly share one). */
function encodingJson(encoding: string): string {
  if (encoding !== lastEncoding) {
    lastEncoding = encoding;
    lastEncodingJson = JSON.stringify(encoding);
  }
  return lastEncodingJson;
}
let lastEncoding = "";
let lastEncodingJson = '""';

function errorEntryJson(r: Reply & { kind: "err" }): string {
  return `{ "key": "ERROR", "value": ${renderValueJson(r.payload, r.encoding)}, "encoding": ${JSON.stringify(r.encoding)}}`;
}

function replyJson(r: Reply): string {
  return r.kind === "ok" ? entryJson(r.sample) : errorEntryJson(r);
}

function replyJsonExpires(r: Reply): string {
  return r.kind === "ok" ? entryJsonExpires(r.sample) : errorEntryJson(r);
}

function sampleHtml(s: Sample): string {
  return `<dt>${escapeHtml(s.key)}</dt>\n<dd>${escapeHtml(utf8(s.payload) ?? s.payload.toString("base64"))}</dd>\n`;
}

function replyHtml(r: Reply): string {
  return r.kind === "ok"
    ? sampleHtml(r.sample)
    : `<dt>ERROR</dt>\n<dd>${escapeHtml(r.payload.toString("utf8"))}</dd>\n`;
}

/** The framing of a JSON answer, and of an HTML one (`<dl>`): what a layout adds around its entries. */
const JSON_FRAME = { contentType: "application/json", open: "[\n", separator: ",\n", close: "\n]\n" } as const;
const HTML_FRAME = {
  contentType: "text/html; charset=utf-8",
  open: "<dl>\n",
  separator: "\n",
  close: "\n</dl>\n",
} as const;

/** Variant A's codec: Zenoh 0.6 REST, with zest's own decisions (valid JSON always, sorted keys). */
export const codecA: RestCodec = {
  writeStatus: 200,
  corsOnEveryWrite: false,
  etags: true,
  explorer: true,
  verbatimParameters: true,
  canonicalKeys: true,
  adminConfigPath: AdminSpace.storageConfigPath,

  pathToKey(path: string, zid: string, _write: boolean, limits?: KeyExprLimits): string {
    return toKeyExpr(resolveAdminAlias(decodePath(path).slice(1), zid), limits);
  },

  parameters(query: string): string {
    return query;
  },

  encodingFor: encodingFromContentType,

  async layout(replies: Reply[], html: boolean, expires = false): Promise<Layout> {
    const count = replies.length;
    if (html) return { ...HTML_FRAME, count, entry: (i) => replyHtml(replies[i]!) };
    return expires
      ? { ...JSON_FRAME, count, entry: (i) => replyJsonExpires(replies[i]!) }
      : { ...JSON_FRAME, count, entry: (i) => replyJson(replies[i]!) };
  },

  layoutSamples(samples: readonly Sample[], html: boolean, expires = false): Layout {
    const count = samples.length;
    if (html) return { ...HTML_FRAME, count, entry: (i) => sampleHtml(samples[i]!) };
    return expires
      ? { ...JSON_FRAME, count, entry: (i) => entryJsonExpires(samples[i]!) }
      : { ...JSON_FRAME, count, entry: (i) => entryJson(samples[i]!) };
  },

  renderNow(replies: readonly Reply[]): Rendered {
    // One entry (a single key's answer) is the common case: no array, no join.
    const body =
      replies.length === 1 ? `[\n${replyJson(replies[0]!)}\n]\n` : `[\n${replies.map(replyJson).join(",\n")}\n]\n`;
    return { contentType: "application/json", body };
  },

  // Not cached here: the SSE hub encodes a sample once for all its streams.
  sseEvent(sample: Sample): Buffer {
    return Buffer.from(`event: ${sample.kind === "put" ? "PUT" : "DELETE"}\ndata: ${entryJson(sample, false)}\n\n`);
  },

  sseEventExpires(sample: Sample): Buffer {
    return Buffer.from(
      `event: ${sample.kind === "put" ? "PUT" : "DELETE"}\ndata: ${entryJsonExpires(sample, false)}\n\n`,
    );
  },
};

/** Variant A's part of the OpenAPI document (docs/openapi.md). */
const openApiA: OpenApiPart = {
  title: "zest REST API, Variant A (zenoh 0.6 REST)",
  entry: {
    type: "object",
    description:
      "One reply. `time` is `<RFC 3339>/<router id>`, or `None` for computed replies; error replies have the key `ERROR` and no time.",
    required: ["key", "value", "encoding"],
    properties: { key: { type: "string" }, value: {}, encoding: { type: "string" }, time: { type: "string" } },
    additionalProperties: false,
  },
  writeStatus: "200",
  sse: true,
  example: "demo/example/**",
  adminConfig: {
    "/@/router/{zid}/config/plugins/storage_manager/storages/{name}": adminConfigPath(
      "200",
      "storage",
      "storages",
      "Creates or replaces a storage (JSON5 config)",
    ),
    "/@/router/{zid}/config/plugins/storage_manager/volumes/{name}": adminConfigPath(
      "200",
      "volume",
      "volumes",
      "Creates or replaces a volume (JSON5 config)",
    ),
  },
};

/** Variant A: its codec, its admin layout (`config/` and `status/`) and its OpenAPI part. */
export const variantA: RestVariant = {
  name: "a",
  description: "zenoh 0.6 style",
  codec: codecA,
  admin: (session, manager, sources) => new AdminSpace(session, manager, sources),
  openApi: openApiA,
};
