import type { Buffer } from "node:buffer";
import { Encoding } from "../core/encoding.js";
import { errorMessage, toZestError, ZestError } from "../core/errors.js";
import type { Reply } from "../core/reply.js";
import type { Sample } from "../core/sample.js";
import { Parameters } from "../core/selector.js";
import { parseInstant } from "../core/time-range.js";
import { nowUnixNanos } from "../core/timestamp.js";
import { AdminSpaceB } from "../admin/admin-space-b.js";
import { checkKeyExprLimits, keyExprToPath, pathToKeyExpr, type KeyExprLimits } from "../keyexpr/index.js";
import type { RestCodec, RestVariant } from "./codec.js";
import { decodePath } from "./paths.js";
import { CACHED_VALUE_BYTES, jsonValue, utf8 } from "./render-value.js";
import { sortInSlices } from "../core/slices.js";
import type { Layout } from "./layout.js";
import { expiresJson } from "./lifetime.js";
import { adminConfigPath, nameParam, type OpenApiPart, zidParam } from "./openapi.js";

const ADMIN_ALIAS = "/@/router/local";
const ROUTER_PREFIX = "@/router/";
const HEX = /^[0-9a-fA-F]+$/;

/**
 * Variant B shows router ids in lowercase (`/@/router/<pid>`, as zenoh 0.4 did) while the router
 * and its admin space use uppercase internally: the id chunk is uppercased on the way in and
 * lowercased on the way out, so either case works in a URL and every router id (this one or a
 * remote one) maps the same way.
 */
function adminIdToInternal(ke: string): string {
  if (!ke.startsWith(ROUTER_PREFIX)) return ke;
  const end = ke.indexOf("/", ROUTER_PREFIX.length);
  const id = end === -1 ? ke.slice(ROUTER_PREFIX.length) : ke.slice(ROUTER_PREFIX.length, end);
  if (!HEX.test(id)) return ke;
  return ROUTER_PREFIX + id.toUpperCase() + (end === -1 ? "" : ke.slice(end));
}

/** A canonical key as Variant B shows it: `/` + key, legacy `*`, lowercase router id. */
export function keyToPathB(key: string): string {
  const path = keyExprToPath(key);
  if (!path.startsWith(`/${ROUTER_PREFIX}`)) return path;
  const start = ROUTER_PREFIX.length + 1;
  const end = path.indexOf("/", start);
  const id = end === -1 ? path.slice(start) : path.slice(start, end);
  if (!HEX.test(id)) return path;
  return path.slice(0, start) + id.toLowerCase() + (end === -1 ? "" : path.slice(end));
}

/** Content types stored as strings (zenoh 0.4's STRING encoding). */
const STRING_TYPES = new Set(["application/x-www-form-urlencoded", "application/xml", "application/xhtml+xml"]);

/**
 * The seed's Variant B mapping: text types, form data and XML are strings (`text/plain`), JSON is
 * JSON, and anything else, or no content type at all, is RAW (`application/octet-stream`).
 */
export function encodingForB(contentType: string | undefined): string {
  if (contentType === undefined) return Encoding.APP_OCTET_STREAM;
  const semi = contentType.indexOf(";");
  const essence = (semi === -1 ? contentType : contentType.slice(0, semi)).trim().toLowerCase();
  if (essence === Encoding.APP_JSON) return Encoding.APP_JSON;
  if (essence.startsWith("text/") || STRING_TYPES.has(essence)) return Encoding.TEXT_PLAIN;
  return Encoding.APP_OCTET_STREAM;
}

function isJsonEncoding(encoding: string): boolean {
  return encoding === Encoding.APP_JSON || encoding === Encoding.TEXT_JSON || encoding.endsWith("+json");
}

/** Rendered values are cached per payload buffer: storages hand out the same buffer each GET. */
const valueCache = new WeakMap<Buffer, { json: string | undefined; other: string | undefined }>();

/**
 * A payload as a Variant B JSON value (docs/rest-gateway.md §B.2): JSON encodings as JSON (the original text
 * without insignificant whitespace; malformed JSON falls back to a string), everything else as a
 * properly escaped string, or as a base64 string when the bytes are not UTF-8, so the body is
 * always valid JSON.
 */
export function renderValueB(payload: Buffer, encoding: string): string {
  const json = isJsonEncoding(encoding);
  if (payload.length < CACHED_VALUE_BYTES) return computeValueB(payload, json);
  let slot = valueCache.get(payload);
  const hit = slot && (json ? slot.json : slot.other);
  if (hit !== undefined) return hit;
  const out = computeValueB(payload, json);
  if (!slot) {
    slot = { json: undefined, other: undefined };
    valueCache.set(payload, slot);
  }
  if (json) slot.json = out;
  else slot.other = out;
  return out;
}

function computeValueB(payload: Buffer, json: boolean): string {
  const text = utf8(payload);
  if (text === undefined) return JSON.stringify(payload.toString("base64"));
  return json ? jsonValue(text) : JSON.stringify(text);
}

/** One entry in zenoh 0.4's three-line layout. */
function entry(key: string, value: string, time: string): string {
  return `{ "key": ${JSON.stringify(key)},\n  "value": ${value},\n  "time": "${time}" }`;
}

function sampleEntry(sample: Sample): string {
  return entry(
    keyToPathB(sample.key),
    renderValueB(sample.payload, sample.encoding),
    sample.timestamp ? sample.timestamp.toRfc3339() : "None",
  );
}

/** An entry asked with `?(_expires=true)`: the same, then `"expires"`, the deadline or null. */
function sampleEntryExpires(sample: Sample): string {
  const e = sampleEntry(sample);
  return `${e.slice(0, -2)},\n  "expires": ${expiresJson(sample.deadline)} }`;
}

/**
 * Orders replies for Variant B: descending key order (as 0.4 printed them), the newest first
 * within one key, and a reply identical to one already kept (same key, same timestamp: the same
 * sample held by overlapping storages) dropped. Replies without a timestamp are all kept.
 */
export async function orderRepliesB(replies: Reply[]): Promise<Sample[]> {
  const samples: Sample[] = [];
  for (const r of replies) if (r.kind === "ok") samples.push(r.sample);
  await sortInSlices(samples, descending);
  const out: Sample[] = [];
  for (const s of samples) {
    const prev = out[out.length - 1];
    if (prev && prev.key === s.key && prev.timestamp && s.timestamp && prev.timestamp.compare(s.timestamp) === 0)
      continue;
    out.push(s);
  }
  return out;
}

function descending(a: Sample, b: Sample): number {
  if (a.key !== b.key) return a.key < b.key ? 1 : -1;
  if (a.timestamp && b.timestamp) return b.timestamp.compare(a.timestamp);
  // Timestamped (stored) samples before computed ones; otherwise keep arrival order.
  return a.timestamp ? -1 : b.timestamp ? 1 : 0;
}

/** Validates a B time property (`starttime`/`stoptime`, InfluxDB syntax such as `now()-1m`). */
function checkInstant(name: string, value: string, now: bigint): bigint {
  try {
    return parseInstant(value, now);
  } catch (err) {
    throw ZestError.badRequest(
      `invalid ${name} "${value}": ${errorMessage(err).replace(/^invalid time "[^"]*":?\s*/, "") || "expected an RFC 3339 instant, now() or now()-<duration>"}`,
    );
  }
}

/**
 * Variant B selector properties → the parameters the queryables receive, as `k=v&k=v` with each
 * name and value percent-encoded (so `;`, `&` or brackets inside a value never split it).
 * `?(name=Bob)` passes `name=Bob` on; `starttime`/`stoptime` (zenoh 0.4's InfluxDB properties)
 * also become the `_time=[start..stop]` range every time-series storage understands. A time
 * that does not parse is a 400 here, before any storage is asked.
 */
export function parametersB(query: string): string {
  if (query === "") return "";
  const props = new Map(new Parameters(query).entries());
  const start = props.get("starttime");
  const stop = props.get("stoptime");
  const encode = (k: string, v: string): string => `${encodeURIComponent(k)}=${encodeURIComponent(v)}`;
  const parts = [...props].map(([k, v]) => encode(k, v));
  // A malformed `_time` is a 400 in either variant: the server checks it before the query.
  if (start === undefined && stop === undefined) return parts.join("&");
  if (props.has("_time")) throw ZestError.badRequest("give either _time or starttime/stoptime, not both");
  const now = nowUnixNanos();
  const a = start === undefined ? undefined : checkInstant("starttime", start, now);
  const b = stop === undefined ? undefined : checkInstant("stoptime", stop, now);
  if (a !== undefined && b !== undefined && a > b)
    throw ZestError.badRequest(`starttime "${start}" is after stoptime "${stop}"`);
  parts.push(encode("_time", `[${start ?? ""}..${stop ?? ""}]`));
  return parts.join("&");
}

/**
 * Variant B: the zenoh 0.4 HTTP plugin's face (docs/rest-gateway.md §B), with its decisions: escaped values, `[]` when nothing matches, descending key order, duplicate
 * replies shown once, no SSE.
 */
export const codecB: RestCodec = {
  writeStatus: 204,
  corsOnEveryWrite: true,
  etags: false,
  explorer: false,
  verbatimParameters: false,
  canonicalKeys: false,
  adminConfigPath: AdminSpaceB.storageConfigPath,

  pathToKey(path: string, zid: string, write: boolean, limits?: KeyExprLimits): string {
    let p = decodePath(path);
    // The alias is chunk-bounded (0.4 replaced a plain 15-character prefix, so `/@/router/localx`
    // became `/@/router/<pid>x`; nobody wants that).
    if (p === ADMIN_ALIAS || p.startsWith(`${ADMIN_ALIAS}/`)) p = `/@/router/${zid}${p.slice(ADMIN_ALIAS.length)}`;
    let ke: string;
    try {
      ke = pathToKeyExpr(p, { expr: !write });
    } catch (err) {
      throw ZestError.badRequest(errorMessage(err), err);
    }
    try {
      checkKeyExprLimits(ke, limits);
    } catch (err) {
      throw toZestError(err);
    }
    return adminIdToInternal(ke);
  },

  parameters: parametersB,

  encodingFor: encodingForB,

  // Variant B has no HTML face: zenoh 0.4 ignored `Accept`.
  async layout(replies: Reply[], _html: boolean, expires = false): Promise<Layout> {
    const samples = await orderRepliesB(replies);
    const errors: Array<Reply & { kind: "err" }> = [];
    for (const r of replies) if (r.kind === "err") errors.push(r);
    const n = samples.length;
    // 0.4 sent no Content-Type; we say what the body is, so clients and browsers need not guess.
    return {
      contentType: "application/json",
      open: "[\n",
      separator: ",\n",
      close: "\n]",
      empty: "[]",
      count: n + errors.length,
      entry: (i) => {
        if (i < n) return expires ? sampleEntryExpires(samples[i]!) : sampleEntry(samples[i]!);
        const e = errors[i - n]!;
        return entry("ERROR", renderValueB(e.payload, e.encoding), "None");
      },
    };
  },
};

const properties = { schema: { type: "string" } };

/** Variant B's part of the OpenAPI document (docs/openapi.md). */
const openApiB: OpenApiPart = {
  title: "zest REST API, Variant B (zenoh 0.4 HTTP)",
  entry: {
    type: "object",
    required: ["key", "value", "time"],
    properties: { key: { type: "string" }, value: {}, time: { type: "string" } },
    additionalProperties: false,
  },
  writeStatus: "204",
  sse: false,
  example: "/demo/example/**",
  adminConfig: {
    "/@/router/{zid}/plugin/storages/backend/{backend}/storage/{name}": adminConfigPath(
      "204",
      "storage",
      "backend storages",
      "Creates a storage on a backend (properties)",
      {
        "text/plain": properties,
        "application/properties": properties,
        "application/json": { schema: { type: "object" } },
      },
      [
        zidParam,
        {
          name: "backend",
          in: "path",
          required: true,
          description: "`memory`, `sqlite3` or `influxdb`",
          schema: { type: "string" },
        },
        nameParam("storage"),
      ],
    ),
  },
};

/** Variant B: its codec, its admin layout (zenoh 0.4's `plugin/storages/backend/...`) and its OpenAPI part. */
export const variantB: RestVariant = {
  name: "b",
  description: "zenoh 0.4 style",
  codec: codecB,
  admin: (session, manager, sources) => new AdminSpaceB(session, manager, sources),
  openApi: openApiB,
};
