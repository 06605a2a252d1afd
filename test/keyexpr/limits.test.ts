import assert from "node:assert/strict";
import { test } from "node:test";
import { DEFAULT_KEYEXPR_LIMITS, Session, ZestError } from "../../src/index.js";
import { checkKeyExprLimits, KeyExprError } from "../../src/keyexpr/index.js";

function chunks(n: number): string {
  return Array.from({ length: n }, (_, i) => `c${i % 10}`).join("/");
}

test("the default limits admit every key of the REST specification and zenoh's documentation", () => {
  const keys = [
    "demo/example/zenoh-rs-pub",
    "demo/example/**",
    "demo/example/*eval",
    "@/router/local/config/plugins/storage_manager/storages/demo",
    "@/local/router/config/plugins/storage_manager/storages/demo",
    "@/router/0123456789ABCDEF0123456789ABCDEF/status/plugins/storage_manager/storages/demo",
    "@/router/0123456789abcdef/plugin/storages/backend/memory/storage/demo",
    "robot/sensor/temp",
    "organizationA/building8/room275/sensor/temp",
    "myhome/kitchen/temp",
  ];
  for (const k of keys) assert.doesNotThrow(() => checkKeyExprLimits(k));
  assert.ok(DEFAULT_KEYEXPR_LIMITS.maxLength >= 2048 && DEFAULT_KEYEXPR_LIMITS.maxChunks >= 256);
});

test("checkKeyExprLimits names the limit broken", () => {
  assert.throws(
    () => checkKeyExprLimits("a".repeat(4097)),
    (e: unknown) =>
      e instanceof KeyExprError && e.kind === "TooLong" && /4097 bytes/.test(e.message) && e.message.length < 300,
  );
  assert.throws(
    () => checkKeyExprLimits(chunks(513)),
    (e: unknown) => e instanceof KeyExprError && e.kind === "TooManyChunks",
  );
  assert.doesNotThrow(() => checkKeyExprLimits(chunks(512)));
  assert.throws(() => checkKeyExprLimits("€".repeat(1366)), /4098 bytes/);
  assert.doesNotThrow(() => checkKeyExprLimits("€".repeat(1365)));
});

test("Session.put, get and declare* refuse keys past the limits with too_long / bad_input", async () => {
  const session = await Session.open();
  try {
    await assert.rejects(
      session.put("a".repeat(4097), "v"),
      (e: unknown) => e instanceof ZestError && e.kind === "too_long",
    );
    await assert.rejects(
      session.put(chunks(513), "v"),
      (e: unknown) => e instanceof ZestError && e.kind === "bad_input",
    );
    await assert.rejects(
      session.get(`${"a".repeat(4097)}?x=1`),
      (e: unknown) => e instanceof ZestError && e.kind === "too_long",
    );
    await assert.rejects(session.delete(chunks(600)), (e: unknown) => e instanceof ZestError && e.kind === "bad_input");
    assert.throws(
      () => session.declareSubscriber(chunks(1_000), () => undefined),
      (e: unknown) => e instanceof ZestError && e.kind === "bad_input",
    );
    assert.throws(
      () => session.declareQueryable("a".repeat(5000), () => undefined),
      (e: unknown) => e instanceof ZestError && e.kind === "too_long",
    );
    // In-chunk `*` becomes `$*` when canonized: the canonical form is held to the limit too.
    await assert.rejects(
      session.put(`${"a*".repeat(2000)}`, "v"),
      (e: unknown) => e instanceof ZestError && e.kind === "too_long",
    );
  } finally {
    session.close();
    await session.router.close();
  }
});

test("a router may raise the limits; deep subscriptions then route without overflowing the stack", async () => {
  const session = await Session.open({ keyExprLimits: { maxChunks: 100_000, maxLength: 1_000_000 } });
  try {
    const deep = chunks(3_000);
    const got: string[] = [];
    session.declareSubscriber(deep, (s) => void got.push(s.key));
    await session.put("**", "v");
    await session.put(deep, "w");
    assert.deepEqual(got, ["**", deep]);
  } finally {
    session.close();
    await session.router.close();
  }
});
