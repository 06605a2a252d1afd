/**
 * Volume drivers whose dependencies are heavy (better-sqlite3, the NATS client): their modules
 * are imported the first time a volume of theirs opens, so `import "zest"` loads neither.
 * Embedders who want the modules themselves import `zest/sqlite` or `zest/nats`.
 */
import type { VolumeDriver } from "./storage/backend.js";
import { type DriverDescriptor, jetstreamDescriptor, sqliteDescriptor } from "./storage/volumes/descriptors.js";
import type { NatsConnectionSource } from "./storage/volumes/jetstream.js";

/** A driver described by `descriptor` whose implementation `load` imports on first use. */
export function lazyDriver(descriptor: DriverDescriptor, load: () => Promise<VolumeDriver>): VolumeDriver {
  let loading: Promise<VolumeDriver> | undefined;
  return {
    ...descriptor,
    async open(id, options, ctx) {
      loading ??= load();
      loading.catch(() => (loading = undefined)); // a failed import is retried next time
      return (await loading).open(id, options, ctx);
    },
  };
}

/** The `sqlite` volume driver (better-sqlite3 is loaded when the first SQLite volume opens). */
export const sqliteDriver: VolumeDriver = lazyDriver(
  sqliteDescriptor,
  async () => (await import("./storage/volumes/sqlite.js")).sqliteDriver,
);

/**
 * The `jetstream` volume driver; volumes without `servers` use the connection `shared` returns
 * (the fabric's). The NATS client is loaded when the first JetStream volume opens.
 */
export function createJetstreamDriver(shared?: NatsConnectionSource): VolumeDriver {
  return lazyDriver(jetstreamDescriptor, async () =>
    (await import("./storage/volumes/jetstream.js")).createJetstreamDriver(shared),
  );
}
