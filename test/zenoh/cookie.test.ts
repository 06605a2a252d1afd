/**
 * The INIT/OPEN cookie (src/zenoh/cookie.ts, docs/zenoh-protocol.md): what a router seals in its
 * INIT ack comes back whole in the OPEN syn, and a cookie that was altered, sealed under another
 * secret, cut short or kept too long is refused with a `DecodeError`.
 */
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { describe, test } from "node:test";
import { DecodeError } from "../../src/core/binary.js";
import { CookieJar, type CookieState } from "../../src/zenoh/cookie.js";

const NOW = 1_700_000_000_000;
const STATE: CookieState = {
  zid: "0123456789abcdef",
  whatami: "client",
  snRes: 2,
  reqRes: 3,
  batchSize: 65_535,
  patch: 1,
  qos: true,
  issuedAt: NOW,
};

/** Asserts opening `cookie` throws a `DecodeError` matching `re`. */
function refused(jar: CookieJar, cookie: Buffer, re: RegExp, now = NOW): void {
  assert.throws(
    () => jar.open(cookie, 10_000, now),
    (e: unknown) => e instanceof DecodeError && re.test(e.message),
  );
}

describe("the INIT/OPEN cookie", () => {
  test("the state sealed is the state opened, with and without a nonce", () => {
    const jar = new CookieJar(Buffer.alloc(32, 1));
    assert.deepEqual(jar.open(jar.seal(STATE), 10_000, NOW + 9_000), STATE);
    const withNonce = { ...STATE, whatami: "peer" as const, qos: false, nonce: 0xfedcba9876543210n };
    assert.deepEqual(jar.open(jar.seal(withNonce), 10_000, NOW), withNonce);
  });

  test("two cookies of the same state differ (a random salt), and both open", () => {
    const jar = new CookieJar();
    const [a, b] = [jar.seal(STATE), jar.seal(STATE)];
    assert.notDeepEqual(a, b);
    assert.deepEqual(jar.open(a, 10_000, NOW), jar.open(b, 10_000, NOW));
  });

  test("any altered byte, or another router's secret, does not verify", () => {
    const jar = new CookieJar(Buffer.alloc(32, 1));
    const cookie = jar.seal(STATE);
    for (let i = 0; i < cookie.length; i++) {
      const altered = Buffer.from(cookie);
      altered[i]! ^= 0x01;
      refused(jar, altered, /does not verify/);
    }
    refused(new CookieJar(Buffer.alloc(32, 2)), cookie, /does not verify/);
  });

  test("a cookie no longer than its MAC is too short; one older than the maximum age has expired", () => {
    const jar = new CookieJar();
    refused(jar, Buffer.alloc(0), /too short/);
    refused(jar, Buffer.alloc(16, 9), /too short/);
    const cookie = jar.seal(STATE);
    assert.equal(jar.open(cookie, 10_000, NOW + 10_000).zid, STATE.zid);
    refused(jar, cookie, /expired/, NOW + 10_001);
  });

  test("a sealed zid longer than a zid's 32 characters is refused on opening", () => {
    const jar = new CookieJar();
    refused(jar, jar.seal({ ...STATE, zid: "a".repeat(33) }), /above its limit 32/);
  });
});
