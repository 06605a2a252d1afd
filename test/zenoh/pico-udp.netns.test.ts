/**
 * zest's zenoh door over UDP unicast against the real zenoh-pico 1.9 programs
 * (`-e udp/127.0.0.1:<port>`), inside a loopback-only network namespace: REST ↔ pico both ways,
 * gets, queryables and messages that fragment over datagrams.
 */
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { after, before, describe, test } from "node:test";
import { picoSkip, runPico } from "../support/pico.js";
import { startZest, type ZestProcess } from "../support/zest-process.js";

const skip = picoSkip("z_put", "z_sub", "z_get", "z_queryable");

/** Retries `check` until it passes (its last failure is thrown after `timeoutMs`). */
async function eventually(check: () => Promise<void>, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      await check();
      return;
    } catch (err) {
      if (Date.now() > deadline) throw err;
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}

/** A REST value of encoding `zenoh/bytes` (what pico sends by default): base64, as REST renders bytes. */
function bytesValue(v: unknown): string {
  return Buffer.from(String(v), "base64").toString("utf8");
}

async function restGet(url: string): Promise<{ status: number; body: unknown }> {
  const res = await fetch(url);
  const text = await res.text();
  return { status: res.status, body: text === "" ? undefined : JSON.parse(text) };
}

describe("zenoh-pico over UDP unicast against zest", { skip }, () => {
  let zest: ZestProcess;
  let ep: string;

  before(async () => {
    zest = await startZest(["-l", "udp/127.0.0.1:0"]);
    const m = /zenoh (udp\/\S+)/.exec(zest.stderr());
    assert.ok(m, `no zenoh udp locator in:\n${zest.stderr()}`);
    ep = m[1]!;
  });
  after(async () => {
    await zest?.stop();
  });

  test("z_put over UDP is stored and read by a REST GET", async () => {
    const put = runPico("z_put", ["-e", ep, "-k", "demo/udp/put", "-v", "hello over udp"]);
    try {
      assert.equal(await put.exited(), 0, put.lines().join("\n"));
    } finally {
      await put.stop();
    }
    await eventually(async () => {
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
      await eventually(async () => {
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
      await eventually(async () => {
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
    const put = runPico("z_put", ["-e", ep, "-k", "demo/udp/large", "-v", value]);
    try {
      assert.equal(await put.exited(), 0, put.lines().join("\n"));
    } finally {
      await put.stop();
    }
    await eventually(async () => {
      const r = await restGet(`${zest.url}/demo/udp/large`);
      const [entry] = r.body as Array<{ value: string }>;
      assert.equal(bytesValue(entry?.value), value);
    });
    const sub = runPico("z_sub", ["-e", ep, "-k", "demo/udp/big"]);
    try {
      await sub.waitFor(/Press CTRL-C to quit/);
      const big = "v".repeat(100_000);
      await eventually(async () => {
        await fetch(`${zest.url}/demo/udp/big`, { method: "PUT", body: big });
        await sub.waitFor(/Received \('demo\/udp\/big': 'v{100000}'\)/, 1000);
      });
    } finally {
      await sub.stop();
    }
  });
});
