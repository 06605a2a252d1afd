import { isWild, KeyIndex, type IndexChange } from "../../keyexpr/index.js";
import { ZestError } from "../../core/errors.js";
import { Slice, SLICE_MS } from "../../core/slices.js";
import type { Timestamp } from "../../core/timestamp.js";
import { decideWrite, versionOf } from "../backend.js";
import type {
  Insertion,
  StorageBackend,
  StorageCapability,
  StoredEntry,
  StoredLookup,
  Volume,
  VolumeDriver,
  WriteCondition,
} from "../backend.js";

interface Slot {
  payload: Buffer | undefined; // undefined = tombstone
  encoding: string;
  timestamp: Timestamp;
}

/** Default quota of a memory storage, in bytes (256 MiB): see `MemoryBackend.used`. */
export const DEFAULT_MEMORY_QUOTA = 256 * 1024 * 1024;
/** What one node of the key index costs against the quota, besides its chunk's characters. */
export const INDEX_NODE_BYTES = 64;

/**
 * A storage held in process memory; each storage has its own index. Keys live in a chunk trie
 * (`KeyIndex`), so a wild query visits only the subtrees that can match, in slices that let
 * other requests through, and a plain key is one lookup per chunk. Writes beyond the quota are
 * refused (`insufficient_storage`) and leave what was stored untouched.
 */
export class MemoryBackend implements StorageBackend {
  readonly capability: StorageCapability = { history: "latest", persistence: "volatile" };
  /** The storage's name, for error messages. */
  readonly name: string;
  /** Most bytes this storage may hold (see `used`). */
  readonly quota: number;
  private readonly index = new KeyIndex<Slot>();
  /** Keys holding a tombstone, with its time, so purging does not scan every key. */
  private readonly tombstones = new Map<string, Timestamp>();
  #used = 0;

  constructor(name = "memory", quota = DEFAULT_MEMORY_QUOTA) {
    this.name = name;
    this.quota = quota;
  }

  /**
   * Bytes held, as the quota counts them: every value's payload and encoding (UTF-16 code
   * units), plus, for each node of the key index (one per distinct key prefix), its chunk's
   * characters and `INDEX_NODE_BYTES`. A key shares the nodes of its prefix with other keys.
   */
  get used(): number {
    return this.#used;
  }

  async lookup(key: string): Promise<StoredLookup | undefined> {
    const slot = this.index.get(key);
    return (
      slot && { timestamp: slot.timestamp, deleted: slot.payload === undefined, version: versionOf(slot.timestamp) }
    );
  }

  /** Decided and applied before it returns: the outcome comes back directly. */
  put(entry: StoredEntry, condition?: WriteCondition): Insertion {
    const outcome = this.decide(entry.key, entry.timestamp, condition);
    if (outcome === "inserted")
      this.write(entry.key, { payload: entry.payload, encoding: entry.encoding, timestamp: entry.timestamp }, true);
    return outcome;
  }

  delete(key: string, timestamp: Timestamp, condition?: WriteCondition): Insertion {
    const outcome = this.decide(key, timestamp, condition);
    // A delete frees space: it is never refused, even by a full storage.
    if (outcome === "inserted") this.write(key, { payload: undefined, encoding: "", timestamp }, false);
    return outcome;
  }

  private decide(key: string, timestamp: Timestamp, condition: WriteCondition | undefined): Insertion {
    const slot = this.index.get(key);
    return decideWrite(
      slot && { timestamp: slot.timestamp, deleted: slot.payload === undefined },
      timestamp,
      condition,
    );
  }

  /** Stores `slot` at `key`; with `check`, refuses (and undoes) a write that overflows the quota. */
  private write(key: string, slot: Slot, check: boolean): void {
    const change = this.index.set(key, slot);
    const old = change.old;
    const grown = nodeBytes(change) + slotBytes(slot) - (old ? slotBytes(old) : 0);
    if (check && grown > 0 && this.#used + grown > this.quota) {
      if (old) this.index.set(key, old);
      else this.index.delete(key);
      throw new ZestError(
        "insufficient_storage",
        `memory storage ${this.name} is full: the write on ${key} needs ${grown} bytes, ${this.quota - this.#used} of its quota of ${this.quota} bytes are left`,
      );
    }
    this.#used += grown;
    if (slot.payload === undefined) this.tombstones.set(key, slot.timestamp);
    else if (old?.payload === undefined) this.tombstones.delete(key);
  }

  peek(key: string): StoredEntry | null {
    const slot = this.index.get(key);
    return slot?.payload ? { key, payload: slot.payload, encoding: slot.encoding, timestamp: slot.timestamp } : null;
  }

  async query(keyExpr: string): Promise<StoredEntry[]> {
    if (!isWild(keyExpr)) {
      const e = this.peek(keyExpr);
      return e ? [e] : [];
    }
    const walk = this.index.walk(keyExpr);
    const found: Array<[string, Slot]> = [];
    // A walk over many keys, or a costly selector, must not hold the event loop: other clients'
    // requests run between slices. What a write changes meanwhile may or may not be seen.
    const slice = new Slice();
    while (!walk.step(found, SLICE_MS)) await slice.next();
    const out: StoredEntry[] = [];
    for (const [key, slot] of found) {
      if (slot.payload) out.push({ key, payload: slot.payload, encoding: slot.encoding, timestamp: slot.timestamp });
    }
    return out;
  }

  async purgeTombstones(before: bigint): Promise<void> {
    for (const [key, time] of this.tombstones) {
      if (time.time >= before) continue;
      this.tombstones.delete(key);
      const slot = this.index.get(key);
      if (slot === undefined || slot.payload !== undefined) continue;
      const change = this.index.delete(key);
      if (change.old) this.#used -= nodeBytes(change) + slotBytes(change.old);
    }
  }

  async close(): Promise<void> {
    this.index.clear();
    this.tombstones.clear();
    this.#used = 0;
  }

  /** Number of keys held, tombstones included (for status and tests). */
  get size(): number {
    return this.index.size;
  }
}

function slotBytes(slot: Slot): number {
  return (slot.payload?.length ?? 0) + slot.encoding.length;
}

function nodeBytes(change: IndexChange<Slot>): number {
  return change.nodes * INDEX_NODE_BYTES + change.chars;
}

/**
 * The `quota` option (bytes, a positive integer) of a memory volume or storage; a storage's own
 * option wins over its volume's.
 */
function quotaOption(options: Readonly<Record<string, unknown>>, fallback: number, where: string): number {
  const q = options.quota;
  if (q === undefined) return fallback;
  if (typeof q !== "number" || !Number.isSafeInteger(q) || q < 1) {
    throw ZestError.badRequest(`${where}: quota must be a positive whole number of bytes, got ${JSON.stringify(q)}`);
  }
  return q;
}

/** The built-in `memory` volume. Option: `quota` (bytes per storage, default 256 MiB). */
export const memoryDriver: VolumeDriver = {
  name: "memory",
  aliases: [],
  kind: "memory",
  adminPath: "<static-memory>",
  builtIn: true,
  async open(id, options = {}): Promise<Volume> {
    const volumeQuota = quotaOption(options, DEFAULT_MEMORY_QUOTA, `volume ${id}`);
    return {
      id,
      driver: "memory",
      async createStorage(name, _keyExpr, storageOptions) {
        return new MemoryBackend(name, quotaOption(storageOptions ?? {}, volumeQuota, `storage ${name}`));
      },
      status: () => ({ __required__: false }),
      async close() {},
    };
  },
};
