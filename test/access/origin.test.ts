/**
 * The browser checks (src/access/origin.ts, docs/security.md): which `Host` headers name this
 * router (DNS rebinding), and which `Origin`s may write.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { isAllowedHost, originAllowed } from "../../src/access/origin.js";

const NONE = new Set<string>();

describe("Host names the router", () => {
  test("an IP literal (with or without port, IPv6 in brackets) and localhost, in any case", () => {
    for (const host of [
      "127.0.0.1",
      "127.0.0.1:8000",
      "10.1.2.3:80",
      "[::1]:8000",
      "[::1]",
      "localhost",
      "LocalHost:8000",
    ])
      assert.equal(isAllowedHost(host, NONE), true, host);
  });

  test("a domain name only when configured; a missing, empty or malformed Host never", () => {
    const allowed = new Set(["zest.example"]);
    assert.equal(isAllowedHost("zest.example:8000", allowed), true);
    assert.equal(isAllowedHost("ZEST.example", allowed), true);
    for (const host of [
      undefined,
      "",
      "evil.example",
      "evil.example:8000",
      "zest.example.evil",
      "[::1",
      "[evil]:80",
      "localhost.evil",
    ])
      assert.equal(isAllowedHost(host, allowed), false, String(host));
  });
});

describe("Origin may write", () => {
  test("a listed origin (case-insensitively), or any with *", () => {
    const listed = new Set(["https://app.example"]);
    assert.equal(originAllowed("https://APP.example", "127.0.0.1:8000", "http", listed, NONE), true);
    assert.equal(originAllowed("https://other.example", "127.0.0.1:8000", "http", listed, NONE), false);
    assert.equal(originAllowed("https://other.example", undefined, "http", new Set(["*"]), NONE), true);
  });

  test("the router's own origin, only under its own scheme and a Host that names it", () => {
    assert.equal(originAllowed("http://127.0.0.1:8000", "127.0.0.1:8000", "http", NONE, NONE), true);
    assert.equal(originAllowed("http://LOCALHOST:8000", "localhost:8000", "http", NONE, NONE), true);
    assert.equal(originAllowed("https://127.0.0.1:8000", "127.0.0.1:8000", "http", NONE, NONE), false);
    assert.equal(originAllowed("http://127.0.0.1:8001", "127.0.0.1:8000", "http", NONE, NONE), false);
    assert.equal(originAllowed("http://127.0.0.1:8000", undefined, "http", NONE, NONE), false);
    // A rebinding page: same origin as its Host, but the Host is the attacker's domain.
    assert.equal(originAllowed("http://evil.example:8000", "evil.example:8000", "http", NONE, NONE), false);
    assert.equal(originAllowed("https://zest.example", "zest.example", "https", NONE, new Set(["zest.example"])), true);
  });
});
