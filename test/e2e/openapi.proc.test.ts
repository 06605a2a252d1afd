/**
 * The OpenAPI document (docs/openapi.md): valid OpenAPI 3.1 for both variants (checked with a
 * maintained validator), served raw from the admin space, and true to the real responses of a
 * few requests: status codes, content types and JSON bodies against the response schemas.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { Validator } from "@seriousme/openapi-schema-validator";
import { Ajv2020 } from "ajv/dist/2020.js";
import { openApiDocument } from "../../src/rest/openapi.js";
import { BUILTIN_VARIANTS } from "../../src/rest/variants.js";
import { http, type HttpResult } from "../support/http.js";
import { startZest, zestForSuite, type ZestProcess } from "../support/zest-process.js";

// biome-ignore lint/suspicious/noExplicitAny: the test walks a parsed OpenAPI document freely
type Doc = Record<string, any>;

test("the documents of both variants are valid OpenAPI 3.1", async () => {
  for (const variant of BUILTIN_VARIANTS) {
    const result = await new Validator().validate(openApiDocument(variant.openApi, "0.0.0"));
    assert.equal(result.valid, true, `variant ${variant.name}: ${JSON.stringify(result.errors, null, 1)}`);
  }
});

const ajv = new Ajv2020({ strict: false, allErrors: true });

/**
 * Checks a real response against the document: the status is listed for the operation, the
 * media type is one of its content types (or it has none), and a JSON body matches the schema.
 */
function conforms(doc: Doc, path: string, method: string, r: HttpResult): void {
  const op = doc.paths[path]?.[method];
  assert.ok(op, `${method.toUpperCase()} ${path} is documented`);
  const response = op.responses[String(r.status)];
  assert.ok(
    response,
    `${method.toUpperCase()} ${path}: status ${r.status} is documented (${Object.keys(op.responses).join(", ")})`,
  );
  const type = (r.headers.get("content-type") ?? "").split(";")[0]!.trim();
  if (response.content === undefined) {
    assert.equal(r.text, "", `${r.status} has no body`);
    return;
  }
  const media = response.content[type] ?? response.content["*/*"];
  assert.ok(
    media,
    `${method.toUpperCase()} ${path} ${r.status}: content type ${type} is documented (${Object.keys(response.content).join(", ")})`,
  );
  if (type === "application/json") {
    const validate = ajv.compile({ ...media.schema, components: doc.components });
    assert.ok(
      validate(JSON.parse(r.text)),
      `${method.toUpperCase()} ${path} ${r.status}: ${ajv.errorsText(validate.errors)}`,
    );
  }
}

describe("OpenAPI against a Variant A router", () => {
  let z: ZestProcess;
  let doc: Doc;
  before(async () => {
    z = await startZest(["-P", "examples/eval-plugin.js"]);
  });
  after(() => z.stop());

  test("the document is served raw as JSON at @/router/local/openapi", async () => {
    const r = await http(z.url, "GET", "/@/router/local/openapi?_raw=true");
    assert.equal(r.status, 200);
    assert.equal(r.headers.get("content-type"), "application/json");
    doc = JSON.parse(r.text) as Doc;
    assert.equal(doc.openapi, "3.1.0");
    assert.match(doc.info.title, /Variant A/);
    assert.equal((await new Validator().validate(doc)).valid, true);
  });

  test("real responses conform: GET, PUT, DELETE, 400, 404, admin GET, storage config", async () => {
    const text = { "content-type": "text/plain" };
    conforms(doc, "/{keyexpr}", "put", await http(z.url, "PUT", "/oa/a", { body: "x", headers: text }));
    conforms(
      doc,
      "/{keyexpr}",
      "put",
      await http(z.url, "PUT", "/oa/j", { body: '{"n":1}', headers: { "content-type": "application/json" } }),
    );
    conforms(doc, "/{keyexpr}", "get", await http(z.url, "GET", "/oa/**"));
    conforms(doc, "/{keyexpr}", "get", await http(z.url, "GET", "/oa/a?_raw=true"));
    conforms(doc, "/{keyexpr}", "get", await http(z.url, "GET", "/demo/example/zest-eval"));
    conforms(doc, "/{keyexpr}", "delete", await http(z.url, "DELETE", "/oa/a"));
    const bad = await http(z.url, "GET", "/oa//x");
    assert.equal(bad.status, 400);
    conforms(doc, "/{keyexpr}", "get", bad);
    const none = await http(z.url, "GET", "/oa/none?_raw=true");
    assert.equal(none.status, 404);
    conforms(doc, "/{keyexpr}", "get", none);
    conforms(doc, "/@/router/{zid}", "get", await http(z.url, "GET", "/@/router/local"));
    conforms(doc, "/@/router/{zid}/metrics", "get", await http(z.url, "GET", "/@/router/local/metrics?_raw=true"));
    const storage = "/@/router/{zid}/config/plugins/storage_manager/storages/{name}";
    conforms(
      doc,
      storage,
      "put",
      await http(z.url, "PUT", "/@/router/local/config/plugins/storage_manager/storages/oa", {
        body: '{key_expr:"oa2/**",volume:"memory"}',
        headers: { "content-type": "application/json" },
      }),
    );
    const invalid = await http(z.url, "PUT", "/@/router/local/config/plugins/storage_manager/storages/oa3", {
      body: "{nope",
      headers: { "content-type": "application/json" },
    });
    assert.equal(invalid.status, 400);
    conforms(doc, storage, "put", invalid);
    conforms(
      doc,
      storage,
      "delete",
      await http(z.url, "DELETE", "/@/router/local/config/plugins/storage_manager/storages/oa"),
    );
  });
});

describe("OpenAPI against a Variant B router", () => {
  const z = zestForSuite(["--rest-variant", "b"]);

  test("the served document describes Variant B, and its responses conform", async () => {
    const r = await http(z.url, "GET", "/@/router/local/openapi?_raw=true");
    assert.equal(r.status, 200);
    const doc = JSON.parse(r.text) as Doc;
    assert.match(doc.info.title, /Variant B/);
    conforms(
      doc,
      "/{keyexpr}",
      "put",
      await http(z.url, "PUT", "/ob/a", { body: "x", headers: { "content-type": "text/plain" } }),
    );
    conforms(doc, "/{keyexpr}", "get", await http(z.url, "GET", "/ob/**"));
    conforms(doc, "/{keyexpr}", "delete", await http(z.url, "DELETE", "/ob/a"));
  });
});
