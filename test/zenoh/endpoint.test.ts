/**
 * zenoh endpoints (src/zenoh/endpoint.ts): zenohd's `tcp/<ip>:<port>` and `tcp/[<ipv6>]:<port>`,
 * and every malformed or oversized form refused with a message that says why.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { ZestError } from "../../src/core/errors.js";
import { formatEndpoint, parseEndpoint } from "../../src/zenoh/endpoint.js";

test("tcp endpoints parse, IPv4, IPv6 and localhost, and format back", () => {
  assert.deepEqual(parseEndpoint("tcp/127.0.0.1:7447"), { protocol: "tcp", host: "127.0.0.1", port: 7447 });
  assert.deepEqual(parseEndpoint("tcp/[::1]:0"), { protocol: "tcp", host: "::1", port: 0 });
  assert.deepEqual(parseEndpoint("tcp/localhost:7448"), { protocol: "tcp", host: "127.0.0.1", port: 7448 });
  assert.equal(formatEndpoint(parseEndpoint("tcp/[::1]:7447")), "tcp/[::1]:7447");
  assert.equal(formatEndpoint(parseEndpoint("tcp/0.0.0.0:1")), "tcp/0.0.0.0:1");
});

test("udp and tls endpoints parse as tcp ones do", () => {
  assert.deepEqual(parseEndpoint("udp/127.0.0.1:7447"), { protocol: "udp", host: "127.0.0.1", port: 7447 });
  assert.deepEqual(parseEndpoint("udp/[::1]:0"), { protocol: "udp", host: "::1", port: 0 });
  assert.deepEqual(parseEndpoint("tls/localhost:7447"), { protocol: "tls", host: "127.0.0.1", port: 7447 });
  assert.equal(formatEndpoint(parseEndpoint("udp/[::1]:7447")), "udp/[::1]:7447");
  assert.equal(formatEndpoint(parseEndpoint("tls/0.0.0.0:7447")), "tls/0.0.0.0:7447");
});

test("malformed and oversized endpoints are refused, naming the problem", () => {
  const cases: Array<[string, RegExp]> = [
    ["127.0.0.1:7447", /no protocol/],
    ["quic/127.0.0.1:7447", /"quic" is not supported \(tcp, udp, tls\)/],
    ["ws/127.0.0.1:7447", /"ws" is not supported/],
    ["udp/127.0.0.1", /expected udp\/<ip>:<port>/],
    ["tls/[::1:7447", /expected tls\/\[<ipv6>\]:<port>/],
    ["udp/example.com:7447", /not an IPv4 address/],
    ["tcp/127.0.0.1", /expected tcp\/<ip>:<port>/],
    ["tcp/127.0.0.1:", /is not a port/],
    ["tcp/127.0.0.1:65536", /is not a port/],
    ["tcp/127.0.0.1:-1", /is not a port/],
    ["tcp/example.com:7447", /not an IPv4 address/],
    ["tcp/[::1:7447", /expected tcp\/\[<ipv6>\]:<port>/],
    ["tcp/[127.0.0.1]:7447", /not an IPv6 address/],
    ["tcp/127.0.0.1:7447?iface=lo", /metadata/],
    ["tcp/127.0.0.1:7447#rel=1", /metadata/],
    [`tcp/${"1".repeat(300)}:1`, /longer than 256/],
  ];
  for (const [text, message] of cases) {
    assert.throws(
      () => parseEndpoint(text),
      (err: unknown) => err instanceof ZestError && err.kind === "bad_input" && message.test(err.message),
      text,
    );
  }
});
