/**
 * Conditional writes over HTTP (docs/storage-contract.md): ETags on single-key GETs, If-Match
 * and If-None-Match on writes, 412 when the condition fails, against a real router and server.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { http } from "../support/http.js";
import { routerForSuite, TEXT } from "../support/router.js";

describe("conditional writes over REST (Variant A)", () => {
  const suite = routerForSuite();

  it("a single-key GET answers the ETag of the stored sample; a wildcard GET answers none", async () => {
    assert.equal((await http(suite.url, "PUT", "/etag/a", { body: "v1", headers: TEXT })).status, 200);
    const got = await http(suite.url, "GET", "/etag/a");
    assert.match(got.headers.get("etag") ?? "", /^"[0-9a-f]{16}\/[0-9A-F]+"$/);
    assert.ok(
      got.headers.get("etag")!.endsWith(`/${suite.zest.router.zid}"`),
      "made from the sample's timestamp, stamped by this router",
    );
    assert.equal(
      (await http(suite.url, "GET", "/etag/a")).headers.get("etag"),
      got.headers.get("etag"),
      "a cached answer keeps its ETag",
    );
    assert.equal((await http(suite.url, "GET", "/etag/*")).headers.get("etag"), null);
    assert.equal((await http(suite.url, "GET", "/etag/none")).headers.get("etag"), null);
  });

  it("If-Match applies a write only on the version it names; otherwise 412 and nothing changes", async () => {
    await http(suite.url, "PUT", "/cas/k", { body: "v1", headers: TEXT });
    const etag = (await http(suite.url, "GET", "/cas/k")).headers.get("etag")!;
    const ok = await http(suite.url, "PUT", "/cas/k", { body: "v2", headers: { ...TEXT, "if-match": etag } });
    assert.equal(ok.status, 200, ok.text);
    const stale = await http(suite.url, "PUT", "/cas/k", { body: "v3", headers: { ...TEXT, "if-match": etag } });
    assert.equal(stale.status, 412);
    assert.match(stale.text, /write condition failed/);
    assert.match((await http(suite.url, "GET", "/cas/k")).text, /"v2"/);
    const del = await http(suite.url, "DELETE", "/cas/k", { headers: { "if-match": etag } });
    assert.equal(del.status, 412);
    const now = (await http(suite.url, "GET", "/cas/k")).headers.get("etag")!;
    assert.equal((await http(suite.url, "DELETE", "/cas/k", { headers: { "if-match": now } })).status, 200);
    assert.equal((await http(suite.url, "GET", "/cas/k")).text, "[\n\n]\n");
  });

  it("If-None-Match: * creates only if absent", async () => {
    const first = await http(suite.url, "PUT", "/create/k", {
      body: "mine",
      headers: { ...TEXT, "if-none-match": "*" },
    });
    assert.equal(first.status, 200);
    assert.equal(
      (await http(suite.url, "PUT", "/create/k", { body: "yours", headers: { ...TEXT, "if-none-match": "*" } })).status,
      412,
    );
    assert.match((await http(suite.url, "GET", "/create/k")).text, /"mine"/);
  });

  it("two concurrent If-Match writers on one ETag: exactly one gets 200, the other 412", async () => {
    await http(suite.url, "PUT", "/race/k", { body: "start", headers: TEXT });
    for (let round = 0; round < 10; round++) {
      const etag = (await http(suite.url, "GET", "/race/k")).headers.get("etag")!;
      const statuses = await Promise.all(
        ["a", "b"].map((who) =>
          http(suite.url, "PUT", "/race/k", { body: `${who}${round}`, headers: { ...TEXT, "if-match": etag } }).then(
            (r) => r.status,
          ),
        ),
      );
      assert.deepEqual(statuses.sort(), [200, 412]);
    }
  });

  it("malformed conditions are 400s saying what to send", async () => {
    const cases: Array<Record<string, string>> = [
      { "if-match": "no-quotes" },
      { "if-none-match": '"x"' },
      { "if-match": '"a"', "if-none-match": "*" },
    ];
    for (const headers of cases) {
      const r = await http(suite.url, "PUT", "/bad/k", { body: "x", headers: { ...TEXT, ...headers } });
      assert.equal(r.status, 400, JSON.stringify(headers));
    }
    const wild = await http(suite.url, "PUT", "/bad/*", { body: "x", headers: { ...TEXT, "if-none-match": "*" } });
    assert.equal(wild.status, 400);
  });
});
