import assert from "node:assert/strict";
import { existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import type { ZestConfig } from "../../src/zest-config.js";
import { silentLogger } from "../../src/core/log.js";
import { defaultStartOptions } from "../../src/defaults.js";
import { startZest, type Zest } from "../../src/runtime.js";
import { http } from "../support/http.js";
import { cacheDriver } from "./cache-driver.js";
import { A_CONFIG, B_BACKEND, JSON_CT, startRouter, tempDir } from "../support/router.js";

const FORM = { "content-type": "application/x-www-form-urlencoded" };

describe("admin writes reach only allowed files", () => {
  let root: string;
  let dataDir: string;
  let allowed: string;
  let outside: string;
  before(() => {
    root = mkdtempSync(join(tmpdir(), "zest-admission-"));
    dataDir = join(root, "data");
    allowed = join(root, "allowed");
    outside = join(root, "outside");
    for (const d of [dataDir, allowed, outside]) mkdirSync(d);
    symlinkSync(outside, join(dataDir, "escape"));
  });
  after(() => rmSync(root, { recursive: true, force: true }));

  test("Variant A: sqlite path and url outside data_dir/allowed_paths are 403 and create nothing", async () => {
    const z = await startRouter({ data_dir: dataDir, plugins: { storage_manager: { allowed_paths: [allowed] } } });
    try {
      const storage = (volume: Record<string, unknown>) =>
        JSON.stringify({ key_expr: "f/**", volume: { id: "sqlite", ...volume } });
      const refused: Array<[Record<string, unknown>, RegExp]> = [
        [{ path: join(outside, "sub", "x.db") }, /outside data_dir and storage_manager\.allowed_paths/],
        [{ url: `sqlite3://${join(outside, "y.db")}` }, /outside data_dir/],
        [{ path: `${dataDir}/../outside/z.db` }, /must not contain "\.\."/],
        [{ path: join(dataDir, "escape", "w.db") }, /outside data_dir/],
        [{ path: "relative.db" }, /outside data_dir/],
        [{ path: join(dataDir, "ok.db"), adopt_existing: true }, /adopt_existing.*only from the configuration file/],
      ];
      for (const [volume, reason] of refused) {
        const r = await http(z.url, "PUT", `${A_CONFIG}/storages/f`, { body: storage(volume), headers: JSON_CT });
        assert.equal(r.status, 403, `${JSON.stringify(volume)}: ${r.text}`);
        assert.match(r.text, reason);
        assert.match(r.headers.get("content-type") ?? "", /json|text/);
      }
      assert.equal(existsSync(join(outside, "sub")), false);
      assert.equal(existsSync(join(outside, "y.db")), false);
      const vol = await http(z.url, "PUT", `${A_CONFIG}/volumes/v`, {
        body: JSON.stringify({ backend: "sqlite", path: join(outside, "v.db") }),
        headers: JSON_CT,
      });
      assert.equal(vol.status, 403, vol.text);

      for (const path of [join(dataDir, "in.db"), join(allowed, "deeper", "in.db")]) {
        const r = await http(z.url, "PUT", `${A_CONFIG}/storages/f`, { body: storage({ path }), headers: JSON_CT });
        assert.equal(r.status, 200, `${path}: ${r.text}`);
        assert.equal((await http(z.url, "DELETE", `${A_CONFIG}/storages/f`)).status, 200);
      }
    } finally {
      await z.close();
    }
  });

  test("Variant B: a backend url outside the allowed places is 403", async () => {
    const z = await startRouter({ data_dir: dataDir, plugins: { rest: { variant: "b" } } });
    try {
      const r = await http(z.url, "PUT", `${B_BACKEND}/sq`, {
        body: JSON.stringify({ lib: "sqlite3", url: `sqlite3://${join(outside, "b.db")}` }),
        headers: FORM,
      });
      assert.equal(r.status, 403, r.text);
      assert.match(r.text, /outside data_dir/);
    } finally {
      await z.close();
    }
  });

  test("without data_dir or allowed_paths, no file may be named at run time", async () => {
    const z = await startRouter({});
    try {
      const r = await http(z.url, "PUT", `${A_CONFIG}/storages/f`, {
        body: JSON.stringify({ key_expr: "f/**", volume: { id: "sqlite", path: join(allowed, "n.db") } }),
        headers: JSON_CT,
      });
      assert.equal(r.status, 403, r.text);
      assert.match(r.text, /neither is configured/);
    } finally {
      await z.close();
    }
  });
});

describe("admin writes reach only allowed hosts", () => {
  let server: Server;
  let hits = 0;
  let port: number;
  before(async () => {
    server = createServer((_req, res) => {
      hits++;
      res.writeHead(204).end();
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    port = (server.address() as { port: number }).port;
  });
  after(() => new Promise<void>((resolve) => server.close(() => resolve())));

  test("an influxdb url or jetstream servers outside allowed_hosts are 403, with no request sent", async () => {
    const z = await startRouter({});
    try {
      const cases = [
        { backend: "influxdb", url: `http://user:pw@127.0.0.1:${port}` },
        { backend: "jetstream", servers: [`nats://127.0.0.1:${port}`] },
        { backend: "jetstream", servers: `nats://localhost:4222,nats://127.0.0.1:${port}` },
      ];
      for (const volume of cases) {
        const r = await http(z.url, "PUT", `${A_CONFIG}/volumes/remote`, {
          body: JSON.stringify(volume),
          headers: JSON_CT,
        });
        assert.equal(r.status, 403, r.text);
        assert.match(r.text, /is not in storage_manager\.allowed_hosts \(no host is allowed\)/);
        assert.doesNotMatch(r.text, /pw/);
      }
      assert.equal(hits, 0);
    } finally {
      await z.close();
    }
  });

  test("by default the hosts of the configured volumes are allowed; allowed_hosts replaces them", async () => {
    const configured = { backend: "influxdb", url: `http://127.0.0.1:${port}` };
    const z = await startRouter({ plugins: { storage_manager: { volumes: { cfg: configured }, storages: {} } } });
    try {
      // The same host and port: allowed (the fake server answers the ping; what follows is not ours to test).
      const same = await http(z.url, "PUT", `${A_CONFIG}/volumes/same`, {
        body: JSON.stringify(configured),
        headers: JSON_CT,
      });
      assert.notEqual(same.status, 403, same.text);
      const other = await http(z.url, "PUT", `${A_CONFIG}/volumes/other`, {
        body: JSON.stringify({ backend: "influxdb", url: "http://127.0.0.1:1" }),
        headers: JSON_CT,
      });
      assert.equal(other.status, 403, other.text);
      assert.match(other.text, new RegExp(`allowed: 127\\.0\\.0\\.1:${port}`));
    } finally {
      await z.close();
    }
    const z2 = await startRouter({ plugins: { storage_manager: { allowed_hosts: ["127.0.0.1"] } } });
    try {
      const any = await http(z2.url, "PUT", `${A_CONFIG}/volumes/anyport`, {
        body: JSON.stringify({ backend: "influxdb", url: `http://127.0.0.1:${port}` }),
        headers: JSON_CT,
      });
      assert.notEqual(any.status, 403, any.text);
    } finally {
      await z2.close();
    }
  });
});

describe("admission goes by what a driver declares, whatever its scheme", () => {
  const dir = tempDir("zest-admission-decl-");

  /** A router with the test `cache` driver (a redis:// host and dump files) registered. */
  async function cacheRouter(config: ZestConfig): Promise<Zest & { url: string }> {
    const options = defaultStartOptions();
    const z = await startZest(
      { ...config, plugins: { ...config.plugins, rest: { http_port: "127.0.0.1:0" } } },
      { ...options, drivers: [...(options.drivers ?? []), cacheDriver], logger: silentLogger },
    );
    return Object.assign(z, { url: z.restUrl! });
  }
  const putVolume = (z: { url: string }, name: string, body: unknown) =>
    http(z.url, "PUT", `${A_CONFIG}/volumes/${name}`, { body: JSON.stringify(body), headers: JSON_CT });

  test("a redis:// host is refused unless in allowed_hosts (host, or host:port with the driver's default port)", async () => {
    const z = await cacheRouter({ plugins: { storage_manager: { allowed_hosts: ["cache.example:6379"] } } });
    try {
      const refused = await putVolume(z, "evil", { backend: "cache", url: "redis://evil.example:6379" });
      assert.equal(refused.status, 403, refused.text);
      assert.match(refused.text, /host evil\.example:6379 is not in storage_manager\.allowed_hosts/);
      const otherPort = await putVolume(z, "evil", { backend: "cache", url: "redis://cache.example:7000" });
      assert.equal(otherPort.status, 403, otherPort.text);
      assert.equal(
        z.manager.listVolumes().some((v) => v.id === "evil"),
        false,
      );
      // No port: the driver's default (6379) is the one allowed.
      const allowed = await putVolume(z, "c", { backend: "cache", url: "redis://CACHE.example" });
      assert.equal(allowed.status, 200, allowed.text);
    } finally {
      await z.close();
    }
  });

  test("by default the hosts the configured volumes of that driver reach are allowed, and only those", async () => {
    const z = await cacheRouter({
      plugins: {
        storage_manager: { volumes: { cfg: { backend: "cache", url: "redis://cache.example:6380" } }, storages: {} },
      },
    });
    try {
      assert.equal((await putVolume(z, "same", { backend: "cache", url: "redis://cache.example:6380" })).status, 200);
      const other = await putVolume(z, "other", { backend: "cache", url: "redis://cache.example" });
      assert.equal(other.status, 403, other.text);
      assert.match(other.text, /allowed: cache\.example:6380/);
    } finally {
      await z.close();
    }
  });

  test("a file the driver declares (on the volume or the storage) must lie under data_dir or allowed_paths", async () => {
    const dataDir = join(dir(), "data");
    const outside = join(dir(), "outside");
    mkdirSync(dataDir);
    mkdirSync(outside);
    const z = await cacheRouter({
      data_dir: dataDir,
      plugins: { storage_manager: { allowed_hosts: ["cache.example"] } },
    });
    try {
      const url = "redis://cache.example";
      const out = await putVolume(z, "c", { backend: "cache", url, dump: join(outside, "dump.rdb") });
      assert.equal(out.status, 403, out.text);
      assert.match(out.text, /volume c: ".*dump\.rdb" is outside data_dir/);
      const inside = await putVolume(z, "c", { backend: "cache", url, dump: join(dataDir, "dump.rdb") });
      assert.equal(inside.status, 200, inside.text);
      const storage = (snapshot: string) =>
        http(z.url, "PUT", `${A_CONFIG}/storages/s`, {
          body: JSON.stringify({ key_expr: "s/**", volume: { id: "c", snapshot } }),
          headers: JSON_CT,
        });
      const sOut = await storage(join(outside, "s.snap"));
      assert.equal(sOut.status, 403, sOut.text);
      assert.match(sOut.text, /cache storage s: ".*s\.snap" is outside data_dir/);
      assert.equal((await storage(join(dataDir, "s.snap"))).status, 200);
    } finally {
      await z.close();
    }
  });
});
