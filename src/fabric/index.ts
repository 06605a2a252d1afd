/**
 * How routers reach each other. Without configuration a router runs alone (no fabric);
 * `fabric.nats.servers` (or `--nats`) joins a NATS cluster through `NatsFabric`.
 */
import type { FabricConfig } from "./schema.js";
import type { Logger } from "../core/log.js";
import { NatsFabric } from "./nats-fabric.js";

export { NatsFabric, type NatsFabricOptions } from "./nats-fabric.js";
export { DEFAULT_MAX_DECLARATIONS_PER_PEER } from "./peer-table.js";
export { type FabricConfig, fabricSchema } from "./schema.js";
export { coverAll, coveringSubjects, keyToSubject, subjectToKey } from "./subjects.js";

/**
 * The NATS fabric the `fabric` section asks for (parsed with `fabricSchema`, which fills the
 * defaults and splits the servers), or undefined when it names no servers. Throws a `bad_input`
 * ZestError for timings that do not fit together.
 */
export function natsFabricFromConfig(fabric: FabricConfig | undefined, logger: Logger): NatsFabric | undefined {
  const nats = fabric?.nats;
  return nats === undefined ? undefined : new NatsFabric({ ...nats, logger });
}
