import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { Writable } from "node:stream";
import { test } from "node:test";
import { pino } from "pino";
import { isSecretName, redact, redactText } from "../../src/config/redact.js";
import { http } from "../support/http.js";
import { runZestExpectingExit } from "../support/zest-process.js";
import { startRouter } from "../support/router.js";
import { REPO_ROOT } from "../support/repo.js";

const SECRETS = ["s3cret", "hunter2", "tok-123", "pk-xyz"];

test("credential-like names and URL user information are redacted", () => {
  for (const name of [
    "password",
    "PASSWORD",
    "token",
    "api_key",
    "auth_token",
    "secret",
    "credentials",
    "private",
    "key",
    "auth",
  ])
    assert.ok(isSecretName(name), name);
  for (const name of ["key_expr", "key_size", "path", "url", "db", "username", "servers", "tokens_left"])
    assert.ok(!isSecretName(name), name);
  assert.equal(
    redactText("influxdb at http://admin:s3cret@127.0.0.1:1 is down"),
    "influxdb at http://***@127.0.0.1:1 is down",
  );
  assert.equal(redactText("nats://u:p@a:4222,nats://b:4222"), "nats://***@a:4222,nats://b:4222");
  const out = redact(JSON.parse('{"__proto__":{"password":"x"},"url":"https://u@h","list":[{"token":"t"}]}')) as Record<
    string,
    unknown
  >;
  assert.deepEqual(
    JSON.parse(JSON.stringify(out)),
    JSON.parse('{"__proto__":{"password":"***"},"url":"https://***@h","list":[{"token":"***"}]}'),
  );
});

for (const variant of ["a", "b"] as const) {
  test(`Variant ${variant.toUpperCase()}: admin views and logs never show credentials`, async () => {
    let logs = "";
    const sink = new Writable({
      write(chunk: Buffer, _enc, done) {
        logs += chunk.toString();
        done();
      },
    });
    const logger = pino({ level: "debug" }, sink);
    const volume = {
      backend: "influxdb",
      url: "http://admin:s3cret@127.0.0.1:1",
      username: "admin",
      password: "hunter2",
      private: { password: "tok-123" },
    };
    const z = await startRouter(
      {
        plugins: {
          rest: { variant },
          storage_manager: {
            volumes: { influx: volume },
            storages: {
              ts: {
                key_expr: "ts/**",
                volume: { id: "influx", db: "d", private: { username: "u", password: "pk-xyz" } },
              },
            },
          },
        },
      },
      logger,
    );
    try {
      const all = await http(z.url, "GET", "/@/**");
      assert.equal(all.status, 200);
      assert.match(all.text, /influx/);
      assert.match(all.text, /127\.0\.0\.1:1/); // the volume is listed, with its host
      const put = await http(z.url, "PUT", "/ts/a", { body: "1" });
      for (const text of [all.text, put.text, logs])
        for (const s of SECRETS) assert.ok(!text.includes(s), `${s} leaked in: ${text.slice(0, 2000)}`);
    } finally {
      await z.close();
    }
  });
}

test("a run-time volume whose server cannot be reached: the 503 reason carries no credentials", async () => {
  const z = await startRouter({ plugins: { storage_manager: { allowed_hosts: ["127.0.0.1"] } } });
  try {
    const body = JSON.stringify({ backend: "jetstream", servers: "nats://user:s3cret@127.0.0.1:1", timeout_ms: 200 });
    const r = await http(z.url, "PUT", "/@/router/local/config/plugins/storage_manager/volumes/js", {
      body,
      headers: { "content-type": "application/json" },
    });
    assert.equal(r.status, 503, r.text);
    assert.match(r.text, /127\.0\.0\.1:1/);
    assert.ok(!r.text.includes("s3cret"), r.text);
  } finally {
    await z.close();
  }
});

test("the router's logs and start-up errors hide URL credentials", async () => {
  const script = `
    import { createLogger } from "./dist/core/log.js";
    createLogger("info").child({ plugin: "p" }).info({ servers: ["nats://u:s3cret@h:4222"], at: { url: "http://a:hunter2@c" } }, "joined");
  `;
  const r = spawnSync(process.execPath, ["--input-type=module", "-e", script], {
    cwd: REPO_ROOT,
    encoding: "utf8",
  });
  assert.equal(r.status, 0, r.stderr);
  const line = JSON.parse(r.stderr) as { servers: string[]; at: { url: string } };
  assert.deepEqual([line.servers, line.at], [["nats://***@h:4222"], { url: "http://***@c" }]);

  const { code, stderr } = await runZestExpectingExit([
    "--rest-http-port",
    "127.0.0.1:0",
    "--nats",
    "nats://u:s3cret@127.0.0.1:1",
  ]);
  assert.notEqual(code, 0);
  assert.match(stderr, /nats:\/\/\*\*\*@127\.0\.0\.1:1/);
  assert.ok(!stderr.includes("s3cret"), stderr);
});
