import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { problems } from "../../../src/config/schema.js";
import {
  answersScouts,
  helloLocators,
  type InterfaceTable,
  scoutingInterfaces,
  scoutingSchema,
} from "../../../src/zenoh/scouting/index.js";

/** The section as the configuration's one parse gives it to the door. */
const parsed = (section: unknown) => scoutingSchema.parse(section ?? {});

const table: InterfaceTable = new Map([
  [
    "lo",
    [
      { address: "127.0.0.1", family: "IPv4" as const },
      { address: "::1", family: "IPv6" as const },
    ],
  ],
  [
    "eth0",
    [
      { address: "192.168.1.20", family: "IPv4" as const },
      { address: "fe80::1", family: "IPv6" as const },
      { address: "2001:db8::20", family: "IPv6" as const },
    ],
  ],
]);

describe("scouting config (zenohd's names)", () => {
  test("defaults: on, 224.0.0.224:7446, interface auto, ttl 1, answering", () => {
    const c = parsed(undefined);
    assert.deepEqual(
      { ...c.multicast },
      { enabled: true, address: "224.0.0.224:7446", interface: "auto", ttl: 1, listen: true },
    );
    assert.equal(answersScouts(c), true);
  });

  test("enabled: false, or listen false for router, turns the responder off", () => {
    assert.equal(answersScouts(parsed({ multicast: { enabled: false } })), false);
    assert.equal(answersScouts(parsed({ multicast: { listen: { router: false, peer: true } } })), false);
    assert.equal(answersScouts(parsed({ multicast: { listen: { peer: false } } })), true);
  });

  test("zenohd's DEFAULT_CONFIG scouting section loads as it is", () => {
    const c = parsed({
      timeout: 3000,
      delay: 500,
      multicast: {
        enabled: true,
        address: "224.0.0.224:7446",
        interface: "auto",
        ttl: 1,
        autoconnect: { router: [], peer: ["router", "peer", "client"], client: ["router", "peer", "client"] },
        autoconnect_strategy: { peer: { to_router: "always", to_peer: "always" } },
        listen: { router: true, peer: true, client: true },
      },
      gossip: {
        enabled: true,
        multihop: false,
        target: { router: ["router", "peer"], peer: ["router", "peer"] },
        autoconnect: { router: [], peer: ["router", "peer", "client"] },
        autoconnect_strategy: { peer: { to_router: "always", to_peer: "always" } },
      },
    });
    assert.equal(answersScouts(c), true);
  });

  const refused: Array<[string, unknown, RegExp]> = [
    [
      "an unknown key",
      { multicast: { adress: "224.0.0.224:7446" } },
      /unknown key scouting\.multicast\.adress \(did you mean address\?\)/,
    ],
    [
      "a unicast address",
      { multicast: { address: "10.0.0.1:7446" } },
      /scouting\.multicast\.address: .*not a multicast/,
    ],
    ["an address without a port", { multicast: { address: "224.0.0.224" } }, /scouting\.multicast\.address/],
    ["an IPv6 group", { multicast: { address: "[ff02::1]:7446" } }, /scouting\.multicast\.address: expected an IPv4/],
    ["a ttl of 0", { multicast: { ttl: 0 } }, /scouting\.multicast\.ttl/],
    ["an oversized interface list", { multicast: { interface: "x,".repeat(600) } }, /scouting\.multicast\.interface/],
    ["a router that would autoconnect", { multicast: { autoconnect: ["router"] } }, /routers mesh over NATS/],
    ["a router autoconnect per mode", { multicast: { autoconnect: { router: ["peer"] } } }, /routers mesh over NATS/],
  ];
  for (const [what, value, pattern] of refused) {
    test(`${what} is refused, naming the field`, () => {
      assert.match(problems(scoutingSchema, value, ["scouting"])[0] ?? "", pattern);
    });
  }
});

describe("where scouting answers", () => {
  test("auto: a listener on loopback (protected mode) scouts on loopback only", () => {
    assert.deepEqual(scoutingInterfaces("auto", ["127.0.0.1"], table), ["127.0.0.1"]);
    assert.deepEqual(scoutingInterfaces("auto", ["::1"], table), ["127.0.0.1"]);
  });

  test("auto: a listener on a wildcard address scouts on every IPv4 interface, on one address on that one", () => {
    assert.deepEqual(scoutingInterfaces("auto", ["0.0.0.0"], table), ["127.0.0.1", "192.168.1.20"]);
    assert.deepEqual(scoutingInterfaces("auto", ["[::]"], table), ["127.0.0.1", "192.168.1.20"]);
    assert.deepEqual(scoutingInterfaces("auto", ["192.168.1.20"], table), ["192.168.1.20"]);
    assert.deepEqual(scoutingInterfaces("auto", ["2001:db8::20"], table), []);
  });

  test("names and addresses, comma-separated; an unknown name is refused naming the known ones", () => {
    assert.deepEqual(scoutingInterfaces("lo, eth0", ["127.0.0.1"], table), ["127.0.0.1", "192.168.1.20"]);
    assert.deepEqual(scoutingInterfaces("10.1.2.3", [], table), ["10.1.2.3"]);
    assert.throws(() => scoutingInterfaces("wlan0", [], table), /no interface named "wlan0".*known: lo, eth0/);
    assert.throws(() => scoutingInterfaces("fe80::1", [], table), /IPv6/);
  });

  test("a HELLO spells out wildcard listeners and shows loopback locators to loopback scouts only", () => {
    const locs = ["tcp/0.0.0.0:7447", "tcp/127.0.0.1:7448"];
    assert.deepEqual(helloLocators(locs, "127.0.0.1", table), [
      "tcp/127.0.0.1:7447",
      "tcp/192.168.1.20:7447",
      "tcp/127.0.0.1:7448",
    ]);
    assert.deepEqual(helloLocators(locs, "192.168.1.7", table), ["tcp/192.168.1.20:7447"]);
    assert.deepEqual(helloLocators(["tcp/[::]:7447"], "192.168.1.7", table), [
      "tcp/192.168.1.20:7447",
      "tcp/[2001:db8::20]:7447",
    ]);
  });
});
