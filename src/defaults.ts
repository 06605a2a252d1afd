import { createJetstreamDriver, sqliteDriver } from "./drivers.js";
import { SharedNatsConnection } from "./nats-connection.js";
import type { StartOptions } from "./runtime.js";
import { influxdbDriver } from "./storage/volumes/influxdb.js";

/**
 * The parts a full router ships with: volume drivers and the fabrics (the REST variants are
 * all built in: rest/variants.ts).
 * Kept apart from `runtime.ts` so embedders can start a router with only what they need; the
 * SQLite and NATS modules are imported only when a router uses them.
 */
export function defaultStartOptions(): Omit<StartOptions, "logger"> {
  // The NATS fabric (from --nats) and the jetstream volumes share the router's one NATS connection.
  const nats = new SharedNatsConnection();
  return {
    drivers: [sqliteDriver, influxdbDriver, createJetstreamDriver(nats.source)],
    fabric: async (section, logger) => {
      if (section?.nats === undefined) return undefined;
      const { natsFabricFromConfig } = await import("./fabric/index.js");
      return nats.attach(natsFabricFromConfig(section, logger));
    },
  };
}
