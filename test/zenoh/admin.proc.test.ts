/**
 * The zenoh door in a whole router (src/runtime.ts): its locator in the admin space, its open
 * sessions listed there beside the fabric's routers, and a port in use refused in one line.
 */
import assert from "node:assert/strict";
import { after, test } from "node:test";
import { silentLogger } from "../../src/core/log.js";
import { startZest, type Zest } from "../../src/runtime.js";
import { ZestError } from "../../src/core/errors.js";
import { runZestExpectingExit, startZest as startZestProcess } from "../support/zest-process.js";
import { RawClient } from "./raw-client.js";

const closers: Array<() => unknown> = [];
after(async () => {
  for (const c of closers.reverse()) await c();
});

async function router(endpoints: string[]): Promise<Zest> {
  const z = await startZest(
    { plugins: { rest: { http_port: "127.0.0.1:0" } }, listen: { endpoints } },
    { logger: silentLogger },
  );
  closers.push(() => z.close());
  return z;
}

test("the admin space lists the zenoh door's locator and its open sessions", async () => {
  const z = await router(["tcp/127.0.0.1:0"]);
  const locator = z.zenohLocators[0]!;
  assert.match(locator, /^tcp\/127\.0\.0\.1:\d+$/);
  const c = await RawClient.open(Number(locator.split(":").pop()), { zid: "ABCDEF", whatami: "peer" });
  closers.push(() => c.close());
  const res = await fetch(`${z.restUrl}/@/router/${z.router.zid}`);
  const [entry] = (await res.json()) as Array<{
    value: { locators: string[]; sessions: Array<Record<string, unknown>> };
  }>;
  assert.ok(entry?.value.locators.includes(locator), JSON.stringify(entry?.value.locators));
  const s = entry?.value.sessions.find((x) => x.peer === "ABCDEF");
  assert.ok(s, JSON.stringify(entry?.value.sessions));
  assert.equal(s.whatami, "peer");
  assert.match(String(s.link), /^tcp\/127\.0\.0\.1:\d+$/);
  c.close();
  await c.waitClosed();
  await new Promise((r) => setTimeout(r, 100));
  const after = (await (await fetch(`${z.restUrl}/@/router/${z.router.zid}`)).json()) as Array<{
    value: { sessions: Array<Record<string, unknown>> };
  }>;
  assert.ok(!after[0]?.value.sessions.some((x) => x.peer === "ABCDEF"));
});

test("a configured endpoint in use is a one-line unavailable error", async () => {
  const z = await router(["tcp/127.0.0.1:0"]);
  const taken = z.zenohLocators[0]!;
  await assert.rejects(
    startZest({ plugins: { rest: { http_port: "none" } }, listen: { endpoints: [taken] } }, { logger: silentLogger }),
    (err: unknown) =>
      err instanceof ZestError &&
      err.kind === "unavailable" &&
      err.message.includes(`${taken} is in use`) &&
      !err.message.includes("\n"),
  );
});

test("listen.endpoints [] turns the zenoh door off", async () => {
  const z = await router([]);
  assert.deepEqual(z.zenohLocators, []);
});

test("-l with a malformed endpoint exits 2 with one line naming it", async () => {
  const r = await runZestExpectingExit(["--rest-http-port", "none", "-l", "quic/127.0.0.1:7447"]);
  assert.equal(r.code, 2, r.stderr);
  assert.match(r.stderr, /--listen: endpoint "quic\/127\.0\.0\.1:7447": protocol "quic" is not supported/);
  assert.equal(r.stderr.trim().split("\n").length, 1, r.stderr);
});

test("-l tls/ without any certificate stops with one line naming the settings", async () => {
  const r = await runZestExpectingExit(["--rest-http-port", "none", "-l", "tls/127.0.0.1:0"]);
  assert.notEqual(r.code, 0, r.stderr);
  assert.match(r.stderr, /tls\/127\.0\.0\.1:0 needs a certificate: transport\.link\.tls\.listen_certificate/);
  assert.equal(r.stderr.trim().split("\n").length, 1, r.stderr);
});

test("-l takes udp/ and tcp/ endpoints together: the startup line names both", async () => {
  const z = await startZestProcess(["-l", "tcp/127.0.0.1:0", "-l", "udp/127.0.0.1:0"]);
  closers.push(() => z.stop());
  assert.match(z.stderr(), /zenoh tcp\/127\.0\.0\.1:\d+ udp\/127\.0\.0\.1:\d+/);
});

test("-l is repeatable and the startup line names every zenoh locator", async () => {
  const z = await startZestProcess(["-l", "tcp/127.0.0.1:0", "-l", "tcp/[::1]:0"]);
  closers.push(() => z.stop());
  assert.match(z.stderr(), /zenoh tcp\/127\.0\.0\.1:\d+ tcp\/\[::1\]:\d+/);
});

test("two routers started without -l on one host both listen: the second takes a free port when 7447 is taken", async () => {
  const config = { plugins: { rest: { http_port: "none" } } };
  const a = await startZest(config, { logger: silentLogger });
  closers.push(() => a.close());
  const b = await startZest(config, { logger: silentLogger });
  closers.push(() => b.close());
  assert.equal(a.zenohLocators.length, 1);
  assert.equal(b.zenohLocators.length, 1);
  assert.notEqual(a.zenohLocators[0], b.zenohLocators[0]);
  for (const l of [...a.zenohLocators, ...b.zenohLocators]) assert.match(l, /^tcp\/127\.0\.0\.1:\d+$/);
});
