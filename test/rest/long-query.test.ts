import assert from "node:assert/strict";
import { request } from "node:http";
import { test } from "node:test";
import { silentLogger } from "../../src/core/log.js";
import { startZest } from "../../src/runtime.js";

const KEYS = 60_000;

/** A GET; resolves with the time its response headers arrived and the time it was complete. */
function get(url: string, path: string): Promise<{ status: number; headersAt: number; doneAt: number; bytes: number }> {
  const u = new URL(url);
  return new Promise((resolve, reject) => {
    const req = request({ host: u.hostname, port: u.port, path }, (res) => {
      const headersAt = performance.now();
      let bytes = 0;
      res.on("data", (c: Buffer) => (bytes += c.length));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, headersAt, doneAt: performance.now(), bytes }));
    });
    req.on("error", reject);
    req.end();
  });
}

test("a one-key GET sent while a wide GET runs is answered before the wide GET's first byte", async () => {
  const zest = await startZest({ plugins: { rest: { http_port: "127.0.0.1:0" } } }, { logger: silentLogger });
  try {
    for (let i = 0; i < KEYS; i++) await zest.session.put(`w/${i % 10}/${Math.floor(i / 10) % 100}/${i}`, `v${i}`);
    await zest.session.put("one/key", "1");
    const url = zest.restUrl!.replace("localhost", "127.0.0.1");
    // `?run` keeps both out of the read cache: each runs the whole query. The keys ending in 9
    // are all under `w/9/` (i % 10 is the first chunk), last in key order: the walk goes through
    // the other 54,000 keys before its first entry, so the answer's head (and its first byte)
    // comes only at the end of a long walk, however busy the machine.
    const wide = get(url, "/**/$*9?run");
    // Sent once the wide request is surely being handled (its query walks tens of thousands of keys).
    await new Promise((r) => setTimeout(r, 20));
    const one = await get(url, "/one/key?run");
    const w = await wide;
    assert.equal(one.status, 200);
    assert.equal(w.status, 200);
    assert.ok(w.bytes > 500_000, `the wide answer is ${w.bytes} bytes`);
    assert.ok(one.doneAt < w.headersAt, "the one-key GET waited for the wide one");
  } finally {
    await zest.close();
  }
});
