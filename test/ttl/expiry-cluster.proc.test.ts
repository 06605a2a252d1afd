/**
 * Expiry across routers over NATS (docs/ttl-and-leases.md): the deadline travels with the sample,
 * the router holding the value deletes it on time, and a router without storage sees the DELETE.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { http, openSse } from "../support/http.js";
import { getValues, memoryStorage, NO_STORAGES, putText } from "../fabric/helpers.js";
import { eventually } from "../support/wait.js";
import { routerPairOverNats } from "../support/router-pair.js";

describe("expiry across two routers over NATS", () => {
  /** a: a memory storage on ex/**; b: no storage. */
  const pair = routerPairOverNats(
    (nats) => [
      ["--id", "A7", "--nats", nats, ...NO_STORAGES, ...memoryStorage("ex_a", "ex/**")],
      ["--id", "B7", "--nats", nats, ...NO_STORAGES],
    ],
    (_a, b) =>
      eventually(async () => (await putText(b.url, "ex/ready", "1")).status === 200, 10_000, "the routers to meet"),
  );

  test("a value written with _ttl on one router expires on the router storing it, and both see the DELETE", async () => {
    const sseB = await openSse(`${pair.b.url}/ex/**`);
    const sseA = await openSse(`${pair.a.url}/ex/**`);
    try {
      const written = Date.now();
      const put = await http(pair.b.url, "PUT", "/ex/k?_ttl=600ms", {
        body: "v",
        headers: { "content-type": "text/plain" },
      });
      assert.equal(put.status, 200, put.text);
      const got = await http(pair.b.url, "GET", "/ex/k");
      assert.match(got.text, /"v"/);
      const expires = Date.parse(got.headers.get("zest-expires") ?? "");
      assert.ok(expires >= written + 600 && expires <= Date.now() + 600, "the deadline travelled with the sample");
      const [putB, delB] = await sseB.next(2, 5_000);
      assert.equal(putB?.event, "PUT");
      assert.equal(delB?.event, "DELETE");
      assert.ok(Date.now() >= expires, "not before the deadline");
      const [putA, delA] = await sseA.next(2, 5_000);
      assert.deepEqual([putA?.event, delA?.event], ["PUT", "DELETE"]);
      assert.deepEqual((await getValues(pair.a.url, "ex/k")).values, {});
      assert.deepEqual((await getValues(pair.b.url, "ex/k")).values, {});
    } finally {
      sseA.close();
      sseB.close();
    }
  });
});
