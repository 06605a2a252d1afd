/**
 * The OpenAPI 3.1 description of the REST gateway, for either variant, with the admin space
 * (docs/openapi.md). Served at `@/router/<zid>/openapi`; built from data, once per router.
 */

type Json = Record<string, unknown>;

const text = { schema: { type: "string" } };
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

const zidParam: Json = {
  name: "zid",
  in: "path",
  required: true,
  description: "A router id in hex, or `local` for the router answering",
  schema: { type: "string" },
};
const nameParam = (what: string): Json => ({
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

/** What differs between the variants. */
interface VariantShape {
  readonly title: string;
  readonly entry: string;
  readonly writeStatus: string;
  readonly sse: boolean;
  readonly example: string;
  /** Admin paths of storages (and volumes, in A) by their key in `paths`. */
  readonly adminConfig: Json;
}

const writeResponses = (status: string): Json => ({
  [status]: { description: "Applied: every storage holding the key has the sample" },
  "404": errorResponse("No admin entry takes writes at this path"),
  "409": errorResponse("Conflicts with the current configuration"),
  ...ERRORS,
});

function variantShape(variant: "a" | "b"): VariantShape {
  const admin = (what: "storage" | "volume", path: string, summary: string): Json => ({
    parameters: [zidParam, nameParam(what)],
    put: {
      summary,
      operationId: `put${what}`,
      requestBody: {
        required: true,
        content: {
          "application/json": { schema: { type: "object" } },
          "application/json5": { schema: { type: "string" } },
        },
      },
      responses: writeResponses(variant === "a" ? "200" : "204"),
    },
    delete: {
      summary: `Removes a ${what}`,
      operationId: `delete${what}`,
      responses: writeResponses(variant === "a" ? "200" : "204"),
    },
    description: `Path: ${path}`,
  });
  if (variant === "a") {
    return {
      title: "zest REST API, Variant A (zenoh 0.6 REST)",
      entry: "EntryA",
      writeStatus: "200",
      sse: true,
      example: "demo/example/**",
      adminConfig: {
        "/@/router/{zid}/config/plugins/storage_manager/storages/{name}": admin(
          "storage",
          "storages",
          "Creates or replaces a storage (JSON5 config)",
        ),
        "/@/router/{zid}/config/plugins/storage_manager/volumes/{name}": admin(
          "volume",
          "volumes",
          "Creates or replaces a volume (JSON5 config)",
        ),
      },
    };
  }
  const b = admin("storage", "backend storages", "Creates a storage on a backend (properties)");
  b.parameters = [
    zidParam,
    {
      name: "backend",
      in: "path",
      required: true,
      description: "`memory`, `sqlite3` or `influxdb`",
      schema: { type: "string" },
    },
    nameParam("storage"),
  ];
  (b.put as Json).requestBody = {
    required: true,
    content: { "text/plain": text, "application/properties": text, "application/json": { schema: { type: "object" } } },
  };
  return {
    title: "zest REST API, Variant B (zenoh 0.4 HTTP)",
    entry: "EntryB",
    writeStatus: "204",
    sse: false,
    example: "/demo/example/**",
    adminConfig: { "/@/router/{zid}/plugin/storages/backend/{backend}/storage/{name}": b },
  };
}

/** Builds the document for one variant (the one a router serves). */
export function openApiDocument(variant: "a" | "b", version: string): Json {
  const v = variantShape(variant);
  const entries = { schema: { type: "array", items: { $ref: `#/components/schemas/${v.entry}` } } };
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
        EntryA: {
          type: "object",
          description:
            "One reply. `time` is `<RFC 3339>/<router id>`, or `None` for computed replies; error replies have the key `ERROR` and no time.",
          required: ["key", "value", "encoding"],
          properties: { key: { type: "string" }, value: {}, encoding: { type: "string" }, time: { type: "string" } },
          additionalProperties: false,
        },
        EntryB: {
          type: "object",
          required: ["key", "value", "time"],
          properties: { key: { type: "string" }, value: {}, time: { type: "string" } },
          additionalProperties: false,
        },
      },
    },
  };
}
