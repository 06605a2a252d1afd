import { intersects, isWild } from "../../keyexpr/index.js";
import type { Timestamp } from "../../core/timestamp.js";
import { SyncWritesBackend } from "../backend.js";
import type { StorageBackend, StoredEntry, StoredLookup, SyncWrites, Volume, VolumeDriver } from "../backend.js";

interface Slot {
  payload: Buffer | undefined; // undefined = tombstone
  encoding: string;
  timestamp: Timestamp;
}

/** A storage held in process memory; each storage has its own map. */
export class MemoryBackend extends SyncWritesBackend implements StorageBackend {
  readonly history = "latest" as const;
  private readonly map = new Map<string, Slot>();

  readonly sync: SyncWrites = {
    lookup: (key) => {
      const slot = this.map.get(key);
      return slot && { timestamp: slot.timestamp, deleted: slot.payload === undefined };
    },
    put: (entry) => {
      this.map.set(entry.key, { payload: entry.payload, encoding: entry.encoding, timestamp: entry.timestamp });
    },
    delete: (key, timestamp) => {
      this.map.set(key, { payload: undefined, encoding: "", timestamp });
    },
  };

  async query(keyExpr: string): Promise<StoredEntry[]> {
    if (!isWild(keyExpr)) {
      const slot = this.map.get(keyExpr);
      return slot?.payload ? [{ key: keyExpr, payload: slot.payload, encoding: slot.encoding, timestamp: slot.timestamp }] : [];
    }
    const out: StoredEntry[] = [];
    for (const [key, slot] of this.map) {
      if (slot.payload && intersects(keyExpr, key)) out.push({ key, payload: slot.payload, encoding: slot.encoding, timestamp: slot.timestamp });
    }
    return out;
  }

  async purgeTombstones(before: bigint): Promise<void> {
    for (const [key, slot] of this.map) if (slot.payload === undefined && slot.timestamp.time < before) this.map.delete(key);
  }

  async close(): Promise<void> {
    this.map.clear();
  }

  /** Number of keys held, tombstones included (for status and tests). */
  get size(): number {
    return this.map.size;
  }
}

/** The built-in `memory` volume. */
export const memoryDriver: VolumeDriver = {
  name: "memory",
  async open(id): Promise<Volume> {
    return {
      id,
      driver: "memory",
      async createStorage() {
        return new MemoryBackend();
      },
      status: () => ({ __required__: false }),
      async close() {},
    };
  },
};
