/**
 * `_raw=true` and the GET body as query payload (docs/raw.md), against the real `zest` command
 * in both variants.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { getWithBody, http } from "../support/http.js";
import { zestForSuite } from "../support/zest-process.js";

describe("_raw=true and GET bodies, Variant A", () => {
  const z = zestForSuite([
    "-P",
    "test/fixtures/echo-payload-plugin.js",
    "-P",
    "examples/eval-plugin.js",
    "--cfg",
    "plugins/rest/body_limit:1024",
  ]);

  test("_raw=true answers the first reply's payload as the body, with its encoding as Content-Type", async () => {
    await http(z.url, "PUT", "/raw/b", { body: "second", headers: { "content-type": "text/csv" } });
    await http(z.url, "PUT", "/raw/a", { body: '{"x": [1, 2]}', headers: { "content-type": "application/json" } });
    const r = await http(z.url, "GET", "/raw/*?_raw=true");
    assert.equal(r.status, 200);
    assert.equal(r.headers.get("content-type"), "application/json");
    assert.equal(r.text, '{"x": [1, 2]}', "the bytes as stored, first key first");
    const b = await http(z.url, "GET", "/raw/b?_raw=true");
    assert.equal(b.headers.get("content-type"), "text/csv");
    assert.equal(b.text, "second");
  });

  test("_raw=true on binary keeps the bytes", async () => {
    const bytes = Buffer.from([0, 255, 1, 254, 10]);
    await fetch(`${z.url}/raw/bin`, { method: "PUT", body: bytes });
    const res = await fetch(`${z.url}/raw/bin?_raw=true`);
    assert.equal(res.headers.get("content-type"), "application/octet-stream");
    assert.deepEqual(Buffer.from(await res.arrayBuffer()), bytes);
  });

  test("_raw=true with no reply is a 404, not an empty 200", async () => {
    const r = await http(z.url, "GET", "/raw/nothing/here?_raw=true");
    assert.equal(r.status, 404);
    assert.match(r.text, /no value matches raw\/nothing\/here/);
  });

  test("_raw=false and no _raw render the usual JSON", async () => {
    for (const q of ["?_raw=false", ""]) {
      const r = await http(z.url, "GET", `/raw/b${q}`);
      assert.equal(r.headers.get("content-type"), "application/json");
      assert.equal((JSON.parse(r.text) as unknown[]).length, 1);
    }
  });

  test("a GET body is the query payload, with its content type as encoding", async () => {
    const r = await getWithBody(z.url, "/test/echo?_raw=true", "hello from the body", {
      "content-type": "text/x-custom; charset=utf-8",
    });
    assert.equal(r.status, 200);
    assert.equal(r.text, "hello from the body");
    assert.equal(r.headers.get("content-type"), "text/x-custom;echo");
    const none = await http(z.url, "GET", "/test/echo?_raw=true");
    assert.equal(none.text, "no payload");
    const octets = await getWithBody(z.url, "/test/echo?_raw=true", "x");
    assert.equal(
      octets.headers.get("content-type"),
      "application/octet-stream;echo",
      "no content type: octet-stream, as for PUT",
    );
  });

  test("the example eval reads the GET body: curl -X GET -d Alice answers Eval from Alice", async () => {
    const r = await getWithBody(z.url, "/demo/example/zest-eval?_raw=true", "Alice", { "content-type": "text/plain" });
    assert.equal(r.text, "Eval from Alice");
  });

  test("a GET body larger than the body limit is a 413, as for PUT", async () => {
    const r = await getWithBody(z.url, "/test/echo", "x".repeat(2048), { "content-type": "text/plain" });
    assert.equal(r.status, 413);
  });
});

describe("_raw=true, Variant B", () => {
  const z = zestForSuite(["--rest-variant", "b"]);

  test("Variant B answers _raw=true the same way: the value, its encoding, 404 when nothing answers", async () => {
    await http(z.url, "PUT", "/rawb/a", { body: '{"b":1}', headers: { "content-type": "application/json" } });
    const r = await http(z.url, "GET", "/rawb/a?_raw=true");
    assert.equal(r.status, 200);
    assert.equal(r.headers.get("content-type"), "application/json");
    assert.equal(r.text, '{"b":1}');
    assert.equal((await http(z.url, "GET", "/rawb/none?_raw=true")).status, 404);
  });
});
