/** An in-process router on a free loopback port (REST on 127.0.0.1:0, a silent logger), and temporary directories. */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before } from "node:test";
import { type Logger, silentLogger } from "../../src/core/log.js";
import type { ZestConfig } from "../../src/zest-config.js";
import { defaultStartOptions } from "../../src/defaults.js";
import { startZest, type Zest } from "../../src/runtime.js";
import { suiteResource } from "./suite.js";

export const A_CONFIG = "/@/router/local/config/plugins/storage_manager";
export const A_STATUS = "/@/router/local/status/plugins/storage_manager";
export const B_BACKEND = "/@/router/local/plugin/storages/backend";
export const JSON_CT = { "content-type": "application/json" };

/** `text/plain`, the content type of most test writes. */
export const TEXT = { "content-type": "text/plain" };

/** Starts a router with `config` (REST on 127.0.0.1:0, variant `a` unless the config says). */
export async function startRouter(
  config: ZestConfig = {},
  logger: Logger = silentLogger,
): Promise<Zest & { url: string }> {
  const rest = { http_port: "127.0.0.1:0", ...config.plugins?.rest };
  const zest = await startZest(
    { ...config, plugins: { ...config.plugins, rest } },
    { ...defaultStartOptions(), logger },
  );
  return Object.assign(zest, { url: zest.restUrl! });
}

/** A fresh temporary directory for the enclosing `describe`, removed after it (call `dir()` in tests). */
export function tempDir(prefix: string): () => string {
  let dir = "";
  before(() => {
    dir = mkdtempSync(join(tmpdir(), prefix));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));
  return () => dir;
}

/**
 * A router for the tests of the enclosing `describe`, started before them and closed after them
 * (the part nats.js's `nst` plays for its suites): read `zest` and `url` inside the tests.
 */
export function routerForSuite(config: ZestConfig = {}): { readonly zest: Zest; readonly url: string } {
  return suiteResource(
    "the suite's router",
    async () => {
      const zest = await startRouter(config);
      return { zest, url: zest.url };
    },
    (r) => r.zest.close(),
  );
}
