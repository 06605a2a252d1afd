/**
 * The zenoh door in a whole router (src/runtime.ts): its locator in the admin space, its open
 * sessions listed there beside the fabric's routers, and a port in use refused in one line.
 */
import assert from "node:assert/strict";
import { after, test } from "node:test";
import { silentLogger } from "../../src/core/log.js";
import { startZest, type Zest } from "../../src/runtime.js";
import { ZestError } from "../../src/core/errors.js";
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
