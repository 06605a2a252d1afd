/**
 * A small volume driver for tests, of a kind admission never heard of: its volumes reach a
 * `redis://` host (`url`) and write a dump file (`dump`). It declares both, and keeps its data
 * in memory storages.
 */
import type { VolumeDriver } from "../../src/storage/backend.js";
import {
  driverOptions,
  hostOf,
  optionsObject,
  parseOptions,
  stringOpt,
  VOLUME_KEYS,
} from "../../src/storage/options.js";
import { memoryDriver } from "../../src/storage/volumes/memory.js";

const redisUrl = (v: string): string | undefined => {
  try {
    return new URL(v).protocol === "redis:" ? undefined : `must be a redis:// URL (got "${v}")`;
  } catch {
    return `must be a redis:// URL (got "${v}")`;
  }
};

export const cacheOptions = driverOptions({
  volume: {
    schema: optionsObject({
      ...VOLUME_KEYS,
      url: stringOpt("the cache server", redisUrl),
      dump: stringOpt("a file the volume writes its dump to").optional(),
    }),
    reaches: (o) => ({ hosts: [hostOf(new URL(o.url), "6379")], files: o.dump === undefined ? [] : [o.dump] }),
  },
  storage: {
    schema: optionsObject({ snapshot: stringOpt("a file the storage writes its snapshot to").optional() }),
    reaches: (o) => ({ files: o.snapshot === undefined ? [] : [o.snapshot] }),
  },
});

/** Opens nothing remote: what is tested is what the manager lets it be asked to reach. */
export const cacheDriver: VolumeDriver = {
  name: "cache",
  aliases: [],
  kind: "cache",
  adminPath: "<test cache>",
  options: cacheOptions,
  async open(id, options, ctx) {
    parseOptions(cacheOptions.volume.schema, options, `volume ${id}`);
    const memory = await memoryDriver.open(id, {}, ctx);
    return {
      id,
      driver: "cache",
      async createStorage(name, keyExpr, opts) {
        parseOptions(cacheOptions.storage.schema, opts, `cache storage ${name}`);
        return memory.createStorage(name, keyExpr, {});
      },
      status: () => ({ __required__: false }),
      close: () => memory.close(),
    };
  },
};
