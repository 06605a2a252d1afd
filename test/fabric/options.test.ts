/** Options of the NATS fabric, checked before any connection is made. */
import assert from "node:assert/strict";
import { test } from "node:test";
import { silentLogger } from "../../src/core/log.js";
import { fabricSchema, NatsFabric, natsFabricFromConfig } from "../../src/fabric/index.js";

const refused = (re: RegExp) => (e: Error & { kind?: string }) => e.kind === "bad_input" && re.test(e.message);

test("ack_timeout_ms must be greater than peer_timeout_ms: a write waits for a silent router until it is forgotten", () => {
  assert.throws(
    () => new NatsFabric({ servers: ["nats://127.0.0.1:4222"], ackTimeoutMs: 4_000 }),
    refused(/ack_timeout_ms \(4000\) must be greater than peer_timeout_ms \(4000\)/),
  );
  assert.throws(
    () => new NatsFabric({ servers: ["nats://127.0.0.1:4222"], peerTimeoutMs: 6_000 }),
    refused(/peer_timeout_ms \(6000\)/),
  );
  const fabric = fabricSchema.parse({ nats: { servers: "nats://127.0.0.1:4222", ack_timeout_ms: 2_000 } });
  assert.throws(() => natsFabricFromConfig(fabric, silentLogger), refused(/ack_timeout_ms/));
});

test("the default timeouts and an ack_timeout_ms just above peer_timeout_ms are accepted, without connecting", () => {
  for (const timeouts of [{}, { peerTimeoutMs: 2_000, ackTimeoutMs: 2_001 }]) {
    const fabric = new NatsFabric({ servers: ["nats://127.0.0.1:4222"], ...timeouts });
    assert.deepEqual(fabric.servers, ["nats://127.0.0.1:4222"]);
    assert.equal(fabric.connection, undefined, "nothing connects before start");
  }
  const fabric = fabricSchema.parse({
    nats: { servers: "nats://10.0.0.1:4222, nats://10.0.0.2:4222", peer_timeout_ms: 2_000, ack_timeout_ms: 3_000 },
  });
  assert.deepEqual(natsFabricFromConfig(fabric, silentLogger)?.servers, [
    "nats://10.0.0.1:4222",
    "nats://10.0.0.2:4222",
  ]);
});
