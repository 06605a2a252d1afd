/**
 * The scouting multicast address (src/zenoh/scouting/address.ts): an IPv4 multicast group and a
 * port, as zenohd takes `scouting.multicast.address`; anything else is a `bad_input` that says
 * what was expected.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { ZestError } from "../../../src/core/errors.js";
import { DEFAULT_SCOUTING_ADDRESS, parseScoutingAddress } from "../../../src/zenoh/scouting/address.js";

test("zenohd's default and any group of 224.0.0.0/4 with a port in 1..65535 parse", () => {
  assert.deepEqual(parseScoutingAddress(DEFAULT_SCOUTING_ADDRESS), { group: "224.0.0.224", port: 7446 });
  assert.deepEqual(parseScoutingAddress("239.255.255.250:1"), { group: "239.255.255.250", port: 1 });
  assert.deepEqual(parseScoutingAddress("224.0.0.1:65535"), { group: "224.0.0.1", port: 65535 });
});

test("a missing or out-of-range port, a host that is not IPv4, and a unicast group are bad input", () => {
  const cases: Array<[string, RegExp]> = [
    ["224.0.0.224", /expected an IPv4 group and port, got 224.0.0.224/],
    ["224.0.0.224:", /expected an IPv4 group and port/],
    [":7446", /expected an IPv4 group and port/],
    ["224.0.0.224:0", /expected an IPv4 group and port/],
    ["224.0.0.224:65536", /expected an IPv4 group and port/],
    ["224.0.0.224:74.5", /expected an IPv4 group and port/],
    ["224.0.0.224:x", /expected an IPv4 group and port/],
    ["[ff02::1]:7446", /expected an IPv4 group and port/],
    ["localhost:7446", /expected an IPv4 group and port/],
    ["223.255.255.255:7446", /223.255.255.255 is not a multicast address/],
    ["240.0.0.1:7446", /240.0.0.1 is not a multicast address/],
    ["127.0.0.1:7446", /not a multicast address \(224.0.0.0\/4\)/],
  ];
  for (const [address, re] of cases)
    assert.throws(
      () => parseScoutingAddress(address),
      (e: unknown) => e instanceof ZestError && e.kind === "bad_input" && re.test(e.message),
      address,
    );
});
