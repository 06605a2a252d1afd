/**
 * The synchronous single-key GET (`Router.readStored`, docs/rest-gateway.md): a storage whose
 * synchronous read fails must not take the router down; the full pipeline answers instead.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { silentLogger } from "../../src/core/log.js";
import { startZest } from "../../src/runtime.js";
import type { VolumeDriver } from "../../src/storage/backend.js";
import { sqliteDriver } from "../../src/storage/volumes/sqlite.js";
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

/** PUTs a key three times and GETs it twice after each write, with the read cache off. */
async function readsEachWrite(
  storages: Record<string, unknown>,
  volumes: Record<string, unknown>,
  key: string,
  drivers: VolumeDriver[] = [],
): Promise<void> {
  const zest = await startZest(
    {
      plugins: {
        rest: { http_port: "127.0.0.1:0", cache_entries: 0 },
        storage_manager: { volumes, storages } as never,
      },
    },
    { logger: silentLogger, drivers },
  );
  try {
    const url = zest.restUrl!.replace("localhost", "127.0.0.1");
    const etags = new Set<string>();
    for (let i = 0; i < 3; i++) {
      const put = await http(url, "PUT", `/${key}`, {
        body: String(i),
        headers: { "content-type": "application/json" },
      });
      assert.equal(put.status, 200);
      // Twice each: the second answer comes from what the first one rendered.
      for (let r = 0; r < 2; r++) {
        const got = await http(url, "GET", `/${key}`);
        assert.equal(got.status, 200);
        assert.equal(JSON.parse(got.text)[0].value, i);
        const etag = got.headers.get("etag")!;
        assert.match(etag, /^"[^"]+"$/);
        if (r === 0) etags.add(etag);
        else assert.ok(etags.has(etag));
      }
    }
    assert.equal(etags.size, 3);
    // A HEAD of the same key sends the same headers and no body.
    const head = await http(url, "HEAD", `/${key}`);
    assert.equal(head.status, 200);
    assert.equal(head.text, "");
    assert.ok(etags.has(head.headers.get("etag")!));
  } finally {
    await zest.close();
  }
}

test("with the read cache off, a GET of one stored key answers each new value and ETag after every write (memory: the rendered answer is kept per sample)", async () => {
  await readsEachWrite({ mem: { key_expr: "memo/**", volume: "memory" } }, {}, "memo/key");
});

test("the same on a SQLite storage (its cached rows hand out one entry each)", async () => {
  const dir = mkdtempSync(join(tmpdir(), "zest-stored-read-"));
  try {
    await readsEachWrite(
      { sq: { key_expr: "sq/**", volume: "sq" } },
      { sq: { backend: "sqlite", path: join(dir, "s.db") } },
      "sq/key",
      [sqliteDriver],
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
