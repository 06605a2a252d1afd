/**
 * The `jetstream` volume: each storage is a JetStream key/value bucket, replicated by the NATS
 * cluster (`replicas`), so losing one NATS server or one router loses no acknowledged write.
 *
 * Keys. A KV key is a NATS subject (`[-/_=.A-Za-z0-9]`, `.` separating tokens), so each key
 * chunk becomes one token and every other byte is written `=XX` (uppercase hex of the UTF-8
 * byte): `demo/a b` → `demo.a=20b`. Tokens keep the hierarchy, so a wildcard query lists only
 * the keys under its literal prefix (`demo.>`), then refines with `intersects`.
 *
 * Values. One binary envelope per key: `u8 1 | u8 flags (1 = deleted) | str8 timestamp | str16
 * encoding | payload`. A delete is stored as a tombstone (flag set, empty payload) so last-writer-
 * wins still sees its timestamp; `purgeTombstones` replaces old tombstones by the KV's own purge
 * marker, guarded by the revision it read so that a newer put is never lost. The bucket keeps
 * one revision per key (`history: "latest"`); a put resolves once JetStream acknowledged it,
 * i.e. once the replicas' quorum has it.
 *
 * Writes. Each write decides last-writer-wins and its condition on what the key holds, and
 * writes only over the revision that holds it (`previousSeq`); when another writer got there
 * first, JetStream refuses, and the write reads the key and decides again. So routers sharing a
 * bucket never overwrite a newer value with an older one, and a conditional write holds against
 * every router. The version is the held sample's timestamp, like on every volume; the revision
 * is what makes its check race-free, with the message id each write carries (a clustered
 * nats-server alone may take two writes racing on one revision: see jetstream-publisher.ts).
 *
 * Pipeline. A write does not need a read round trip when the backend knows what the key holds:
 * a bounded cache keeps the (revision, timestamp) pair of keys this backend wrote or read last,
 * and a key it never saw is guessed absent (revision 0). A guess is only ever used to insert,
 * and JetStream checks it (the expected revision): a stale guess costs one refused publish, then
 * a read. Writes to one key run one after the other (`KeyedPipeline`), writes to different keys
 * run concurrently, at most `max_in_flight` per storage (default `MAX_IN_FLIGHT`); each resolves
 * only once JetStream acknowledged it. The publishes themselves (`JetStreamPublisher`, one per
 * volume) leave in one batch per event-loop turn, with their acknowledgements on one inbox.
 */
import { Buffer } from "node:buffer";
import { jetstreamDescriptor, jetstreamOptions } from "./descriptors.js";
import { jetstream, JetStreamApiError, type JetStreamClient, type JetStreamManager } from "@nats-io/jetstream";
import { Kvm, type KV } from "@nats-io/kv";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { intersects, isWild, literalPrefix } from "../../keyexpr/index.js";
import { BinaryReader, BinaryWriter, DecodeError } from "../../core/binary.js";
import { errorMessage, ZestError } from "../../core/errors.js";
import type { Logger } from "../../core/log.js";
import { Timestamp } from "../../core/timestamp.js";
import { validDeadline } from "../../core/lifetime.js";
import { tokenEscaper } from "../../core/token-escape.js";
import { decideWrite, versionOf } from "../backend.js";
import { JetStreamPublisher, type LinkState, WRONG_LAST_SEQUENCE } from "./jetstream-publisher.js";
import { KeyedPipeline } from "./keyed-pipeline.js";
import type {
  Insertion,
  StorageBackend,
  StorageCapability,
  StoredEntry,
  StoredLookup,
  Volume,
  VolumeContext,
  VolumeDriver,
  WriteCondition,
} from "../backend.js";
import { parseOptions, type RawOptions } from "../options.js";

const ENVELOPE_VERSION = 1;
const EMPTY = new Uint8Array(0);
/** The envelope of a value with a lifetime: its deadline (f64, Unix ms) follows the timestamp. */
const ENVELOPE_WITH_DEADLINE = 2;
const DELETED = 1;
/** Wildcard queries matching at most this many keys read them one by one (see `query`). */
const DIRECT_READ_LIMIT = 1_000;
const READ_CONCURRENCY = 32;
/** The headers of a KV purge (what `kv.purge` sends): the marker replaces the key's messages. */
const PURGE_HEADERS: ReadonlyArray<readonly [string, string]> = [
  ["KV-Operation", "PURGE"],
  ["Nats-Rollup", "sub"],
];
export { MAX_IN_FLIGHT } from "./descriptors.js";
/** Keys whose last known revision a storage remembers (see "Pipeline" above). */
const KNOWN_REVISIONS = 16_384;

/** True for a byte a KV key token holds verbatim. */
function plain(c: number): boolean {
  return (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a) || c === 0x2d || c === 0x5f;
}

const KV_TOKEN = tokenEscaper("=", plain, "KV key token");

/** One key chunk as one KV key token (`=XX` escapes; the empty chunk is `=`). */
export const encodeKvToken: (chunk: string) => string = KV_TOKEN.encode;

/** Inverse of `encodeKvToken`; throws on a token it cannot have produced. */
export const decodeKvToken: (token: string) => string = KV_TOKEN.decode;

/** Keys whose chunks are all non-empty and plain: their KV key only swaps `/` for `.`. */
const PLAIN_KEY = /^[-\w]+(?:\/[-\w]+)*$/;

/** A zest key as a KV key. */
export function keyToKvKey(key: string): string {
  // The common case without splitting, one string per chunk and joining (once per write).
  if (PLAIN_KEY.test(key)) return key.replaceAll("/", ".");
  return key.split("/").map(encodeKvToken).join(".");
}

/** A KV key made by `keyToKvKey` back to the zest key. */
export function kvKeyToKey(kvKey: string): string {
  return kvKey.split(".").map(decodeKvToken).join("/");
}

/** A default bucket name from a storage name (bucket names allow `[-_A-Za-z0-9]`). */
export function defaultBucket(storage: string): string {
  return `zest_${storage.replace(/[^-\w]/g, "_")}`;
}

interface Decoded {
  readonly timestamp: Timestamp;
  readonly deleted: boolean;
  readonly encoding: string;
  readonly payload: Buffer;
  readonly deadline?: number;
}

/**
 * A stored value as the bucket holds it: version (1, or 2 when a deadline follows the timestamp),
 * flags (deleted), the timestamp (length-prefixed latin1), the deadline (f64 Unix ms, version 2
 * only), the encoding (u16 big-endian length, UTF-8), then the payload.
 */
export function encodeValue(
  timestamp: Timestamp,
  deleted: boolean,
  encoding: string,
  payload: Buffer,
  deadline?: number,
): Buffer {
  const ts = timestamp.encode();
  // Room for everything up front (string() reserves three bytes a character), so nothing is copied.
  const w = new BinaryWriter(13 + 3 * ts.length + 3 * encoding.length + payload.length);
  w.u8(deadline === undefined ? ENVELOPE_VERSION : ENVELOPE_WITH_DEADLINE)
    .u8(deleted ? DELETED : 0)
    .u8(ts.length)
    .string(ts);
  if (deadline !== undefined) w.f64be(deadline);
  w.u16be(Buffer.byteLength(encoding)).string(encoding).bytes(payload);
  return w.view();
}

/** A value made by `encodeValue`; every read is bounds-checked first, so a truncated value throws a `DecodeError`. */
export function decodeValue(data: Uint8Array): Decoded {
  const r = new BinaryReader(data);
  const version = r.remaining < 5 ? -1 : r.u8();
  if (version !== ENVELOPE_VERSION && version !== ENVELOPE_WITH_DEADLINE) throw new DecodeError("not a zest value");
  const deleted = (r.u8() & DELETED) !== 0;
  const ts = r.bytes(r.u8()).toString("latin1");
  let deadline: number | undefined;
  if (version === ENVELOPE_WITH_DEADLINE) {
    deadline = r.f64be();
    if (!validDeadline(deadline)) throw new DecodeError("a zest value with a malformed deadline");
  }
  const encoding = r.string(r.u16be());
  const payload = Buffer.from(r.bytes(r.remaining));
  return deadline === undefined
    ? { timestamp: Timestamp.decode(ts), deleted, encoding, payload }
    : { timestamp: Timestamp.decode(ts), deleted, encoding, payload, deadline };
}

/**
 * Whether a NATS connection is up. Requests in flight when it drops would otherwise wait for
 * their full timeout (their answer is lost with the connection); they fail at once instead, and
 * new ones fail at once until it is back. Failing early never loses an acknowledged write: a
 * write is acknowledged only when JetStream's answer arrived.
 */
export class NatsLink implements LinkState {
  private up = true;
  /** Rejecters of the requests in flight, failed at once when the connection drops. */
  private readonly pending = new Set<(err: Error) => void>();
  /** Told each time the connection drops (the publisher fails its writes in flight). */
  private readonly downListeners = new Set<(err: Error) => void>();

  constructor(nc: NatsConnection) {
    void (async () => {
      for await (const s of nc.status()) {
        if (s.type === "disconnect" || s.type === "close") {
          if (!this.up) continue;
          this.up = false;
          const err = ZestError.unavailable("lost the connection to NATS");
          for (const fail of [...this.pending]) fail(err);
          for (const listener of [...this.downListeners]) listener(err);
        } else if (s.type === "reconnect") {
          this.up = true;
        }
      }
    })();
  }

  /** True while connected. */
  get connected(): boolean {
    return this.up;
  }

  /** Calls `listener` each time the connection drops; returns the function that stops it. */
  onDown(listener: (err: Error) => void): () => void {
    this.downListeners.add(listener);
    return () => this.downListeners.delete(listener);
  }

  /** Requests in flight (each is forgotten once it settles, so this stays bounded). */
  get inFlight(): number {
    return this.pending.size;
  }

  /** Runs a request; rejects with 503 if the connection is down or drops before the answer. */
  run<T>(op: () => Promise<T>): Promise<T> {
    if (!this.up) return Promise.reject(ZestError.unavailable("the connection to NATS is down"));
    return new Promise<T>((resolve, reject) => {
      const fail = (err: Error): void => {
        this.pending.delete(fail);
        reject(err);
      };
      this.pending.add(fail);
      // Its late failure after a disconnect has nobody to tell: `reject` then does nothing.
      let p: Promise<T>;
      try {
        p = op();
      } catch (err) {
        fail(err as Error);
        return;
      }
      p.then((v) => {
        this.pending.delete(fail);
        resolve(v);
      }, fail);
    });
  }
}

/** A storage kept in one JetStream KV bucket. */
export class JetstreamBackend implements StorageBackend {
  readonly capability: StorageCapability = { history: "latest", persistence: "durable", shared: true };
  readonly bucket: string;
  /**
   * `jetstream/<bucket>` when the volume uses the fabric's NATS connection: every router's
   * storage of the bucket then writes one stream, so a sample another router's storage wrote in
   * it needs no write here (docs/conditional-writes.md, "Shared stores"). Undefined for a volume
   * with its own `servers` (another cluster may hold a bucket of the same name).
   */
  readonly store: string | undefined;
  /** The stream behind the bucket, and the subject prefix of its keys. */
  private readonly stream: string;
  private readonly subjectPrefix: string;
  private readonly kv: KV;
  private readonly jsm: JetStreamManager;
  private readonly link: NatsLink;
  private readonly publisher: JetStreamPublisher;
  private readonly drop: boolean;
  private readonly logger: Logger;
  /** Tombstones this backend wrote or read, by key: the candidates for `purgeTombstones`. */
  private readonly tombstones = new Map<string, bigint>();
  /**
   * What each key held at a revision this backend saw last (insertion order = age, bounded), or
   * `STALE`: another router wrote it since (`stored`), so a write reads it first.
   */
  private readonly known = new Map<string, Known | typeof STALE>();
  /** Writes: one at a time per key, at most `max_in_flight` at once. */
  private readonly writes: KeyedPipeline;

  constructor(
    bucket: string,
    kv: KV,
    io: { jsm: JetStreamManager; link: NatsLink; publisher: JetStreamPublisher },
    options: { drop: boolean; maxInFlight: number; shared: boolean },
    logger: Logger,
  ) {
    this.bucket = bucket;
    this.store = options.shared ? `jetstream/${bucket}` : undefined;
    this.stream = `KV_${bucket}`;
    this.subjectPrefix = `$KV.${bucket}.`;
    this.kv = kv;
    this.jsm = io.jsm;
    this.link = io.link;
    this.publisher = io.publisher;
    this.drop = options.drop;
    this.writes = new KeyedPipeline(options.maxInFlight);
    this.logger = logger;
  }

  /** Writes in flight now, the most ever in flight at once, and the bound (`max_in_flight`). */
  get writeStats(): { inFlight: number; peak: number; limit: number } {
    return { inFlight: this.writes.running, peak: this.writes.peak, limit: this.writes.limit };
  }

  /**
   * Another router's storage of this bucket wrote `key`: JetStream holds it already, and what
   * this backend remembers of the key is stale. Marked so, the next write here reads the key
   * first instead of publishing over a revision JetStream would refuse.
   */
  stored(key: string): void {
    if (this.known.has(key)) this.known.delete(key);
    this.known.set(key, STALE);
    if (this.known.size > KNOWN_REVISIONS) this.known.delete(this.known.keys().next().value!);
  }

  async lookup(key: string): Promise<StoredLookup | undefined> {
    const v = (await this.read(key))?.value;
    if (v === undefined) return undefined;
    const found = { timestamp: v.timestamp, deleted: v.deleted, version: versionOf(v.timestamp) };
    return v.deadline === undefined ? found : { ...found, deadline: v.deadline };
  }

  put(entry: StoredEntry, condition?: WriteCondition): Promise<Insertion> {
    const value = encodeValue(entry.timestamp, false, entry.encoding, entry.payload, entry.deadline);
    return this.writes.run(entry.key, () => this.writeNow(entry.key, entry.timestamp, value, condition));
  }

  delete(key: string, timestamp: Timestamp, condition?: WriteCondition): Promise<Insertion> {
    const value = encodeValue(timestamp, true, "", Buffer.alloc(0));
    return this.writes.run(key, () => this.writeNow(key, timestamp, value, condition));
  }

  /**
   * Decides last-writer-wins and `condition` on what `key` holds and writes `value` only over
   * that revision. First on what the backend last saw of the key (no round trip), when that says
   * insert; otherwise, or when JetStream refuses that revision, on what a read returns. Several
   * routers may write one bucket (storages with the same name share it): when another wrote in
   * between, the key is read and decided again.
   */
  private async writeNow(
    key: string,
    timestamp: Timestamp,
    value: Buffer,
    condition: WriteCondition | undefined,
  ): Promise<Insertion> {
    const kvKey = keyToKvKey(key);
    const deleted = value[1] === DELETED;
    // A key never seen is guessed absent (revision 0 means "no message on this key" to JetStream).
    const guess = this.known.get(key);
    if (guess !== STALE && guessInserts(guess, timestamp, condition)) {
      try {
        await this.commit(kvKey, key, value, guess?.revision ?? 0, timestamp, deleted);
        return "inserted";
      } catch (err) {
        if (!isWrongRevision(err)) throw err;
        this.known.delete(key);
      }
    }
    for (let attempt = 0; ; attempt++) {
      const current = await this.read(key);
      const held = current?.value;
      if (
        decideWrite(
          held && { timestamp: held.timestamp, deleted: held.deleted, deadline: held.deadline },
          timestamp,
          condition,
        ) === "outdated"
      )
        return "outdated";
      try {
        await this.commit(kvKey, key, value, current?.revision ?? 0, timestamp, deleted);
        return "inserted";
      } catch (err) {
        if (attempt < 10 && isWrongRevision(err)) continue;
        throw err;
      }
    }
  }

  /** One KV put over `revision`; remembers what the key holds once JetStream acknowledged it. */
  private async commit(
    kvKey: string,
    key: string,
    value: Buffer,
    revision: number,
    timestamp: Timestamp,
    deleted: boolean,
  ): Promise<void> {
    const seq = await this.publisher.publish(this.subjectPrefix + kvKey, value, revision);
    this.remember(key, { revision: seq, timestamp, deleted, deadline: deadlineIn(value) });
    if (deleted) this.tombstones.set(key, timestamp.time);
    else this.tombstones.delete(key);
  }

  private remember(key: string, known: Known): void {
    const held = this.known.get(key);
    // A read that started before a write may answer after it: never step back to its revision.
    if (held !== undefined && held !== STALE && held.revision > known.revision) return;
    this.known.delete(key);
    this.known.set(key, known);
    if (this.known.size > KNOWN_REVISIONS) this.known.delete(this.known.keys().next().value!);
  }

  async query(keyExpr: string): Promise<StoredEntry[]> {
    if (!isWild(keyExpr)) {
      const v = (await this.read(keyExpr))?.value;
      return v && !v.deleted ? [toEntry(keyExpr, v)] : [];
    }
    const prefix = literalPrefix(keyExpr);
    const out: StoredEntry[] = [];
    // Keys under the prefix come from one ordered scan; the prefix key itself (`a/**` matches
    // `a`) is not under `a.>`, so it is read on its own.
    if (prefix !== undefined && intersects(keyExpr, prefix)) {
      const v = (await this.read(prefix))?.value;
      if (v && !v.deleted) out.push(toEntry(prefix, v));
    }
    const filter = prefix === undefined ? ">" : `${keyToKvKey(prefix)}.>`;
    // The stream leader lists the keys under the prefix; reading each of them needs nothing
    // else. A consumer (one ordered scan) is faster for many keys but needs JetStream's meta
    // leader, which may be in an election for seconds after a server dies.
    const listed = await this.link.run(() =>
      this.jsm.streams.info(this.stream, { subjects_filter: `${this.subjectPrefix}${filter}` }),
    );
    const subjects = Object.keys(listed.state.subjects ?? {});
    if (subjects.length <= DIRECT_READ_LIMIT) {
      const keys: string[] = [];
      for (const subject of subjects) {
        try {
          const key = kvKeyToKey(subject.slice(this.subjectPrefix.length));
          if (intersects(keyExpr, key)) keys.push(key);
        } catch {
          // not a key zest wrote: skip it, as the scan below does
        }
      }
      for (let i = 0; i < keys.length; i += READ_CONCURRENCY) {
        const batch = keys.slice(i, i + READ_CONCURRENCY);
        const values = await Promise.all(batch.map((k) => this.read(k)));
        values.forEach((v, j) => {
          if (v?.value && !v.value.deleted) out.push(toEntry(batch[j]!, v.value));
        });
      }
      return out;
    }
    return this.link.run(async () => {
      const iter = await this.kv.history({ key: filter });
      for await (const e of iter) {
        if (e.operation !== "PUT") continue;
        let key: string;
        let value: Decoded;
        try {
          key = kvKeyToKey(e.key);
          value = decodeValue(e.value);
        } catch (err) {
          this.logger.debug({ bucket: this.bucket, key: e.key, err: errorMessage(err) }, "skipped a foreign KV entry");
          continue;
        }
        if (!intersects(keyExpr, key)) continue;
        if (value.deleted) this.tombstones.set(key, value.timestamp.time);
        else out.push(toEntry(key, value));
      }
      return out;
    });
  }

  async purgeTombstones(before: bigint): Promise<void> {
    for (const [key, time] of [...this.tombstones]) {
      if (time >= before) continue;
      const v = await this.read(key);
      this.tombstones.delete(key);
      if (!v?.value?.deleted || v.value.timestamp.time >= before) continue;
      try {
        // Guarded by the revision read (and its message id, as every write): a put that landed
        // since keeps its value.
        this.known.delete(key);
        await this.publisher.publish(this.subjectPrefix + keyToKvKey(key), EMPTY, v.revision, PURGE_HEADERS);
      } catch (err) {
        this.logger.debug({ bucket: this.bucket, key, err: errorMessage(err) }, "tombstone changed before its purge");
      }
    }
  }

  async close(dispose: boolean): Promise<void> {
    if (dispose && this.drop) await this.link.run(() => this.kv.destroy());
  }

  /** The entry on `key`: its revision, and its value unless it is a KV delete or purge marker. */
  private async read(key: string): Promise<{ value?: Decoded; revision: number } | undefined> {
    const e = await this.link.run(() => this.kv.get(keyToKvKey(key)));
    if (!e) return undefined;
    if (e.operation !== "PUT") return { revision: e.revision };
    let value: Decoded;
    try {
      value = decodeValue(e.value);
    } catch (err) {
      // Not a client's mistake: the bucket holds something zest did not write there.
      throw new ZestError(
        "internal",
        `bucket ${this.bucket} holds a value zest cannot read at ${key}: ${errorMessage(err)}`,
        {
          cause: err,
        },
      );
    }
    if (value.deleted) this.tombstones.set(key, value.timestamp.time);
    this.remember(key, {
      revision: e.revision,
      timestamp: value.timestamp,
      deleted: value.deleted,
      deadline: value.deadline,
    });
    return { value, revision: e.revision };
  }
}

/** A key another router's storage wrote since this backend last saw it (`JetstreamBackend.stored`). */
const STALE = Symbol("stale");

/** What a key held at a KV revision. */
interface Known {
  readonly revision: number;
  readonly timestamp: Timestamp;
  readonly deleted: boolean;
  /** The value's deadline, so that a guess sees an expired value as none. */
  readonly deadline: number | undefined;
}

/** The deadline an encoded value carries (envelope version 2), if any. */
function deadlineIn(value: Buffer): number | undefined {
  return value[0] === ENVELOPE_WITH_DEADLINE ? value.readDoubleBE(3 + value[2]!) : undefined;
}

/**
 * True when a write decided on `guess` inserts. Any other outcome (outdated, condition failed)
 * is decided again on a read, so only a write that JetStream checks rests on a guess.
 */
function guessInserts(guess: Known | undefined, timestamp: Timestamp, condition: WriteCondition | undefined): boolean {
  try {
    return decideWrite(guess, timestamp, condition) === "inserted";
  } catch {
    return false;
  }
}

function isWrongRevision(err: unknown): boolean {
  return err instanceof JetStreamApiError && err.code === WRONG_LAST_SEQUENCE;
}

function toEntry(key: string, v: Decoded): StoredEntry {
  const e = { key, payload: v.payload, encoding: v.encoding, timestamp: v.timestamp };
  return v.deadline === undefined ? e : { ...e, deadline: v.deadline };
}

/** Where a volume without `servers` gets its NATS connection: the router's fabric, when it has one. */
export type NatsConnectionSource = () => NatsConnection | undefined;

/**
 * The `jetstream` volume driver; its volume and storage options are `jetstreamOptions`
 * (descriptors.ts). A volume without `servers` uses the connection `shared` returns (the
 * router's NATS fabric, from `--nats`).
 */
export function createJetstreamDriver(shared?: NatsConnectionSource): VolumeDriver {
  return {
    ...jetstreamDescriptor,
    async open(id: string, options: RawOptions, ctx: VolumeContext): Promise<Volume> {
      const where = `volume ${id}`;
      const o = parseOptions(jetstreamOptions.volume.schema, options, where);
      const servers = o.servers;
      const volumeReplicas = o.replicas;
      const replicas = volumeReplicas ?? 1;
      const timeout = o.timeout_ms;
      const volumeInFlight = o.max_in_flight;
      const logger = ctx.logger.child({ volume: id });
      let nc: NatsConnection;
      let own = false;
      if (servers) {
        try {
          // noAsyncTraces: otherwise every request builds two Error objects (stack traces) up
          // front, in case it fails; that was a fifth of the router's CPU per put.
          nc = await connect({
            servers,
            name: `zest-volume-${id}`,
            maxReconnectAttempts: -1,
            reconnectTimeWait: 250,
            timeout,
            noAsyncTraces: true,
          });
        } catch (err) {
          throw ZestError.unavailable(
            `${where}: cannot connect to NATS at ${servers.join(", ")}: ${errorMessage(err)}`,
            err,
          );
        }
        own = true;
      } else {
        const fabric = shared?.();
        if (!fabric)
          throw ZestError.badRequest(`${where}: \`servers\` is required when the router runs without --nats`);
        nc = fabric;
      }
      const js: JetStreamClient = jetstream(nc, { timeout });
      const link = new NatsLink(nc);
      const publisher = new JetStreamPublisher(nc, link, timeout);
      const kvm = new Kvm(js);
      const jsm = await js.jetstreamManager(false);
      /** Bucket → the replica count its stream really has. */
      const buckets = new Map<string, number>();
      return {
        id,
        driver: "jetstream",
        async createStorage(name, _keyExpr, opts) {
          const sw = `jetstream storage ${name}`;
          const so = parseOptions(jetstreamOptions.storage.schema, opts, sw);
          const bucket = so.bucket ?? defaultBucket(name);
          const asked = so.replicas ?? volumeReplicas;
          const r = asked ?? replicas;
          if (so.on_closure !== undefined && so.on_dispose !== undefined && so.on_closure !== so.on_dispose)
            throw ZestError.badRequest(`${sw}: \`on_closure\` and \`on_dispose\` disagree; give one of them`);
          const drop = so.on_closure ?? so.on_dispose ?? false;
          const maxInFlight = so.max_in_flight ?? volumeInFlight;
          let kv: KV;
          let actual: number;
          try {
            kv = await kvm.create(bucket, { history: 1, replicas: r, allow_direct: false, timeout });
            // An existing bucket is reused as it is (the kv client does not update its stream).
            actual = (await jsm.streams.info(`KV_${bucket}`)).config.num_replicas;
          } catch (err) {
            throw ZestError.unavailable(`${sw}: cannot open the JetStream bucket ${bucket}: ${errorMessage(err)}`, err);
          }
          if (asked !== undefined && actual !== asked) {
            // Never silently fewer copies than asked for (nor more): the operator decides.
            throw ZestError.conflict(
              `${sw}: the JetStream bucket ${bucket} exists with ${actual} replica(s), not the ${asked} asked for; change \`replicas\` or the bucket's stream`,
            );
          }
          buckets.set(bucket, actual);
          return new JetstreamBackend(
            bucket,
            kv,
            { jsm, link, publisher },
            { drop, maxInFlight, shared: !own },
            logger.child({ storage: name }),
          );
        },
        status: () => ({
          __required__: false,
          replicas,
          max_in_flight: volumeInFlight,
          servers: servers ?? "fabric",
          connected: link.connected,
          buckets: [...buckets.keys()].sort(),
          // What each bucket's stream really has (an existing bucket keeps its own count).
          bucket_replicas: Object.fromEntries([...buckets].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))),
        }),
        async close() {
          publisher.close();
          if (own) await nc.drain().catch(() => nc.close());
        },
      };
    },
  };
}

/** The `jetstream` driver for embedders without a fabric: volumes must name their `servers`. */
export const jetstreamDriver: VolumeDriver = createJetstreamDriver();
