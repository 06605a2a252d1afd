import type { Buffer } from "node:buffer";
import { isWild, KeyIndex, type IndexChange } from "../../keyexpr/index.js";
import { ZestError } from "../../core/errors.js";
import { Slice, SLICE_MS, sortInSlices } from "../../core/slices.js";
import type { Timestamp } from "../../core/timestamp.js";
import { decideWrite, versionOf } from "../backend.js";
import { RECORD_HEADER_BYTES, Records, SLOT_BYTES } from "./memory-records.js";
import { driverOptions, intOpt, optionsObject, parseOptions, VOLUME_KEYS } from "../options.js";
import { ExpiryHeap } from "../../core/expiry-heap.js";
import type {
  ExpirySchedule,
  Insertion,
  StorageBackend,
  StorageCapability,
  StoredEntry,
  StoredLookup,
  StoredSample,
  Volume,
  VolumeDriver,
  WriteCondition,
} from "../backend.js";

/** Keys a scan hands out per batch, at most (a run sorted after a wide node comes whole). */
const SCAN_BATCH = 512;

/** Default quota of a memory storage, in bytes (256 MiB): see `MemoryBackend.used`. */
export const DEFAULT_MEMORY_QUOTA = 256 * 1024 * 1024;
/** What one node of the key index costs against the quota, besides its chunk's characters. */
export const INDEX_NODE_BYTES = 64;

/**
 * A storage held in process memory; each storage has its own index. Keys live in a chunk trie
 * (`KeyIndex`), so a wild query visits only the subtrees that can match, in slices that let
 * other requests through, and a plain key is one lookup per chunk. The trie maps each key to a
 * record number whose fields, payload bytes included, are held in typed arrays and shared slabs
 * (`Records`, docs/memory-volume.md): no JS object per key. Writes beyond the quota are refused
 * (`insufficient_storage`) and leave what was stored untouched.
 */
export class MemoryBackend implements StorageBackend {
  readonly capability: StorageCapability = { history: "latest", persistence: "volatile" };
  /** The storage's name, for error messages. */
  readonly name: string;
  /** Most bytes this storage may hold (see `used`). */
  readonly quota: number;
  private readonly index = new KeyIndex<number>();
  private readonly records = new Records();
  /** Keys holding a tombstone, with their slot, so purging does not scan every key. */
  private readonly tombstones = new Map<string, number>();
  /** Bytes of the key index's nodes (see `used`). */
  #nodeBytes = 0;
  /** Times `close` ran: a scan that sees it change stops (its walk is over cleared records). */
  #closings = 0;
  /**
   * Deadlines by slot, made on the first value with a lifetime. The key of a slot that has one
   * is kept in its record (`Records.keyOf`): the key index maps keys to slots, not back.
   */
  #deadlines: ExpiryHeap | undefined;
  /** The storage's schedule of deadlines: the service's timer takes the due keys from it. */
  readonly expiry: ExpirySchedule = {
    next: () => this.#deadlines?.peekDeadline(),
    takeDue: (now, max, onDue) => this.#takeDue(now, max, onDue),
  };

  constructor(name = "memory", quota = DEFAULT_MEMORY_QUOTA) {
    this.name = name;
    this.quota = quota;
  }

  /**
   * Bytes held, as the quota counts them: for each node of the key index (one per distinct key
   * prefix; a key shares the nodes of its prefix with other keys) its chunk's characters and
   * `INDEX_NODE_BYTES`; for each key `SLOT_BYTES`; for each value its payload and
   * `RECORD_HEADER_BYTES`; each distinct encoding and clock id once (UTF-16 code units).
   * Space freed by overwrites and deletes is counted free at once; compaction keeps what is not
   * yet reclaimed under a quarter of the live bytes (`Records.deadBytes`).
   */
  get used(): number {
    return this.#nodeBytes + this.records.bytes;
  }

  /** Slab bytes of overwritten or deleted values not yet reclaimed (for tests). */
  get deadBytes(): number {
    return this.records.deadBytes;
  }

  async lookup(key: string): Promise<StoredLookup | undefined> {
    const slot = this.index.get(key);
    if (slot === undefined) return undefined;
    const timestamp = this.records.timestamp(slot);
    const deadline = this.#deadlineOf(slot);
    return deadline === undefined
      ? { timestamp, deleted: this.records.deleted(slot), version: versionOf(timestamp) }
      : { timestamp, deleted: this.records.deleted(slot), version: versionOf(timestamp), deadline };
  }

  /** Decided and applied before it returns: the outcome comes back directly. */
  put(entry: StoredEntry, condition?: WriteCondition): Insertion {
    const slot = this.index.get(entry.key);
    const outcome = this.decide(slot, entry.timestamp, condition);
    if (outcome === "inserted") {
      const deadline = entry.deadline;
      const at = this.write(entry.key, slot, entry.timestamp, entry.encoding, entry.payload, deadline !== undefined);
      if (deadline !== undefined) this.#setDeadline(at, deadline);
      else if (this.#deadlines !== undefined && slot !== undefined) this.#clearDeadline(slot);
    }
    return outcome;
  }

  delete(key: string, timestamp: Timestamp, condition?: WriteCondition): Insertion {
    const slot = this.index.get(key);
    const outcome = this.decide(slot, timestamp, condition);
    // A delete frees space: it is never refused, even by a full storage.
    if (outcome === "inserted") {
      this.write(key, slot, timestamp, "", undefined, false);
      if (this.#deadlines !== undefined && slot !== undefined) this.#clearDeadline(slot);
    }
    return outcome;
  }

  #deadlineOf(slot: number): number | undefined {
    const d = this.#deadlines?.deadline(slot);
    return d === undefined || d === 0 ? undefined : d;
  }

  /** Gives the key just written a deadline (its slot exists now). */
  #setDeadline(slot: number, deadline: number): void {
    if (this.#deadlines === undefined) {
      this.#deadlines = new ExpiryHeap();
      this.records.deadlines = this.#deadlines;
    }
    this.#deadlines.set(slot, deadline);
  }

  #clearDeadline(slot: number): void {
    this.#deadlines!.remove(slot);
  }

  #takeDue(now: number, max: number, onDue: (key: string, timestamp: Timestamp) => void): number {
    const heap = this.#deadlines;
    if (heap === undefined) return 0;
    let n = 0;
    while (n < max && heap.size > 0 && heap.peekDeadline()! <= now) {
      // Still readable as expired (reads hide it) until the delete lands (`ExpiryHeap.pop`).
      const slot = heap.pop();
      const key = this.records.keyOf(slot);
      if (key !== undefined) onDue(key, this.records.timestamp(slot));
      n++;
    }
    return n;
  }

  private decide(slot: number | undefined, timestamp: Timestamp, condition: WriteCondition | undefined): Insertion {
    if (slot === undefined) return decideWrite(undefined, timestamp, condition);
    if (condition)
      return decideWrite(
        {
          timestamp: this.records.timestamp(slot),
          deleted: this.records.deleted(slot),
          deadline: this.#deadlineOf(slot),
        },
        timestamp,
        condition,
      );
    // What decideWrite decides without a condition, without making a Timestamp.
    return this.records.compare(slot, timestamp) >= 0 ? "outdated" : "inserted";
  }

  /**
   * Stores a value (`payload` undefined: a tombstone) at `key`, whose slot is `slot` (undefined:
   * a new key); `keyed`: the record keeps its key, for its expiry. A value that overflows the
   * quota is refused and changes nothing.
   */
  private write(
    key: string,
    slot: number | undefined,
    timestamp: Timestamp,
    encoding: string,
    payload: Buffer | undefined,
    keyed: boolean,
  ): number {
    const records = this.records;
    const used = this.used;
    let nodes = 0;
    let at = slot;
    if (at === undefined) {
      at = records.alloc();
      nodes = nodeBytes(this.index.set(key, at));
    }
    // A delete frees space: it is never refused. A value whose most possible cost fits is not
    // costed exactly (`Records.cost`: which ids are held already, what the held value gives back).
    if (payload !== undefined && used + mostCost(nodes, slot, timestamp, encoding, payload, keyed, key) > this.quota) {
      const grown =
        nodes +
        (slot === undefined ? SLOT_BYTES : 0) +
        records.cost(timestamp, encoding, payload, keyed ? key : undefined) -
        records.heldCost(at);
      if (grown > 0 && used + grown > this.quota) {
        if (slot === undefined) {
          this.index.delete(key);
          records.free(at);
        }
        throw new ZestError(
          "insufficient_storage",
          `memory storage ${this.name} is full: the write on ${key} needs ${grown} bytes, ${this.quota - used} of its quota of ${this.quota} bytes are left`,
        );
      }
    }
    const wasDeleted = slot !== undefined && records.deleted(at);
    records.set(at, timestamp, encoding, payload, keyed ? key : undefined);
    this.#nodeBytes += nodes;
    if (payload === undefined) this.tombstones.set(key, at);
    else if (wasDeleted) this.tombstones.delete(key);
    return at;
  }

  peek(key: string): StoredSample | null {
    const slot = this.index.get(key);
    return slot === undefined ? null : this.records.entry(key, slot);
  }

  async query(keyExpr: string): Promise<StoredEntry[]> {
    if (!isWild(keyExpr)) {
      const e = this.peek(keyExpr);
      return e ? [e] : [];
    }
    const out: StoredEntry[] = [];
    for await (const batch of this.scan(keyExpr)) for (const e of batch) out.push(e);
    return out;
  }

  /**
   * A walk of the key index in slices, so that a walk over many keys, or a costly selector, does
   * not hold the event loop: other clients' requests run between batches. What a write changes
   * meanwhile may or may not be seen. The index gives keys in order, except the run found under a
   * node with very many children (`KeyIndex.walk`), which is sorted here, in slices too.
   */
  async *scan(keyExpr: string): AsyncGenerator<StoredSample[]> {
    if (!isWild(keyExpr)) {
      const e = this.peek(keyExpr);
      if (e) yield [e];
      return;
    }
    const walk = this.index.walk(keyExpr);
    const records = this.records;
    // Runs of entries found in order, or not (to sort); the last one may still be growing.
    const runs: Array<{ inOrder: boolean; entries: StoredSample[] }> = [];
    // Read as found: a slot freed after this slice may hold another key. A scan leaves the entry
    // cache alone (it would only evict the keys read one by one).
    const visit = (key: string, slot: number, inOrder: boolean): void => {
      const e = records.scanEntry(key, slot);
      if (e === null) return;
      const last = runs[runs.length - 1];
      if (last !== undefined && last.inOrder === inOrder) last.entries.push(e);
      else runs.push({ inOrder, entries: [e] });
    };
    const slice = new Slice();
    const closings = this.#closings;
    for (;;) {
      // Between two batches the storage may have been removed: its records are gone.
      if (this.#closings !== closings)
        throw ZestError.unavailable(`memory storage ${this.name} was closed while a query on ${keyExpr} ran`);
      // Small batches: a consumer that renders each one as it comes holds few entries at a time.
      const done = walk.step(visit, SLICE_MS, SCAN_BATCH);
      // A run not in order is complete once the walk has left the node it came from.
      const open = done ? 0 : runs.length > 0 && !runs[runs.length - 1]!.inOrder && !walk.inOrder ? 1 : 0;
      const ready = runs.splice(0, runs.length - open);
      for (const run of ready) {
        if (!run.inOrder) await sortInSlices(run.entries, byKey);
        if (run.entries.length > 0) yield run.entries;
      }
      if (done) return;
      if (slice.over()) await slice.next();
    }
  }

  async purgeTombstones(before: bigint): Promise<void> {
    const records = this.records;
    // In slices: expiry can leave a million tombstones to purge at once.
    const slice = new Slice();
    const closings = this.#closings;
    for (const [key, slot] of this.tombstones) {
      if (slice.due()) {
        await slice.next();
        if (this.#closings !== closings) return;
        if (this.tombstones.get(key) !== slot) continue; // written meanwhile
      }
      if (records.time(slot) >= before) continue;
      this.tombstones.delete(key);
      if (!records.deleted(slot)) continue;
      const change = this.index.delete(key);
      if (change.old === undefined) continue;
      this.#nodeBytes -= nodeBytes(change);
      if (this.#deadlines !== undefined) this.#clearDeadline(slot);
      records.free(slot);
    }
  }

  async close(): Promise<void> {
    this.#closings++;
    this.index.clear();
    this.records.clear();
    this.tombstones.clear();
    this.#nodeBytes = 0;
    this.#deadlines?.clear();
  }

  /** Number of keys held, tombstones included (for status and tests). */
  get size(): number {
    return this.index.size;
  }
}

function byKey(a: StoredEntry, b: StoredEntry): number {
  return a.key < b.key ? -1 : a.key > b.key ? 1 : 0;
}

/**
 * The most a value can add to `MemoryBackend.used`: what `Records.cost` counts were its clock id
 * and encoding new, and nothing held before (`nodes`: the key index's new nodes' bytes).
 */
function mostCost(
  nodes: number,
  slot: number | undefined,
  timestamp: Timestamp,
  encoding: string,
  payload: Buffer,
  keyed: boolean,
  key: string,
): number {
  return (
    nodes +
    (slot === undefined ? SLOT_BYTES : 0) +
    RECORD_HEADER_BYTES +
    payload.length +
    timestamp.id.length +
    encoding.length +
    (keyed ? key.length + 2 : 0)
  );
}

function nodeBytes(change: IndexChange<number>): number {
  return change.nodes * INDEX_NODE_BYTES + change.chars;
}

/**
 * The memory driver's options: `quota` (bytes per storage) on the volume, and on a storage to
 * override its volume's.
 */
export const memoryOptions = driverOptions({
  volume: {
    schema: optionsObject({
      ...VOLUME_KEYS,
      quota: intOpt("bytes each storage of the volume may hold", 1).default(DEFAULT_MEMORY_QUOTA),
    }),
  },
  storage: {
    schema: optionsObject({
      quota: intOpt("bytes this storage may hold (default: its volume's `quota`)", 1).optional(),
    }),
  },
});

/** The built-in `memory` volume. Option: `quota` (bytes per storage, default 256 MiB). */
export const memoryDriver: VolumeDriver = {
  name: "memory",
  aliases: [],
  kind: "memory",
  adminPath: "<static-memory>",
  builtIn: true,
  options: memoryOptions,
  async open(id, options = {}): Promise<Volume> {
    const { quota } = parseOptions(memoryOptions.volume.schema, options, `volume ${id}`);
    return {
      id,
      driver: "memory",
      async createStorage(name, _keyExpr, storageOptions) {
        const own = parseOptions(memoryOptions.storage.schema, storageOptions ?? {}, `memory storage ${name}`);
        return new MemoryBackend(name, own.quota ?? quota);
      },
      status: () => ({ __required__: false }),
      async close() {},
    };
  },
};
