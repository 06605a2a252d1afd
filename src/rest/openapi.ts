/**
 * The OpenAPI 3.1 description of the REST gateway, for either variant, with the admin space
 * (docs/openapi.md). Served at `@/router/<zid>/openapi`; built from data, once per router.
 */
import { Encoding } from "../core/encoding.js";
import type { Session } from "../core/session.js";

export type Json = Record<string, unknown>;

export const text = { schema: { type: "string" } };
const errorResponse = (description: string): Json => ({ description, content: { "text/plain": text } });

/** Error answers common to every operation: a one-line reason as plain text. */
const ERRORS: Json = {
  "400": errorResponse("Bad input: an invalid key expression, selector parameter or value"),
  "401": errorResponse("Credentials are required"),
  "403": errorResponse("Not allowed for this client"),
  "413": errorResponse("The request body is larger than the limit"),
  "414": errorResponse("The URL is too long"),
  "500": errorResponse("Internal error"),
  "503": errorResponse("A storage or another router is unavailable"),
  "504": errorResponse("A queryable did not answer in time"),
};

const keyexprParam = (example: string): Json => ({
  name: "keyexpr",
  in: "path",
  required: true,
  description:
    "A key expression. It spans several path segments (`/` separates chunks); `*` matches one chunk, `**` any number.",
  schema: { type: "string" },
  example,
});

export const zidParam: Json = {
  name: "zid",
  in: "path",
  required: true,
  description: "A router id in hex, or `local` for the router answering",
  schema: { type: "string" },
};
export const nameParam = (what: string): Json => ({
  name: "name",
  in: "path",
  required: true,
  description: `The ${what}'s name`,
  schema: { type: "string" },
});

const queryParams: Json[] = [
  {
    name: "_time",
    in: "query",
    required: false,
    description: "A time range `[start..end]` for time-series storages",
    schema: { type: "string" },
  },
  {
    name: "_raw",
    in: "query",
    required: false,
    description:
      "`true`: the first reply's payload as the body, with its encoding as `Content-Type`; 404 when nothing answers",
    schema: { type: "string", enum: ["true", "false"] },
  },
  {
    name: "_wait",
    in: "query",
    required: false,
    description:
      "Long-poll (docs/long-poll.md): with `If-None-Match`, wait up to this long (`500ms`, `30s`, `5m`) for the answer's ETag to change; 304 when it does not",
    schema: { type: "string" },
  },
  {
    name: "_anyke",
    in: "query",
    required: false,
    description: "Keep replies on keys outside the key expression",
    schema: { type: "string" },
  },
];

const sseParams: Json[] = [
  {
    name: "_snapshot",
    in: "query",
    required: false,
    description:
      "SSE only: `true` sends the current value of every matching key first (PUT events without ids), then `SNAPSHOT_END`, then the live changes",
    schema: { type: "string", enum: ["true", "false"] },
  },
  {
    name: "_last_event_id",
    in: "query",
    required: false,
    description: "SSE only: resume after this event id (the `Last-Event-ID` header wins)",
    schema: { type: "string" },
  },
  {
    name: "Last-Event-ID",
    in: "header",
    required: false,
    description: "SSE only: resume after this event id, as EventSource sends it",
    schema: { type: "string" },
  },
];

/** Conditional requests (docs/rest-gateway.md §A.4). */
const conditionParams: Json[] = [
  {
    name: "If-Match",
    in: "header",
    required: false,
    description:
      'Apply only if the key holds one of these versions (`"<etag>"`, a list, or `*`: it holds a value); otherwise 412',
    schema: { type: "string" },
  },
  {
    name: "If-None-Match",
    in: "header",
    required: false,
    description: "Writes: `*` creates only if the key holds no value. GET: 304 while the ETag matches",
    schema: { type: "string" },
  },
];
const etagHeaders: Json = {
  ETag: {
    description: "The version of the one key answered or written (Variant B: only when a condition was sent)",
    schema: { type: "string" },
  },
};
const conditionResponses: Json = {
  "412": errorResponse("The condition (If-Match, If-None-Match) does not hold: nothing changed"),
};
const writeResponses = (status: string): Json => ({
  [status]: { description: "Applied: every storage holding the key has the sample" },
  "404": errorResponse("No admin entry takes writes at this path"),
  "409": errorResponse("Conflicts with the current configuration"),
  ...ERRORS,
});
const dataWriteResponses = (status: string): Json => ({
  ...writeResponses(status),
  [status]: { description: "Applied: every storage holding the key has the sample", headers: etagHeaders },
  "405": errorResponse("A conditional write on a key no storage on this router holds"),
  ...conditionResponses,
});

const anyBody: Json = {
  required: false,
  description: "The value; its `Content-Type` becomes the encoding",
  content: { "*/*": { schema: {} } },
};

/**
 * What differs between the variants: each variant's own part of the document, registered with
 * it (`RestVariant.openApi`), so this module names no variant.
 */
export interface OpenApiPart {
  readonly title: string;
  /** The JSON schema of one entry of a GET answer. */
  readonly entry: Json;
  /** Status of a successful write ("200", "204"). */
  readonly writeStatus: string;
  /** Whether `Accept: text/event-stream` opens an SSE stream. */
  readonly sse: boolean;
  /** A key expression as the variant's paths write it. */
  readonly example: string;
  /** Admin paths of storages (and volumes) by their key in `paths`. */
  readonly adminConfig: Json;
}

/** The path item of an admin config entry (a storage or a volume): PUT a config, DELETE it. */
export function adminConfigPath(
  writeStatus: string,
  what: "storage" | "volume",
  path: string,
  summary: string,
  requestContent: Json = {
    "application/json": { schema: { type: "object" } },
    "application/json5": { schema: { type: "string" } },
  },
  parameters: Json[] = [zidParam, nameParam(what)],
): Json {
  return {
    parameters,
    put: {
      summary,
      operationId: `put${what}`,
      requestBody: { required: true, content: requestContent },
      responses: writeResponses(writeStatus),
    },
    delete: {
      summary: `Removes a ${what}`,
      operationId: `delete${what}`,
      responses: writeResponses(writeStatus),
    },
    description: `Path: ${path}`,
  };
}

/** Builds the document for one variant (the one a router serves) from its part. */
export function openApiDocument(v: OpenApiPart, version: string): Json {
  const entries = { schema: { type: "array", items: { $ref: "#/components/schemas/Entry" } } };
  const getContent: Json = { "application/json": entries, "text/html": text };
  if (v.sse)
    getContent["text/event-stream"] = {
      schema: {
        type: "string",
        description:
          "With `Accept: text/event-stream`: a live stream of `PUT`/`DELETE` events with ids, and `RESET` when missed events are not known",
      },
    };
  getContent["*/*"] = {
    schema: { description: "With `_raw=true`: the first reply's payload, its encoding as the content type" },
  };
  const adminGet = (summary: string, operationId: string): Json => ({
    parameters: [zidParam],
    get: {
      summary,
      operationId,
      responses: { "200": { description: "The entry", content: { "application/json": entries } }, ...ERRORS },
    },
  });
  const paths: Json = {
    "/@/router/{zid}": adminGet(
      "The router's status: id, version, locators, plugins, sessions, fabric",
      "routerStatus",
    ),
    "/@/router/{zid}/metrics": {
      parameters: [zidParam],
      get: {
        summary: "Prometheus metrics; read with `?_raw=true` or `Accept: text/plain`",
        operationId: "metrics",
        parameters: [queryParams[1]],
        responses: {
          "200": {
            description: "Prometheus text format 0.0.4 (raw), or the entry",
            content: { "text/plain": text, "application/json": entries },
          },
          ...ERRORS,
        },
      },
    },
    "/@/router/{zid}/openapi": {
      parameters: [zidParam],
      get: {
        summary: "This document; read with `?_raw=true`",
        operationId: "openapi",
        parameters: [queryParams[1]],
        responses: {
          "200": {
            description: "The OpenAPI document (raw), or the entry",
            content: { "application/json": { schema: { type: ["object", "array"] } } },
          },
          ...ERRORS,
        },
      },
    },
    ...v.adminConfig,
    "/{keyexpr}": {
      parameters: [keyexprParam(v.example)],
      get: {
        summary: "Queries every storage, eval and admin entry matching the key expression",
        description: "A body, if any, is the query's payload, with its `Content-Type` as encoding (docs/raw.md).",
        operationId: "get",
        parameters: [...(v.sse ? [...queryParams, ...sseParams] : queryParams), ...conditionParams],
        requestBody: { required: false, description: "The query payload", content: { "*/*": { schema: {} } } },
        responses: {
          "200": { description: "The matching entries", content: getContent, headers: etagHeaders },
          "304": { description: "If-None-Match matched: the key still holds that version", headers: etagHeaders },
          "404": errorResponse("`_raw=true` and nothing answered"),
          ...conditionResponses,
          ...ERRORS,
        },
      },
      put: {
        summary: "Writes a value",
        operationId: "put",
        parameters: conditionParams,
        requestBody: anyBody,
        responses: dataWriteResponses(v.writeStatus),
      },
      patch: {
        summary: "Writes a value (as PUT)",
        operationId: "patch",
        parameters: conditionParams,
        requestBody: anyBody,
        responses: dataWriteResponses(v.writeStatus),
      },
      delete: {
        summary: "Deletes the matching keys",
        operationId: "delete",
        parameters: conditionParams,
        responses: dataWriteResponses(v.writeStatus),
      },
    },
  };
  return {
    openapi: "3.1.0",
    info: {
      title: v.title,
      version,
      description:
        "A key/value router with a REST gateway. Paths are key expressions; the admin space lives under `@`.",
      license: { name: "Apache-2.0", identifier: "Apache-2.0" },
    },
    paths,
    components: {
      schemas: {
        Entry: v.entry,
      },
    },
  };
}

/**
 * Serves the document at `@/router/<zid>/openapi` (JSON, read it whole with `?_raw=true`) while
 * the REST door runs: it depends only on the variant, the version and the router, so it is built
 * once, at the first read.
 */
export function declareOpenApi(session: Session, part: OpenApiPart, version: string): { close(): void } {
  const key = `@/router/${session.zid}/openapi`;
  let text: string | undefined;
  const q = session.declareQueryable(key, (query) => {
    text ??= JSON.stringify(openApiDocument(part, version));
    query.reply(key, text, { encoding: Encoding.APP_JSON });
  });
  return { close: () => q.undeclare() };
}
