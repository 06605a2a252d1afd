/**
 * What the parts of one storage's replication share (docs/replication.md): who this replica is
 * and where it meets the others, its log and storage, the scope of keys it replicates, its
 * counters, and the alignment queries it sends and answers. The replicator (membership and
 * schedule), the aligner (one worker per other replica) and the answerer each hold it.
 */
import type { Buffer } from "node:buffer";
import { errorMessage } from "../../core/errors.js";
import type { Logger } from "../../core/log.js";
import type { Query } from "../../core/query.js";
import type { Sample } from "../../core/sample.js";
import type { Session } from "../../core/session.js";
import { includes, isWild, validate } from "../../keyexpr/index.js";
import type { StorageBackend } from "../backend.js";
import type { ReplicationSettings } from "./config.js";
import { ReplicationLog } from "./log.js";

/** How long one alignment query waits for its answer. */
export const QUERY_TIMEOUT_MS = 5_000;
/** At most one warning about malformed messages per this many ms; the rest at debug. */
const WARN_EVERY_MS = 10_000;

/** What a replica needs from its router besides the session. */
export interface ReplicaHost {
  readonly session: Session;
  /** True while this router is connected to the fabric (no fabric: always false). */
  connected(): boolean;
  /** Hands a repair to this router's subscribers (storages included), as a sample from another router. */
  deliver(sample: Sample): Promise<void>;
}

/** Alignment messages sent and received (queries and replies), and their payload bytes. */
export interface Traffic {
  messages_sent: number;
  bytes_sent: number;
  messages_received: number;
  bytes_received: number;
}

/** One storage's replica of one key expression: see the module comment. */
export class Replica {
  readonly log: ReplicationLog;
  /** Our queryable's key: the address other replicas pull from. */
  readonly address: string;
  readonly traffic: Traffic = { messages_sent: 0, bytes_sent: 0, messages_received: 0, bytes_received: 0 };
  /** Messages dropped as malformed. */
  malformed = 0;
  /** Set once the replication is closed: workers stop, nothing new starts. */
  closed = false;
  private malformedSinceWarn = 0;
  private lastWarn = 0;

  constructor(
    readonly storage: string,
    /**
     * The key expression replicated: the storage's, or an overlapping storage's (`OverlapReplicas`).
     * A write the storage applied is in the log when it matches it.
     */
    readonly keyExpr: string,
    /**
     * The storage's own key expression, for a replication with an intersecting one: a key is
     * replicated only when it matches both. Undefined when `keyExpr` alone decides (it is the
     * storage's, or nested in it).
     */
    readonly within: string | undefined,
    /** Where the replicas meet (`@repl/<hash>`). */
    readonly space: string,
    readonly settings: ReplicationSettings,
    readonly host: ReplicaHost,
    readonly backend: StorageBackend,
    readonly logger: Logger,
    readonly now: () => number,
  ) {
    this.log = new ReplicationLog(settings);
    this.address = `${space}/align/${host.session.zid}/${storage}`;
  }

  /** True when `key` is a plain key this replication covers. */
  holds(key: string): boolean {
    try {
      validate(key);
    } catch {
      return false;
    }
    return !isWild(key) && includes(this.keyExpr, key) && (this.within === undefined || includes(this.within, key));
  }

  /** `<zid>/<storage>` of a replica's queryable (`@repl/<h>/align/<zid>/<storage>`). */
  idOf(peer: string): string {
    return peer.slice(this.space.length + "/align/".length);
  }

  /** One alignment query to replica `peer`; its replies' payloads, or a throw on an error reply. */
  async ask(peer: string, payload: Buffer): Promise<Buffer[]> {
    this.sent(payload);
    const replies = await this.host.session.get(peer, {
      payload,
      consolidation: "none",
      timeoutMs: QUERY_TIMEOUT_MS,
      allowedDestination: "remote",
    });
    const out: Buffer[] = [];
    for (const r of replies) {
      if (r.kind !== "ok") throw new Error(r.payload.toString("utf8").slice(0, 200));
      this.received(r.sample.payload);
      if (r.sample.key === peer) out.push(r.sample.payload);
    }
    return out;
  }

  /** Replies to an alignment query, counted. */
  reply(query: Query, payload: Buffer): void {
    this.sent(payload);
    query.reply(this.address, payload);
  }

  sent(payload: Buffer): void {
    this.traffic.messages_sent++;
    this.traffic.bytes_sent += payload.length;
  }

  received(payload: Buffer): void {
    this.traffic.messages_received++;
    this.traffic.bytes_received += payload.length;
  }

  dropMalformed(from: string, err: unknown): void {
    this.malformed++;
    this.malformedSinceWarn++;
    const now = this.now();
    if (now - this.lastWarn >= WARN_EVERY_MS) {
      this.logger.warn(
        { from, err: errorMessage(err), dropped: this.malformedSinceWarn },
        "dropped a malformed replication message",
      );
      this.lastWarn = now;
      this.malformedSinceWarn = 0;
    } else this.logger.debug({ from, err: errorMessage(err) }, "dropped a malformed replication message");
  }
}
