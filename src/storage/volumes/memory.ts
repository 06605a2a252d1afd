import { intersects, isWild } from "../../keyexpr/index.js";
import type { Timestamp } from "../../core/timestamp.js";
import { decideWrite, versionOf } from "../backend.js";
import type { Insertion, StorageBackend, StorageCapability, StoredEntry, StoredLookup, Volume, VolumeDriver, WriteCondition } from "../backend.js";

interface Slot {
  payload: Buffer | undefined; // undefined = tombstone
  encoding: string;
  timestamp: Timestamp;
}

/** A storage held in process memory; each storage has its own map. */
export class MemoryBackend implements StorageBackend {
  readonly capability: StorageCapability = { history: "latest", persistence: "volatile" };
  private readonly map = new Map<string, Slot>();

  async lookup(key: string): Promise<StoredLookup | undefined> {
    const slot = this.map.get(key);
    return slot && { timestamp: slot.timestamp, deleted: slot.payload === undefined, version: versionOf(slot.timestamp) };
  }

  /** Decided and applied before it returns: the outcome comes back directly. */
  put(entry: StoredEntry, condition?: WriteCondition): Insertion {
    const outcome = this.decide(entry.key, entry.timestamp, condition);
    if (outcome === "inserted") this.map.set(entry.key, { payload: entry.payload, encoding: entry.encoding, timestamp: entry.timestamp });
    return outcome;
  }

  delete(key: string, timestamp: Timestamp, condition?: WriteCondition): Insertion {
    const outcome = this.decide(key, timestamp, condition);
    if (outcome === "inserted") this.map.set(key, { payload: undefined, encoding: "", timestamp });
    return outcome;
  }

  private decide(key: string, timestamp: Timestamp, condition: WriteCondition | undefined): Insertion {
    const slot = this.map.get(key);
    return decideWrite(slot && { timestamp: slot.timestamp, deleted: slot.payload === undefined }, timestamp, condition);
  }

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
  aliases: [],
  kind: "memory",
  adminPath: "<static-memory>",
  builtIn: true,
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
