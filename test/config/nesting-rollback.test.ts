import assert from "node:assert/strict";
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, test } from "node:test";
import { getJson, http } from "../support/http.js";
import { A_CONFIG, A_STATUS, JSON_CT, startRouter, tempDir } from "../support/router.js";

const deepJson = (depth: number): string => `${'{"a":'.repeat(depth)}1${"}".repeat(depth)}`;

describe("nesting: deep admin bodies are a 400, and the router keeps listing and saving", () => {
  const tmp = tempDir("zest-nesting-");

  test("a storage config nested 5,000 levels deep is refused with the reason", async () => {
    const z = await startRouter({ data_dir: tmp() });
    try {
      const body = `{"key_expr":"deep/**","volume":{"id":"memory","x":${deepJson(5_000)}}}`;
      const r = await http(z.url, "PUT", `${A_CONFIG}/storages/deep`, { body, headers: JSON_CT });
      assert.equal(r.status, 400, r.text);
      assert.match(r.text, /nested deeper than 64 levels/);
      const v = await http(z.url, "PUT", `${A_CONFIG}/volumes/deepvol`, {
        body: `{"backend":"memory","x":${deepJson(100)}}`,
        headers: JSON_CT,
      });
      assert.equal(v.status, 400, v.text);
      // The admin space still lists, and later writes are still saved.
      assert.equal((await getJson(z.url, `${A_STATUS}/**`)).status, 200);
      const ok = await http(z.url, "PUT", `${A_CONFIG}/storages/fine`, {
        body: JSON.stringify({ key_expr: "fine/**", volume: "memory" }),
        headers: JSON_CT,
      });
      assert.equal(ok.status, 200, ok.text);
      assert.ok(Object.hasOwn(JSON.parse(readFileSync(join(tmp(), "storage_manager.json"), "utf8")).storages, "fine"));
    } finally {
      await z.close();
    }
  });
});

describe("a write that cannot be saved is undone, and the client gets a 500 saying why", () => {
  const tmp = tempDir("zest-rollback-");

  test("storage and volume creation, replacement and removal", async () => {
    const state = join(tmp(), "storage_manager.json");
    const z = await startRouter({ data_dir: tmp() });
    try {
      const put = (kind: string, name: string, value: unknown) =>
        http(z.url, "PUT", `${A_CONFIG}/${kind}/${name}`, { body: JSON.stringify(value), headers: JSON_CT });
      assert.equal((await put("storages", "kept", { key_expr: "kept/**", volume: "memory" })).status, 200);
      assert.equal((await http(z.url, "PUT", "/kept/k", { body: "v" })).status, 200);
      const before = readFileSync(state, "utf8");

      // The state file's place is taken by a directory: nothing can be saved any more.
      rmSync(state);
      mkdirSync(join(state, "blocker"), { recursive: true });
      const failures = [
        await put("storages", "new", { key_expr: "new/**", volume: "memory" }),
        await put("storages", "kept", { key_expr: "kept/**", volume: { id: "memory", quota: 4096 } }),
        await http(z.url, "DELETE", `${A_CONFIG}/storages/kept`),
        await put("volumes", "vol", { backend: "memory" }),
      ];
      for (const r of failures) {
        assert.equal(r.status, 500, r.text);
        assert.match(r.text, /could not be saved to .*storage_manager\.json .*so it was undone/);
      }
      // Running state = saved state: no `new`, no `vol`, `kept` as it was and with its data.
      const storages = z.manager.listStorages().map((s) => [s.name, s.config]);
      assert.deepEqual(storages, [
        ["default", { key_expr: "**", volume: "memory" }],
        ["kept", { key_expr: "kept/**", volume: "memory" }],
      ]);
      assert.equal(
        z.manager.listVolumes().some((v) => v.id === "vol"),
        false,
      );
      const got = await getJson(z.url, "/kept/k");
      assert.deepEqual(
        got.entries.map((e) => e.value),
        ["v"],
      );
      assert.equal((await http(z.url, "PUT", "/new/k", { body: "x" })).status, 200); // the default storage takes it

      // Once the file can be written again, the same writes succeed and are saved.
      rmSync(state, { recursive: true });
      writeFileSync(state, before);
      assert.equal((await put("storages", "new", { key_expr: "new/**", volume: "memory" })).status, 200);
      assert.ok(Object.hasOwn(JSON.parse(readFileSync(state, "utf8")).storages, "new"));
    } finally {
      await z.close();
    }
  });
});
