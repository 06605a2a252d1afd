/**
 * The synchronous single-key GET (`Router.readStored`, docs/rest-gateway.md): a storage whose
 * synchronous read fails must not take the router down; the full pipeline answers instead.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { silentLogger } from "../../src/core/log.js";
import { startZest } from "../../src/runtime.js";
import { http } from "../support/http.js";

test("a storage whose synchronous read throws gets the query's error answer, and the router goes on serving", async () => {
  const zest = await startZest({ plugins: { rest: { http_port: "127.0.0.1:0" } } }, { logger: silentLogger });
  try {
    zest.session.declareQueryable(
      "broken/**",
      () => {
        throw new Error("the disk is gone");
      },
      {
        complete: true,
        storage: true,
        peek: () => {
          throw new Error("the disk is gone");
        },
      },
    );
    await zest.session.put("fine/key", "1");
    const url = zest.restUrl!.replace("localhost", "127.0.0.1");
    for (let i = 0; i < 2; i++) {
      const bad = await http(url, "GET", "/broken/key");
      assert.ok(bad.status >= 500, `status ${bad.status}`);
      assert.match(bad.text, /the disk is gone/);
    }
    const ok = await http(url, "GET", "/fine/key");
    assert.equal(ok.status, 200);
    assert.match(ok.text, /"key": "fine\/key"/);
  } finally {
    await zest.close();
  }
});
