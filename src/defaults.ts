import { variantB } from "./rest/variant-b.js";
import type { StartOptions } from "./runtime.js";
import { influxdbDriver } from "./storage/volumes/influxdb.js";
import { sqliteDriver } from "./storage/volumes/sqlite.js";

/**
 * The parts a full router ships with: volume drivers, both REST variants and the fabrics.
 * Kept apart from `runtime.ts` so embedders can start a router with only what they need.
 */
export function defaultStartOptions(): Omit<StartOptions, "logger"> {
  return { drivers: [sqliteDriver, influxdbDriver], codecs: { b: variantB } };
}
