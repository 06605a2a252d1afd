/**
 * A REST variant is one file plus one line (docs/rest-gateway.md, "Variants"): the test variant
 * "c" (variant-c/variant.ts), given to `startZest` with `variants: [variantC]`, becomes a choice of
 * `plugins.rest.variant` and `adminspace.layout`, and everything the router shows about its
 * variant comes from it: the write status, SSE, the explorer page, the OpenAPI document and the
 * metrics label. Without that line, "c" is refused naming the choices.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { ConfigError } from "../../src/config/config.js";
import { silentLogger } from "../../src/core/log.js";
import { AdminSpace } from "../../src/admin/admin-space.js";
import { AdminSpaceB } from "../../src/admin/admin-space-b.js";
import { startZest, type Zest } from "../../src/runtime.js";
import { http } from "../support/http.js";
import { variantC } from "./variant-c/variant.js";

describe("a REST variant registered with one line", () => {
  let zest: Zest;
  let url: string;
  before(async () => {
    zest = await startZest(
      { plugins: { rest: { http_port: "127.0.0.1:0", variant: "c" } } },
      { logger: silentLogger, variants: [variantC] },
    );
    url = zest.restUrl!;
  });
  after(() => zest.close());

  test("its codec answers: writes with its status, reads in its layout", async () => {
    assert.equal(
      (await http(url, "PUT", "/c/one", { body: "1", headers: { "content-type": "text/plain" } })).status,
      201,
    );
    const r = await http(url, "GET", "/c/one");
    assert.equal(r.status, 200);
    assert.match(r.text, /^\[\n\{ "key": "c\/one", "value": "1", "encoding": "text\/plain"/);
  });

  test("without SSE in its codec, Accept: text/event-stream is an ordinary GET", async () => {
    const r = await http(url, "GET", "/c/one", { headers: { accept: "text/event-stream" } });
    assert.equal(r.status, 200);
    assert.match(r.headers.get("content-type") ?? "", /^application\/json/);
    assert.match(r.text, /"key": "c\/one"/);
  });

  test("without the explorer flag, / for a browser is no explorer page", async () => {
    const r = await http(url, "GET", "/", { headers: { accept: "text/html" } });
    assert.doesNotMatch(r.text, /<html/i);
  });

  test("its OpenAPI part and its name reach the admin space and the metrics", async () => {
    const zid = zest.router.zid;
    const doc = JSON.parse((await http(url, "GET", `/@/router/${zid}/openapi?_raw=true`)).text) as {
      info: { title: string };
      paths: Record<string, { put?: { responses: Record<string, unknown> } }>;
    };
    assert.equal(doc.info.title, "zest REST API, Variant C (tests)");
    assert.ok(doc.paths["/{keyexpr}"]?.put?.responses["201"], "the write status of its part");
    const metrics = (await http(url, "GET", `/@/router/${zid}/metrics?_raw=true`)).text;
    assert.match(metrics, /zest_http_requests_total\{method="PUT",variant="c",status="201"\} 1/);
  });

  test("the admin layout follows the variant: its admin space is the one it registered", () => {
    assert.ok(zest.admin instanceof AdminSpace);
  });
});

test("adminspace.layout names another registered layout than the REST variant's", async () => {
  const zest = await startZest(
    { plugins: { rest: { http_port: "127.0.0.1:0", variant: "c" } }, adminspace: { layout: "b" } },
    { logger: silentLogger, variants: [variantC] },
  );
  try {
    assert.ok(zest.admin instanceof AdminSpaceB);
    const zid = zest.router.zid;
    const [reply] = await zest.session.get(`@/router/${zid}/plugin/storages`);
    assert.equal(reply?.kind, "ok");
  } finally {
    await zest.close();
  }
});

test("a variant that is not registered is refused, naming the choices", async () => {
  await assert.rejects(
    startZest({ plugins: { rest: { http_port: "127.0.0.1:0", variant: "c" } } }, { logger: silentLogger }),
    (err: unknown) =>
      err instanceof ConfigError && /plugins\.rest\.variant/.test(err.message) && /"a"\|"b"/.test(err.message),
  );
  await assert.rejects(
    startZest({ adminspace: { layout: "c" } }, { logger: silentLogger }),
    (err: unknown) => err instanceof ConfigError && /adminspace\.layout/.test(err.message),
  );
});

test("two different variants of one name are refused", async () => {
  await assert.rejects(
    startZest({}, { logger: silentLogger, variants: [{ ...variantC, name: "a" }] }),
    /two REST variants are named a/,
  );
});
