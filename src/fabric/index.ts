/**
 * How routers reach each other. Without configuration a router runs alone (no fabric);
 * `fabric.nats.servers` (or `--nats`) joins a NATS cluster through `NatsFabric`.
 */
import type { FabricConfig } from "../config/schema.js";
import type { Logger } from "../core/log.js";
import { NatsFabric, type NatsFabricOptions } from "./nats-fabric.js";

export { NatsFabric, type NatsFabricOptions } from "./nats-fabric.js";
export { DEFAULT_MAX_DECLARATIONS_PER_PEER } from "./peer-table.js";
export { coverAll, coveringSubjects, keyToSubject, subjectToKey } from "./subjects.js";

/** Config options of `fabric.nats` besides `servers`, by their config name. */
const NUMERIC_OPTIONS = {
  heartbeat_ms: "heartbeatMs",
  peer_timeout_ms: "peerTimeoutMs",
  ack_timeout_ms: "ackTimeoutMs",
  connect_timeout_ms: "connectTimeoutMs",
  reconnect_time_wait_ms: "reconnectTimeWaitMs",
} as const satisfies Record<string, keyof NatsFabricOptions>;

/**
 * The NATS fabric the `fabric` section (parsed with `fabricSchema`) asks for, or undefined when it
 * names no servers. `fabric.nats`: `servers` (a list or a comma-separated string), and optionally
 * `heartbeat_ms` (1000), `peer_timeout_ms` (4000), `ack_timeout_ms` (5000), `connect_timeout_ms`
 * (5000), `reconnect_time_wait_ms` (250). Throws a `bad_input` ZestError for timings that do not
 * fit together.
 */
export function natsFabricFromConfig(fabric: FabricConfig | undefined, logger: Logger): NatsFabric | undefined {
  const nats = fabric?.nats;
  if (nats === undefined) return undefined;
  const raw = nats.servers;
  const list = typeof raw === "string" ? raw.split(",") : (raw ?? []);
  const servers = list.map((s) => s.trim()).filter(Boolean);
  if (servers.length === 0) return undefined;
  const options: { -readonly [K in keyof NatsFabricOptions]: NatsFabricOptions[K] } = { servers, logger };
  for (const [name, field] of Object.entries(NUMERIC_OPTIONS)) {
    const v = nats[name as keyof typeof NUMERIC_OPTIONS];
    if (v !== undefined) options[field] = v;
  }
  return new NatsFabric(options);
}
