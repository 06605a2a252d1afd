/**
 * How the volumes with heavy dependencies (better-sqlite3, the NATS client) describe themselves.
 * Kept apart from their modules so the storage manager and the admin layouts can know them
 * before the modules (and their dependencies) are loaded.
 */
import type { VolumeDriver } from "../backend.js";

/** A driver's self-description: everything but `open`. */
export type DriverDescriptor = Omit<VolumeDriver, "open">;

export const sqliteDescriptor: DriverDescriptor = {
  name: "sqlite",
  aliases: ["sqlite3"],
  kind: "sql",
  adminPath: "<built-in sqlite>",
};

export const jetstreamDescriptor: DriverDescriptor = {
  name: "jetstream",
  aliases: [],
  kind: "jetstream",
  adminPath: "<built-in jetstream>",
};
