/**
 * Replication between storages whose key expressions nest (docs/replication.md, "Nested
 * storages"): `d/**` on one router, `d/x/**` on another. They hold different key sets, so their
 * logs cannot be compared; but the keys both cover are exactly the narrower one's key
 * expression. The wider storage therefore keeps one more replication log, restricted to it, and
 * runs a `Replicator` over it in the narrower one's replica space, where the narrower storage's
 * own replicator meets it as an ordinary replica. Nothing changes on the wire or on the narrower
 * side; every trigger (start, reconnect, reappearance, the interval) works as between replicas.
 *
 * Which key expressions exist is announced by a liveliness token per storage,
 * `@repl/ke/<zid>/<storage>/<key expression, base64url>`. Storages that intersect without one
 * including the other (`a/*\/c` and `a/b/*`) share no single key expression to replicate on:
 * they only align at start (docs/replication.md).
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
import { type NestedStatus, type ReplicaHost, Replicator } from "./replicator.js";

/** Where storages announce their key expressions. */
export const ANNOUNCE_SPACE = `${REPLICATION_ROOT}/ke`;
/** Most nested key expressions one storage replicates on (each costs a log and a replicator). */
export const MAX_NESTED = 64;

/** One storage's replication with the narrower storages on other routers (see the module comment). */
export class NestedReplicas {
  private readonly storage: string;
  private readonly keyExpr: string;
  private readonly settings: ReplicationSettings;
  private readonly host: ReplicaHost;
  private readonly backend: StorageBackend;
  private readonly logger: Logger;
  /** The replicator of each narrower key expression, in the order they were met. */
  private readonly nested = new Map<string, Replicator>();
  /** The same replicators, for the write path (no Map iterator per write). */
  private list: Replicator[] = [];
  private token: LivelinessToken | undefined;
  private watcher: Subscriber | undefined;
  private closed = false;
  private warnedFull = false;

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

  /** Announces this storage's key expression and watches for the others'. */
  start(): void {
    const session = this.host.session;
    const encoded = Buffer.from(this.keyExpr, "utf8").toString("base64url");
    try {
      this.token = session.declareLivelinessToken(`${ANNOUNCE_SPACE}/${session.zid}/${this.storage}/${encoded}`);
    } catch (err) {
      // Only a key expression near the length limit cannot be announced: narrower storages
      // still find it through their own announcements.
      this.logger.warn(
        { err: errorMessage(err) },
        "the storage's key expression cannot be announced to nested storages",
      );
    }
    this.watcher = session.declareLivelinessSubscriber(
      `${ANNOUNCE_SPACE}/**`,
      (s) => {
        if (s.kind === "put") this.announced(s.key);
      },
      { history: true },
    );
  }

  async close(): Promise<void> {
    this.closed = true;
    this.token?.undeclare();
    this.watcher?.undeclare();
    await Promise.all(this.list.map((r) => r.close()));
  }

  /** The storage applied a write: the logs of the nested key expressions that cover it follow. */
  recorded(key: string, timestamp: Timestamp, deleted: boolean): void {
    const list = this.list;
    for (let i = 0; i < list.length; i++) {
      const r = list[i]!;
      if (includes(r.keyExpr, key)) r.recorded(key, timestamp, deleted);
    }
  }

  /** Forgets tombstones older than the retention in every nested log. */
  purge(): void {
    for (const r of this.list) r.purge();
  }

  /** The notice of a nested replicator behind and alone whose key expression `queryKey` reaches. */
  staleNotice(queryKey: string): string | undefined {
    for (const r of this.list) {
      if (!intersects(queryKey, r.keyExpr)) continue;
      const notice = r.staleNotice();
      if (notice !== undefined) return notice;
    }
    return undefined;
  }

  statuses(): NestedStatus[] {
    return this.list.map((r) => {
      const { settings: _settings, nested: _nested, ...rest } = r.status();
      return { key_expr: r.keyExpr, ...rest };
    });
  }

  /** Another storage announced its key expression: replicate on it when it nests in ours. */
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
    // Equal: the two are replicas already. Wider than ours: the other side runs the nested
    // replicator on ours. Intersecting only: no key expression to share (module comment).
    if (other === this.keyExpr || this.nested.has(other) || !includes(this.keyExpr, other)) return;
    if (this.nested.size >= MAX_NESTED) {
      if (!this.warnedFull)
        this.logger.warn({ max: MAX_NESTED, keyExpr: other }, "too many nested storages: this one is not replicated");
      this.warnedFull = true;
      return;
    }
    const replicator = new Replicator({
      storage: this.storage,
      keyExpr: other,
      settings: this.settings,
      host: this.host,
      backend: this.backend,
      logger: this.logger.child({ nested: other }),
    });
    this.nested.set(other, replicator);
    this.list = [...this.nested.values()];
    this.logger.info({ keyExpr: other }, "replicating with a nested storage");
    // The log is filled from the storage (one read of the keys under `other`), then it exchanges.
    replicator.start().catch((err: unknown) => {
      this.logger.warn({ keyExpr: other, err: errorMessage(err) }, "replication with a nested storage failed to start");
    });
  }
}
