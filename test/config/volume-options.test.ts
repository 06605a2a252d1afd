import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { http } from "../support/http.js";
import { A_CONFIG, B_BACKEND, JSON_CT, startRouter } from "../support/router.js";

/** One misspelled option per driver and level, with the option it was meant to be. */
const VOLUME_TYPOS = [
  { driver: "memory", body: { backend: "memory", quto: 1000 }, typo: "quto", meant: "quota" },
  { driver: "sqlite", body: { backend: "sqlite", pth: "/tmp/never.db" }, typo: "pth", meant: "path" },
  { driver: "influxdb", body: { backend: "influxdb", ur: "http://127.0.0.1:1" }, typo: "ur", meant: "url" },
  {
    driver: "jetstream",
    body: { backend: "jetstream", server: "nats://127.0.0.1:1" },
    typo: "server",
    meant: "servers",
  },
];
const STORAGE_TYPOS = [
  { driver: "memory", volume: { id: "memory", quot: 1000 }, typo: "quot", meant: "quota" },
  { driver: "sqlite", volume: { id: "sqlite", tabel: "t" }, typo: "tabel", meant: "table" },
  // Its volume is configured but unreachable: the option is checked all the same.
  { driver: "influxdb", volume: { id: "influx", dbb: "d" }, typo: "dbb", meant: "db" },
  { driver: "jetstream", volume: { id: "jetstream", buckt: "b" }, typo: "buckt", meant: "bucket" },
];

describe("a misspelled volume or storage option written at run time is a 400 naming it, for every driver", () => {
  let z: Awaited<ReturnType<typeof startRouter>>;
  before(async () => {
    z = await startRouter({
      plugins: {
        storage_manager: { volumes: { influx: { backend: "influxdb", url: "http://127.0.0.1:1" } }, storages: {} },
      },
    });
  });
  after(() => z.close());

  for (const c of VOLUME_TYPOS)
    test(`${c.driver}: volume option "${c.typo}"`, async () => {
      const r = await http(z.url, "PUT", `${A_CONFIG}/volumes/v_${c.driver}`, {
        body: JSON.stringify(c.body),
        headers: JSON_CT,
      });
      assert.equal(r.status, 400, r.text);
      assert.match(
        r.text,
        new RegExp(`unknown option "${c.typo}" of volume v_${c.driver} \\(did you mean "${c.meant}"\\?\\)`),
      );
      assert.equal(
        z.manager.listVolumes().some((v) => v.id === `v_${c.driver}`),
        false,
      );
    });

  for (const c of STORAGE_TYPOS)
    test(`${c.driver}: storage option "${c.typo}"`, async () => {
      const r = await http(z.url, "PUT", `${A_CONFIG}/storages/s_${c.driver}`, {
        body: JSON.stringify({ key_expr: `s/${c.driver}/**`, volume: c.volume }),
        headers: JSON_CT,
      });
      assert.equal(r.status, 400, r.text);
      assert.match(
        r.text,
        new RegExp(
          `unknown option "${c.typo}" of ${c.driver} storage s_${c.driver} \\(did you mean "${c.meant}"\\?\\)`,
        ),
      );
      assert.equal(
        z.manager.listStorages().some((s) => s.name === `s_${c.driver}`),
        false,
      );
    });

  test("a value of the wrong type is a 400 naming the option and what it must be", async () => {
    const r = await http(z.url, "PUT", `${A_CONFIG}/volumes/q`, {
      body: JSON.stringify({ backend: "memory", quota: "big" }),
      headers: JSON_CT,
    });
    assert.equal(r.status, 400, r.text);
    assert.match(r.text, /`quota` of volume q must be a whole number of at least 1 \(got "big"\)/);
  });
});

test("Variant B: a misspelled backend property is a 400 naming it", async () => {
  const z = await startRouter({ plugins: { rest: { variant: "b" } } });
  try {
    const r = await http(z.url, "PUT", `${B_BACKEND}/sq`, {
      body: JSON.stringify({ lib: "sqlite3", ulr: "sqlite3:///tmp/never.db" }),
      headers: { "content-type": "application/x-www-form-urlencoded" },
    });
    assert.equal(r.status, 400, r.text);
    assert.match(r.text, /unknown option "ulr" of volume sq \(did you mean "url"\?\)/);
    // Variant B's properties are strings: a boolean or a number as a string is read as such.
    const ok = await http(z.url, "PUT", `${B_BACKEND}/memory/storage/s`, {
      body: JSON.stringify({ selector: "/s/**", quota: "5000" }),
      headers: { "content-type": "application/x-www-form-urlencoded" },
    });
    assert.ok(ok.status < 300, ok.text);
  } finally {
    await z.close();
  }
});
