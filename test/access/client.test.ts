/**
 * What a front door knows about its client (src/access/client.ts, docs/security.md): whether it
 * is on this machine (admin writes are allowed from loopback by default), and the credentials it
 * presented, from a header, a `token` query parameter, or a line door's text.
 */
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { test } from "node:test";
import {
  authorizationOf,
  httpClient,
  httpClientWithToken,
  isLoopbackAddress,
  type RequestLike,
} from "../../src/access/client.js";

const request = (remoteAddress: string | undefined, url?: string, authorization?: string): RequestLike => ({
  url,
  headers: { authorization },
  socket: { remoteAddress, localAddress: "127.0.0.1" },
});

test("loopback: 127.0.0.0/8, ::1 and IPv4-mapped 127.x; nothing else, and no address is not loopback", () => {
  for (const a of ["127.0.0.1", "127.1.2.3", "::1", "::ffff:127.0.0.1"]) assert.equal(isLoopbackAddress(a), true, a);
  for (const a of [undefined, "", "10.0.0.1", "::ffff:10.0.0.1", "::2", "0.0.0.0", "128.0.0.1", "fe80::1"])
    assert.equal(isLoopbackAddress(a), false, String(a));
  assert.equal(httpClient(request("10.0.0.1")).loopback, false);
  assert.deepEqual(httpClient(request("::1", "/", "Basic eA==")), {
    authorization: "Basic eA==",
    address: "::1",
    localAddress: "127.0.0.1",
    loopback: true,
  });
});

test("where headers are out of reach: the Authorization header first, else ?token= as a Bearer token", () => {
  assert.equal(httpClientWithToken(request("10.0.0.1", "/?token=abc", "Basic eA==")).authorization, "Basic eA==");
  assert.equal(httpClientWithToken(request("10.0.0.1", "/ws?x=1&token=a%20b")).authorization, "Bearer a b");
  assert.equal(httpClientWithToken(request("10.0.0.1", "/?token=abc", "")).authorization, "Bearer abc");
  for (const url of [undefined, "/", "/?token=", "/?tokens=abc", "/token=abc"])
    assert.equal(httpClientWithToken(request("10.0.0.1", url)).authorization, undefined, String(url));
  assert.equal(httpClientWithToken(request("127.0.0.1", "/?token=t")).loopback, true);
});

test("a line door's text: user:password is Basic (split at the first colon by the reader), a bare token Bearer", () => {
  assert.equal(authorizationOf(""), undefined);
  assert.equal(authorizationOf("tok"), "Bearer tok");
  const basic = authorizationOf("alice:pa:ss")!;
  assert.match(basic, /^Basic /);
  assert.equal(Buffer.from(basic.slice(6), "base64").toString("utf8"), "alice:pa:ss");
});
