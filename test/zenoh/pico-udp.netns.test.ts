/**
 * zest's zenoh door over UDP unicast against the real zenoh-pico 1.9 programs
 * (`-e udp/127.0.0.1:<port>`), inside a loopback-only network namespace: REST ↔ pico both ways,
 * gets, queryables and messages that fragment over datagrams.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { picoSkip, picoPut, runPico } from "../support/pico.js";
import { startZest, type ZestProcess, zenohLocatorOf } from "../support/zest-process.js";
import { untilPasses } from "../support/assert.js";
import { bytesValue, restGet } from "../support/http.js";

const skip = picoSkip("z_put", "z_sub", "z_get", "z_queryable");

describe("zenoh-pico over UDP unicast against zest", { skip }, () => {
  let zest: ZestProcess;
  let ep: string;

  before(async () => {
    zest = await startZest(["-l", "udp/127.0.0.1:0"]);
    ep = zenohLocatorOf(zest, "udp");
  });
  after(async () => {
    await zest?.stop();
  });

  test("z_put over UDP is stored and read by a REST GET", async () => {
    await picoPut(["-e", ep, "-k", "demo/udp/put", "-v", "hello over udp"]);
    await untilPasses(async () => {
      const r = await restGet(`${zest.url}/demo/udp/put`);
      const [entry] = r.body as Array<{ key: string; value: unknown }>;
      assert.equal(entry?.key, "demo/udp/put");
      assert.equal(bytesValue(entry?.value), "hello over udp");
    });
  });

  test("a REST PUT reaches z_sub over UDP", async () => {
    const sub = runPico("z_sub", ["-e", ep, "-k", "demo/udp/sub/**"]);
    try {
      await sub.waitFor(/Press CTRL-C to quit/);
      await untilPasses(async () => {
        await fetch(`${zest.url}/demo/udp/sub/a`, {
          method: "PUT",
          body: "from REST",
          headers: { "content-type": "text/plain" },
        });
        await sub.waitFor(/Received \('demo\/udp\/sub\/a': 'from REST'\)/, 500);
      });
    } finally {
      await sub.stop();
    }
  });

  test("z_get over UDP reads a storage; z_queryable over UDP answers a REST GET", async () => {
    await fetch(`${zest.url}/demo/udp/stored`, { method: "PUT", body: "kept" });
    const get = runPico("z_get", ["-e", ep, "-k", "demo/udp/stored"]);
    try {
      await get.waitFor(/>> Received PUT \('demo\/udp\/stored': 'kept'\)/);
      await get.waitFor(/Received query final notification/);
    } finally {
      await get.stop();
    }
    const q = runPico("z_queryable", ["-e", ep, "-k", "demo/udp/q", "-v", "pico answers over udp"]);
    try {
      await q.waitFor(/Press CTRL-C to quit/);
      await untilPasses(async () => {
        const r = await restGet(`${zest.url}/demo/udp/q`);
        const entries = r.body as Array<{ key: string; value: unknown }>;
        assert.ok(
          entries.some((e) => e.key === "demo/udp/q" && bytesValue(e.value) === "pico answers over udp"),
          JSON.stringify(r.body),
        );
      });
    } finally {
      await q.stop();
    }
  });

  test("large values fragment over datagrams both ways", async () => {
    const value = "u".repeat(20_000);
    await picoPut(["-e", ep, "-k", "demo/udp/large", "-v", value]);
    await untilPasses(async () => {
      const r = await restGet(`${zest.url}/demo/udp/large`);
      const [entry] = r.body as Array<{ value: string }>;
      assert.equal(bytesValue(entry?.value), value);
    });
    const sub = runPico("z_sub", ["-e", ep, "-k", "demo/udp/big"]);
    try {
      await sub.waitFor(/Press CTRL-C to quit/);
      const big = "v".repeat(100_000);
      await untilPasses(async () => {
        await fetch(`${zest.url}/demo/udp/big`, { method: "PUT", body: big });
        await sub.waitFor(/Received \('demo\/udp\/big': 'v{100000}'\)/, 1000);
      });
    } finally {
      await sub.stop();
    }
  });
});
