/**
 * Keys that moved to the router level keep loading (docs/configuration.md, "Moved keys"):
 * `plugins.rest.tls` is read as the router's `tls`, with a warning naming the new key, and the
 * admin layout follows the REST variant unless `adminspace.layout` names one.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Writable } from "node:stream";
import { after, before, describe, test } from "node:test";
import { pino } from "pino";
import { AdminSpaceB } from "../../src/admin/admin-space-b.js";
import { type Logger, silentLogger } from "../../src/core/log.js";
import { startZest } from "../../src/runtime.js";
import { deprecatedKeys } from "../../src/zest-config.js";
import { makeCertificate } from "../support/certificate.js";

/** A logger whose warnings are kept, one parsed JSON line each. */
function recordingLogger(): { logger: Logger; lines: Array<Record<string, unknown>> } {
  const lines: Array<Record<string, unknown>> = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const line of chunk.toString("utf8").split("\n")) if (line) lines.push(JSON.parse(line));
      done();
    },
  });
  return { logger: pino({ level: "warn" }, sink), lines };
}

describe("the router's TLS", () => {
  let dir: string;
  let tls: { listen_certificate: string; listen_private_key: string };
  before(() => {
    dir = mkdtempSync(join(tmpdir(), "zest-moved-"));
    const { cert, key } = makeCertificate(dir);
    tls = { listen_certificate: cert, listen_private_key: key };
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  test("`tls` serves HTTPS, with no warning", async () => {
    const { logger, lines } = recordingLogger();
    const zest = await startZest({ tls, plugins: { rest: { http_port: "127.0.0.1:0" } } }, { logger });
    try {
      assert.match(zest.restUrl!, /^https:\/\//);
      assert.deepEqual(
        lines.filter((l) => l.key !== undefined),
        [],
      );
    } finally {
      await zest.close();
    }
  });

  test("`plugins.rest.tls` still serves HTTPS, and warns that `tls` is its new name", async () => {
    const { logger, lines } = recordingLogger();
    const zest = await startZest({ plugins: { rest: { http_port: "127.0.0.1:0", tls } } }, { logger });
    try {
      assert.match(zest.restUrl!, /^https:\/\//);
      const warning = lines.find((l) => l.key === "plugins.rest.tls");
      assert.ok(warning, JSON.stringify(lines));
      assert.equal(warning.use, "tls");
      assert.match(String(warning.msg), /plugins\.rest\.tls is deprecated.*tls is its new name/);
    } finally {
      await zest.close();
    }
  });

  test("deprecatedKeys names only the old spellings present", () => {
    assert.deepEqual(deprecatedKeys({ tls }), []);
    assert.deepEqual(deprecatedKeys({ plugins: { rest: { tls } } }), [{ key: "plugins.rest.tls", use: "tls" }]);
    assert.deepEqual(deprecatedKeys({ plugins: { rest: "x" } }), []);
  });
});

test("the admin layout follows the REST variant, with the gateway off too", async () => {
  const zest = await startZest({ plugins: { rest: { http_port: "none", variant: "b" } } }, { logger: silentLogger });
  try {
    assert.equal(zest.restUrl, undefined);
    assert.ok(zest.admin instanceof AdminSpaceB);
  } finally {
    await zest.close();
  }
});
