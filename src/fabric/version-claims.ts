/**
 * Version claims: the cluster-wide arbiter of conditional writes on storages each router keeps
 * apart (memory, SQLite), built on JetStream (docs/conditional-writes.md, "Across routers").
 *
 * Replacing a version of a key is claimed once, cluster-wide, before the write: a JetStream KV
 * create of the entry `<version>.<key hash>` in one bucket (`zest_claims`), whose value names the
 * successor. JetStream's Raft-replicated stream decides which of two racing creates lands; the
 * loser is refused, and its write answers `precondition_failed`. A claim is made with an expected
 * revision of 0 and a message id equal to its entry, so a clustered nats-server that checks the
 * revision before its replicas agree (nats-server #4320) still refuses the second one through its
 * deduplication. Claims expire after `CLAIM_TTL_MS`: by then the winner's write reached every
 * router, or failed.
 *
 * Claiming again with the same successor is winning: several storages of one router that hold
 * the key each claim for the same write.
 */
import { createHash } from "node:crypto";
import { jetstream, JetStreamApiError } from "@nats-io/jetstream";
import { type KV, Kvm } from "@nats-io/kv";
import { headers, type NatsConnection } from "@nats-io/transport-node";
import { errorMessage, ZestError } from "../core/errors.js";
import type { VersionClaims } from "../core/fabric.js";
import type { Logger } from "../core/log.js";

/** The bucket every router claims in. */
export const CLAIMS_BUCKET = "zest_claims";
/** How long a claim lives (also the bucket's deduplication window). */
export const CLAIM_TTL_MS = 60_000;
/** After JetStream was found absent, how long claims are refused before it is looked for again. */
const ABSENT_RECHECK_MS = 10_000;
/** The pause before a claim that met "no responders" is sent again. */
const NO_RESPONDERS_RETRY_MS = 50;
/** JetStream's error codes: a stale expected revision; JetStream not enabled for the account. */
const WRONG_LAST_SEQUENCE = 10071;
const NOT_ENABLED_FOR_ACCOUNT = 10039;

/** Options of `NatsVersionClaims`. */
export interface VersionClaimsOptions {
  /** Replicas of the claims bucket: 3, or 1 where the NATS cluster cannot hold 3 (default). */
  readonly replicas?: number;
  /** The wait for each JetStream answer (ms). */
  readonly timeoutMs: number;
  readonly logger: Logger;
}

/** Claims kept in a JetStream KV bucket on one NATS connection. */
export class NatsVersionClaims implements VersionClaims {
  private readonly nc: NatsConnection;
  private readonly options: VersionClaimsOptions;
  private bucket: Promise<KV> | undefined;
  /** When JetStream was last found absent (ms), or undefined. */
  private absentSince: number | undefined;
  private replicas: number | undefined;
  private readonly counters = { won: 0, lost: 0, refused: 0 };

  constructor(nc: NatsConnection, options: VersionClaimsOptions) {
    this.nc = nc;
    this.options = options;
  }

  /** What the admin space shows. */
  status(): Record<string, unknown> {
    return {
      bucket: CLAIMS_BUCKET,
      jetstream: this.absentSince !== undefined ? "absent" : this.replicas === undefined ? "unknown" : "present",
      ...(this.replicas === undefined ? {} : { replicas: this.replicas }),
      ...this.counters,
    };
  }

  /**
   * Opens (or makes) the claims bucket ahead of the first claim, so that a conditional write does
   * not wait for a replicated stream to be made; a failure is only logged (the first claim tries again).
   */
  prepare(): void {
    this.open("", false).catch((err: unknown) => {
      this.options.logger.debug({ err: errorMessage(err) }, "the claims bucket is not open yet");
    });
  }

  async claim(key: string, version: string | undefined, successor: string): Promise<void> {
    const kv = await this.open(key);
    const entry = claimEntry(key, version);
    const h = headers();
    h.set("Nats-Expected-Last-Subject-Sequence", "0");
    h.set("Nats-Msg-Id", entry);
    let answer: { error?: { err_code?: number }; duplicate?: boolean; seq?: number };
    try {
      answer = await this.publish(entry, successor, h);
    } catch (err) {
      throw ZestError.unavailable(`cannot claim the version of ${key} in JetStream: ${errorMessage(err)}`, err);
    }
    if (!answer.error && !answer.duplicate && typeof answer.seq === "number") {
      this.counters.won++;
      return;
    }
    if (answer.error && answer.error.err_code !== WRONG_LAST_SEQUENCE)
      throw ZestError.unavailable(`JetStream refused the claim on ${key}: ${JSON.stringify(answer.error)}`);
    // Claimed already: by this very write (another storage of this router), or by another one.
    let held: string | undefined;
    try {
      const e = await kv.get(entry);
      held = e?.operation === "PUT" ? e.string() : undefined;
    } catch (err) {
      throw ZestError.unavailable(`cannot read the claim on ${key} in JetStream: ${errorMessage(err)}`, err);
    }
    if (held === successor) {
      this.counters.won++;
      return;
    }
    this.counters.lost++;
    throw new ZestError(
      "precondition_failed",
      "write condition failed: a write through another router replaced this version first",
    );
  }

  /**
   * Publishes a claim and returns JetStream's answer. Right after the bucket was made, the server
   * this router is connected to may not know its stream yet ("no responders" for a moment): the
   * claim is then sent again, within the timeout.
   */
  private async publish(
    entry: string,
    successor: string,
    h: ReturnType<typeof headers>,
  ): Promise<{ error?: { err_code?: number }; duplicate?: boolean; seq?: number }> {
    const deadline = Date.now() + this.options.timeoutMs;
    const data = new TextEncoder().encode(successor);
    for (;;) {
      const left = deadline - Date.now();
      try {
        if (left <= 0) throw new Error(`no answer within ${this.options.timeoutMs} ms`);
        const m = await this.nc.request(`$KV.${CLAIMS_BUCKET}.${entry}`, data, { headers: h, timeout: left });
        if (m.data.length === 0) throw new Error(`no responders (status ${m.headers?.code ?? "none"})`);
        return m.json();
      } catch (err) {
        if (!/no responders/i.test(errorMessage(err)) || Date.now() + NO_RESPONDERS_RETRY_MS >= deadline) {
          // The bucket may have been removed: it is made again by the next claim.
          this.bucket = undefined;
          throw err;
        }
        await new Promise((r) => setTimeout(r, NO_RESPONDERS_RETRY_MS));
      }
    }
  }

  /** The claims bucket, created (or found) once; JetStream's absence refuses the claim. */
  private open(key: string, counted = true): Promise<KV> {
    if (this.absentSince !== undefined) {
      if (Date.now() - this.absentSince < ABSENT_RECHECK_MS) {
        if (counted) this.counters.refused++;
        return Promise.reject(absent(key));
      }
      this.absentSince = undefined;
    }
    this.bucket ??= this.create().catch((err: unknown) => {
      this.bucket = undefined;
      if (isJetStreamAbsent(err)) {
        this.absentSince = Date.now();
        this.options.logger.warn(
          { err: errorMessage(err) },
          "no JetStream on the NATS cluster: conditional writes on keys other routers hold are refused",
        );
        throw absent(key);
      }
      throw ZestError.unavailable(`cannot open the JetStream bucket ${CLAIMS_BUCKET}: ${errorMessage(err)}`, err);
    });
    return this.bucket.catch((err: unknown) => {
      if (counted && err instanceof ZestError && err.kind === "conflict") this.counters.refused++;
      throw err;
    });
  }

  private async create(): Promise<KV> {
    const kvm = new Kvm(jetstream(this.nc, { timeout: this.options.timeoutMs }));
    const config = { history: 1, ttl: CLAIM_TTL_MS, allow_direct: false, timeout: this.options.timeoutMs };
    const wanted = this.options.replicas;
    try {
      const kv = await kvm.create(CLAIMS_BUCKET, { ...config, replicas: wanted ?? 3 });
      this.replicas = wanted ?? 3;
      return kv;
    } catch (err) {
      // A NATS cluster of fewer than three servers (or one server) cannot hold three replicas.
      if (wanted !== undefined || !/replicas|insufficient resources/i.test(errorMessage(err))) throw err;
      this.options.logger.info({ err: errorMessage(err) }, "the claims bucket has one replica");
      const kv = await kvm.create(CLAIMS_BUCKET, { ...config, replicas: 1 });
      this.replicas = 1;
      return kv;
    }
  }
}

/** The claim entry for replacing `version` (undefined: nothing held) of `key`: a valid KV key, one per pair. */
export function claimEntry(key: string, version: string | undefined): string {
  // A version is `<16 hex>/<router id hex>`; the key is hashed, so any key fits a NATS subject.
  const v = version === undefined ? "none" : `v${version.replace("/", "_")}`;
  return `${v}.${createHash("sha256").update(key).digest("base64url")}`;
}

function absent(key: string): ZestError {
  return ZestError.conflict(
    `a conditional write on ${key} needs JetStream on the NATS cluster: storages on other routers hold the key, and without JetStream two routers could both accept a write on one version`,
  );
}

function isJetStreamAbsent(err: unknown): boolean {
  if (err instanceof Error && err.name === "JetStreamNotEnabled") return true;
  if (err instanceof JetStreamApiError && err.code === NOT_ENABLED_FOR_ACCOUNT) return true;
  return /no responders|jetstream not enabled|jetstream is not enabled/i.test(errorMessage(err));
}
