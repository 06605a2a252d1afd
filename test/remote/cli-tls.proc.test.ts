/** The remote API from the real `zest` command (flag and config checks) and over TLS (`wss`). */
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, test } from "node:test";
import type { Sample } from "@eclipse-zenoh/zenoh-ts";
import { silentLogger } from "../../src/core/log.js";
import { Router } from "../../src/core/router.js";
import { Session } from "../../src/core/session.js";
import { RemoteApiServer } from "../../src/remote/server.js";
import { runZestExpectingExit, startZest } from "../support/zest-process.js";
import { openClient, roundTrip } from "./helpers.js";
import { makeCertificate } from "../support/certificate.js";

describe("remote API from the command line", () => {
  test("--remote-api-port starts it and the startup line names its URL", async () => {
    const z = await startZest(["--remote-api-port", "127.0.0.1:0"]);
    try {
      const m = /remote API ws:\/\/(127\.0\.0\.1:\d+)/.exec(z.stderr());
      assert.ok(m, z.stderr());
      const c = await openClient(`ws/${m[1]}`);
      const got: string[] = [];
      await c.declareSubscriber("cli/*", { handler: (s: Sample) => void got.push(s.payload().toString()) });
      await fetch(`${z.url}/cli/k`, { method: "PUT", body: "from REST" });
      await roundTrip(c);
      for (let i = 0; i < 50 && got.length === 0; i++) await new Promise((r) => setTimeout(r, 20));
      assert.deepEqual(got, ["from REST"]);
      await c.close();
    } finally {
      await z.stop();
    }
  });

  test("a bad plugins.remote_api section is a configuration error (exit 2) naming the field", async () => {
    const bad = await runZestExpectingExit(["--cfg", 'plugins/remote_api:{websocket_port:"nope"}']);
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /plugins\.remote_api\.websocket_port/);
    const unknown = await runZestExpectingExit(["--cfg", "plugins/remote_api:{websocket_prot:10000}"]);
    assert.equal(unknown.code, 2);
    assert.match(unknown.stderr, /plugins\.remote_api/);
  });
});

describe("remote API over TLS", () => {
  test("with a certificate and key the server speaks wss, and zenoh-ts connects with a wss locator", async () => {
    const dir = mkdtempSync(join(tmpdir(), "zest-wss-"));
    const router = new Router();
    let server: RemoteApiServer | undefined;
    try {
      makeCertificate(dir);
      server = new RemoteApiServer({
        openSession: (name) => new Session(router, name),
        connectivity: router.connectivity(),
        port: 0,
        logger: silentLogger,
        tls: { cert: readFileSync(join(dir, "cert.pem")), key: readFileSync(join(dir, "key.pem")) },
      });
      const { port } = await server.listen();
      // A self-signed certificate: this test process trusts it for the connection below.
      process.env.NODE_TLS_REJECT_UNAUTHORIZED = "0";
      const c = await openClient(`wss/127.0.0.1:${port}`);
      assert.equal((await c.info()).zid().toLeBytes().length, 16);
      await c.close();
    } finally {
      delete process.env.NODE_TLS_REJECT_UNAUTHORIZED;
      await server?.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
