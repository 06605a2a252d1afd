/**
 * Replication between storages on different routers whose key expressions overlap without being
 * equal (docs/replication.md, "Overlapping storages"). They hold different key sets, so their
 * main logs cannot be compared: every key only one of them covers would show as a difference
 * forever. Each side therefore keeps one more replication log per overlapping storage, holding
 * only the keys both cover, and runs a `Replicator` over it in a key space both derive alike:
 * - nested (`d/**` here, `d/x/**` there): the keys both cover are exactly the narrower key
 *   expression. The wider side replicates on it in the narrower one's own replica space, where
 *   the narrower storage's main replicator meets it as an ordinary replica: the narrower side
 *   does nothing new.
 * - intersecting (`a/*\/c` and `a/b/*`; `x/**\/y` and `x/a/**`): the keys both cover are those
 *   that match both. Both sides keep such a log and meet in the pair's space (`pairSpace`).
 * Nothing changes on the wire; every trigger (start, reconnect, reappearance, the interval)
 * works as between replicas. On the write path both cases cost one inclusion test per
 * overlapping key expression: a key the storage applied matches its own already.
 *
 * Which key expressions exist is announced by a liveliness token per storage,
 * `@repl/ke/<zid>/<storage>/<key expression, base64url>`.
 */
import { Buffer } from "node:buffer";
import { errorMessage } from "../../core/errors.js";
import { REPLICATION_ROOT } from "../../core/internal-keys.js";
import type { Logger } from "../../core/log.js";
import type { LivelinessToken, Subscriber } from "../../core/session.js";
import type { Timestamp } from "../../core/timestamp.js";
import { canonize, includes, intersects, validate } from "../../keyexpr/index.js";
import type { StorageBackend } from "../backend.js";
import type { ReplicationSettings } from "./config.js";
import { type OverlapStatus, pairSpace, type ReplicaHost, Replicator, replicaSpace } from "./replicator.js";

/** Where storages announce their key expressions. */
export const ANNOUNCE_SPACE = `${REPLICATION_ROOT}/ke`;
/** Most overlapping key expressions one storage replicates on (each costs a log and a replicator). */
export const MAX_OVERLAPS = 64;

/** How another storage's key expression overlaps this one's. */
type Overlap = "nested" | "intersecting";

/** The statuses of one storage's overlapping replications, by kind (docs/replication.md, "Health"). */
export interface OverlapStatuses {
  readonly nested: OverlapStatus[];
  readonly intersecting: OverlapStatus[];
}

/** One storage's replication with the overlapping storages on other routers (see the module comment). */
export class OverlapReplicas {
  private readonly storage: string;
  private readonly keyExpr: string;
  private readonly settings: ReplicationSettings;
  private readonly host: ReplicaHost;
  private readonly backend: StorageBackend;
  private readonly logger: Logger;
  /** The replicator of each overlapping key expression, in the order they were met, with its kind. */
  private readonly overlaps = new Map<string, { replicator: Replicator; overlap: Overlap }>();
  /** The same replicators, for the write path (no Map iterator per write). */
  private list: Replicator[] = [];
  private token: LivelinessToken | undefined;
  private watcher: Subscriber | undefined;
  private closed = false;
  private warnedFull = false;
  /**
   * While `start` runs: the first exchanges of the overlaps already announced (each resolves with
   * the replicas it is not aligned with), and their deadline.
   */
  private starting: { deadline: number; started: Promise<number>[] } | undefined;

  constructor(options: {
    storage: string;
    keyExpr: string;
    settings: ReplicationSettings;
    host: ReplicaHost;
    backend: StorageBackend;
    logger: Logger;
  }) {
    this.storage = options.storage;
    this.keyExpr = options.keyExpr;
    this.settings = options.settings;
    this.host = options.host;
    this.backend = options.backend;
    this.logger = options.logger;
  }

  /**
   * Announces this storage's key expression and watches for the others'. Resolves once the
   * overlaps already announced have had their first exchange (failed ones included), or at
   * `deadline` (Unix ms): those whose other side already replicates with this storage (it was
   * here before a restart) repair it before it answers. The others exchange as soon as the other
   * side sees this announcement. Resolves with the number of replicas those first exchanges are
   * not aligned with (`StartAlignment.unaligned`), a replicator that failed to start counting one.
   */
  async start(deadline = Number.POSITIVE_INFINITY): Promise<number> {
    this.starting = { deadline, started: [] };
    const session = this.host.session;
    const encoded = Buffer.from(this.keyExpr, "utf8").toString("base64url");
    try {
      this.token = session.declareLivelinessToken(`${ANNOUNCE_SPACE}/${session.zid}/${this.storage}/${encoded}`);
    } catch (err) {
      // Only a key expression near the length limit cannot be announced: overlapping storages
      // still find it through their own announcements.
      this.logger.warn(
        { err: errorMessage(err) },
        "the storage's key expression cannot be announced to overlapping storages",
      );
    }
    this.watcher = session.declareLivelinessSubscriber(
      `${ANNOUNCE_SPACE}/**`,
      (s) => {
        if (s.kind === "put") this.announced(s.key);
      },
      { history: true },
    );
    // The history came synchronously: every overlap announced so far has started.
    const first = this.starting.started;
    this.starting = undefined;
    let unaligned = 0;
    for (const n of await Promise.all(first)) unaligned += n;
    return unaligned;
  }

  async close(): Promise<void> {
    this.closed = true;
    this.token?.undeclare();
    this.watcher?.undeclare();
    await Promise.all(this.list.map((r) => r.close()));
  }

  /**
   * The storage applied a write: the logs of the overlapping key expressions that cover it
   * follow. The key matches the storage's own key expression, so one test per log decides.
   */
  recorded(key: string, timestamp: Timestamp, deleted: boolean): void {
    const list = this.list;
    for (let i = 0; i < list.length; i++) {
      const r = list[i]!;
      if (includes(r.keyExpr, key)) r.recorded(key, timestamp, deleted);
    }
  }

  /** Forgets tombstones older than the retention in every overlap's log. */
  purge(): void {
    for (const r of this.list) r.purge();
  }

  /** The notice of an overlap's replicator behind and alone whose key expression `queryKey` reaches. */
  staleNotice(queryKey: string): string | undefined {
    for (const r of this.list) {
      if (!intersects(queryKey, r.keyExpr)) continue;
      const notice = r.staleNotice();
      if (notice !== undefined) return notice;
    }
    return undefined;
  }

  statuses(): OverlapStatuses {
    const out: OverlapStatuses = { nested: [], intersecting: [] };
    for (const [keyExpr, { replicator, overlap }] of this.overlaps) {
      const { settings: _settings, nested: _nested, intersecting: _intersecting, ...rest } = replicator.status();
      out[overlap].push({ key_expr: keyExpr, ...rest });
    }
    return out;
  }

  /** Another storage announced its key expression: replicate the keys both cover when it overlaps ours. */
  private announced(key: string): void {
    if (this.closed) return;
    const rest = key.slice(ANNOUNCE_SPACE.length + 1).split("/");
    if (rest.length !== 3 || rest[0] === this.host.session.zid) return;
    let other: string;
    try {
      other = Buffer.from(rest[2]!, "base64url").toString("utf8");
      validate(other);
      if (canonize(other) !== other) throw new Error("not canonical");
    } catch (err) {
      this.logger.debug({ key, err: errorMessage(err) }, "ignored a malformed storage announcement");
      return;
    }
    // Equal: the two are replicas already. Wider than ours: the other side replicates on ours,
    // in our own replica space. Disjoint: no key in common.
    if (other === this.keyExpr || this.overlaps.has(other)) return;
    let overlap: Overlap;
    if (includes(this.keyExpr, other)) overlap = "nested";
    else if (!includes(other, this.keyExpr) && intersects(this.keyExpr, other)) overlap = "intersecting";
    else return;
    if (this.overlaps.size >= MAX_OVERLAPS) {
      if (!this.warnedFull)
        this.logger.warn(
          { max: MAX_OVERLAPS, keyExpr: other },
          "too many overlapping storages: this one is not replicated",
        );
      this.warnedFull = true;
      return;
    }
    const replicator = new Replicator({
      storage: this.storage,
      keyExpr: other,
      ...(overlap === "nested"
        ? { space: replicaSpace(other) }
        : { space: pairSpace(this.keyExpr, other), within: this.keyExpr }),
      settings: this.settings,
      host: this.host,
      backend: this.backend,
      logger: this.logger.child({ [overlap]: other }),
    });
    this.overlaps.set(other, { replicator, overlap });
    this.list = [...this.overlaps.values()].map((o) => o.replicator);
    this.logger.info({ keyExpr: other, overlap }, "replicating the keys both storages cover");
    // The log is filled from the storage (one read of the keys under `other`), then it exchanges.
    const started = replicator.start(this.starting?.deadline).then(
      (r) => r.unaligned,
      (err: unknown) => {
        this.logger.warn(
          { keyExpr: other, overlap, err: errorMessage(err) },
          "replication with an overlapping storage failed to start",
        );
        return 1;
      },
    );
    this.starting?.started.push(started);
  }
}
