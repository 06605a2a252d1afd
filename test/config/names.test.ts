import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, test } from "node:test";
import { getJson, http } from "../support/http.js";
import { A_CONFIG, A_STATUS, B_BACKEND, JSON_CT, startRouter, tempDir } from "../support/router.js";

/** Names that are also properties of every plain object, and a unicode one. */
const NAMES = ["__proto__", "constructor", "hasOwnProperty", "toString"];
const UNICODE_VOLUME = "vølume-ü";
const PROTO = "__proto__";

describe("names are data: every name the admin space accepts survives a restart (--data-dir)", () => {
  const tmp = tempDir("zest-names-");

  test("Variant A: volumes and storages named __proto__, constructor, hasOwnProperty, toString, unicode", async () => {
    let z = await startRouter({ data_dir: join(tmp(), "a") });
    try {
      for (const name of [...NAMES, UNICODE_VOLUME]) {
        const v = await http(z.url, "PUT", `${A_CONFIG}/volumes/${encodeURIComponent(name)}`, {
          body: JSON.stringify({ backend: "memory" }),
          headers: JSON_CT,
        });
        assert.equal(v.status, 200, `volume ${name}: ${v.text}`);
      }
      for (const [i, name] of NAMES.entries()) {
        const s = await http(z.url, "PUT", `${A_CONFIG}/storages/${name}`, {
          body: JSON.stringify({ key_expr: `n${i}/**`, volume: name }),
          headers: JSON_CT,
        });
        assert.equal(s.status, 200, `storage ${name}: ${s.text}`);
      }
      const u = await http(z.url, "PUT", `${A_CONFIG}/storages/uni`, {
        body: JSON.stringify({ key_expr: "uni/**", volume: UNICODE_VOLUME }),
        headers: JSON_CT,
      });
      assert.equal(u.status, 200, u.text);
    } finally {
      await z.close();
    }
    const saved = JSON.parse(readFileSync(join(tmp(), "a", "storage_manager.json"), "utf8")) as {
      storages: object;
      volumes: object;
    };
    assert.ok(Object.hasOwn(saved.storages, "__proto__") && Object.hasOwn(saved.volumes, "__proto__"));

    z = await startRouter({ data_dir: join(tmp(), "a") });
    try {
      const storages = new Map(z.manager.listStorages().map((s) => [s.name, s.volume]));
      for (const name of NAMES) assert.equal(storages.get(name), name, `storage ${name} after the restart`);
      assert.equal(storages.get("uni"), UNICODE_VOLUME);
      const { entries } = await getJson(z.url, `${A_STATUS}/storages/*`);
      assert.deepEqual(
        entries.map((e) => e.key).sort(),
        [...NAMES, "default", "uni"]
          .map((n) => `@/router/${z.router.zid}/status/plugins/storage_manager/storages/${n}`)
          .sort(),
      );
      const protoEntry = entries.find((e) => (e.key as string).endsWith("/__proto__"));
      assert.deepEqual(protoEntry?.value, { key_expr: "n0/**", volume: "__proto__" });
      const vols = await getJson(z.url, `${A_STATUS}/volumes/*`);
      assert.ok(vols.entries.some((e) => (e.key as string).endsWith(`/volumes/${UNICODE_VOLUME}`)));
    } finally {
      await z.close();
    }
  });

  test("Variant B: a backend named __proto__ with a storage, listed as JSON and after a restart", async () => {
    const config = { data_dir: join(tmp(), "b"), plugins: { rest: { variant: "b" as const } } };
    const FORM = { "content-type": "application/x-www-form-urlencoded" };
    let z = await startRouter(config);
    try {
      assert.equal(
        (await http(z.url, "PUT", `${B_BACKEND}/__proto__`, { body: JSON.stringify({ lib: "memory" }), headers: FORM }))
          .status,
        204,
      );
      const s = await http(z.url, "PUT", `${B_BACKEND}/__proto__/storage/constructor`, {
        body: JSON.stringify({ selector: "/p/**" }),
        headers: FORM,
      });
      assert.equal(s.status, 204, s.text);
    } finally {
      await z.close();
    }
    z = await startRouter(config);
    try {
      const r = await http(z.url, "GET", "/@/router/local/plugin/storages");
      assert.equal(r.status, 200, r.text);
      const [entry] = JSON.parse(r.text) as Array<{
        value: { backend: Record<string, { storage?: Record<string, unknown> }> };
      }>;
      const backends = entry?.value.backend ?? {};
      assert.ok(Object.hasOwn(backends, PROTO), r.text);
      assert.ok(Object.hasOwn(backends[PROTO]?.storage ?? {}, "constructor"), r.text);
    } finally {
      await z.close();
    }
  });
});
