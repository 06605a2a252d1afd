import { variantB } from "./rest/variant-b.js";
import { natsFabricFromConfig, type NatsFabric } from "./fabric/index.js";
import type { StartOptions } from "./runtime.js";
import { influxdbDriver } from "./storage/volumes/influxdb.js";
import { createJetstreamDriver } from "./storage/volumes/jetstream.js";
import { sqliteDriver } from "./storage/volumes/sqlite.js";

/**
 * The parts a full router ships with: volume drivers, Variant B and the fabrics.
 * Kept apart from `runtime.ts` so embedders can start a router with only what they need.
 */
export function defaultStartOptions(): Omit<StartOptions, "logger"> {
  // The NATS fabric (from --nats) and the jetstream volume share the router's one NATS connection.
  let nats: NatsFabric | undefined;
  return {
    drivers: [sqliteDriver, influxdbDriver, createJetstreamDriver(() => nats?.connection)],
    variants: [variantB],
    fabric: (config, logger) => (nats = natsFabricFromConfig(config, logger)),
  };
}
