/**
 * What a replica owes the others: the rules of docs/replication.md, "Known to be behind", kept
 * apart from the exchanges that apply them, so each rule can be tested on its own.
 *
 * A replica owes another (`<zid>/<storage>`) when it knows that replica may hold writes it lacks:
 * - a digest showed a difference, until an alignment with that digest, or a later one, completes
 *   (`repairing`, `failed`, `settle`);
 * - this router was cut off from the fabric while the other was alive (`cut`, `vanished`), until
 *   an alignment with a digest received after the cut completes;
 * - the start-up alignment with it had not completed by the deadline (`lateAtStart`).
 * A debt only a periodic digest showed is *forgivable*: it ends when that replica vanishes while
 * this router stays connected (it never acknowledged what it held alone).
 *
 * Debts are ordered with the digests by one counter (`draw`): a debt is settled only by an
 * alignment with a digest drawn at or after it, since a digest from before a cut says nothing of
 * the writes made during it.
 */
import type { Logger } from "../../core/log.js";

/** Why a replica owes another. */
interface Debt {
  readonly reason: string;
  /** The counter value of the digest or event that showed it (`Debts.draw`). */
  readonly since: number;
  /** Only a periodic digest showed it: it ends when the replica vanishes while connected. */
  readonly forgivable: boolean;
}

/** While it owes a replica alive to repair from, a replica exchanges this soon (ms). */
export const RETRY_BEHIND_MS = 1_000;

/** The debts of one replica to the others, and the other replicas alive now. */
export class Debts {
  /** The other replicas alive now, as the liveliness subscriber reports them (`<zid>/<storage>`). */
  readonly alive = new Set<string>();
  private readonly owed = new Map<string, Debt>();
  private seq = 0;

  constructor(private readonly logger: Logger) {}

  /** A new value of the counter that orders digests and debts: take one when a digest arrives. */
  draw(): number {
    return ++this.seq;
  }

  /** The counter's value now (debts incurred later are not settled by digests drawn up to it). */
  get current(): number {
    return this.seq;
  }

  /** Owes nothing, and no other replica is alive: the common case of a router without replicas. */
  get none(): boolean {
    return this.owed.size === 0 && this.alive.size === 0;
  }

  /** True while replica `id` is owed. */
  owes(id: string): boolean {
    return this.owed.has(id);
  }

  /** Replica `id` appeared (again): alive, and worth an exchange. */
  appeared(id: string): void {
    this.alive.add(id);
  }

  /**
   * Replica `id` vanished. Cut off ourselves, its silence is ours: it may have taken writes
   * meanwhile, and is owed. Connected, a forgivable debt to it ends: every write it acknowledged
   * reached us.
   */
  vanished(id: string, connected: boolean): void {
    this.alive.delete(id);
    if (!connected) this.owe(id, `cut off from the fabric while ${id} was alive`);
    else if (this.owed.get(id)?.forgivable) this.forgive(id);
  }

  /** This router lost the fabric: every replica alive now may take writes it will not hear of. */
  cut(): void {
    for (const id of this.alive) this.owe(id, `cut off from the fabric while ${id} was alive`);
  }

  /**
   * An alignment with replica `id`'s digest `seq` found writes to pull (`startUp`: the start-up
   * alignment's, a debt not forgivable).
   */
  repairing(id: string, seq: number, startUp: boolean): void {
    this.owe(id, `repairing from ${id}`, seq, !startUp);
  }

  /**
   * An alignment with replica `id`'s digest `seq` failed: the debt stays (or starts). Forgiven at
   * once when that replica is gone already while we are connected and only a periodic digest
   * showed it.
   */
  failed(id: string, why: string, seq: number, startUp: boolean, connected: boolean): void {
    this.owe(id, `repair from ${id} failed: ${why}`, seq, !startUp);
    if (!this.alive.has(id) && connected && this.owed.get(id)?.forgivable) this.forgive(id);
  }

  /**
   * The start-up alignment with replica `id` had not completed by its deadline: owed, settled
   * when that alignment completes (its digest was drawn after `since`). A debt already there
   * stays as it is.
   */
  lateAtStart(id: string, since: number): void {
    if (!this.owed.has(id)) this.owe(id, `start-up alignment with ${id} still running`, since + 1);
  }

  /** An alignment with replica `id`'s digest `seq` completed: nothing is left to pull from it. */
  settle(id: string, seq: number): void {
    const debt = this.owed.get(id);
    if (debt === undefined || debt.since > seq) return;
    this.owed.delete(id);
    if (this.owed.size === 0) this.logger.info("replica up to date");
  }

  /** Why this replica is known to be behind (the first replica it owes), or undefined. */
  get reason(): string | undefined {
    const first = this.owed.values().next();
    if (first.done) return undefined;
    const reason = first.value.reason;
    return this.owed.size === 1 ? reason : `${reason}; and ${this.owed.size - 1} more`;
  }

  /**
   * The delay before the next periodic exchange: an interval (±10 %, `random` in [0, 1)), or
   * `RETRY_BEHIND_MS` while connected and owing a replica alive to repair from. One that is gone
   * comes back with its liveliness token, which starts an exchange.
   */
  nextExchangeIn(intervalMs: number, connected: boolean, random: number): number {
    let retry = false;
    if (connected) for (const id of this.owed.keys()) if (this.alive.has(id)) retry = true;
    return retry ? Math.min(intervalMs, RETRY_BEHIND_MS) : intervalMs * (0.9 + random * 0.2);
  }

  /**
   * Replica `id` is known to hold writes we may lack. `since`: the digest that showed it (an
   * alignment with it or a later one settles the debt); by default, now (only a later one does).
   * `forgivable`: a periodic digest showed it; a debt that was not stays unforgivable.
   */
  private owe(id: string, reason: string, since = this.draw(), forgivable = false): void {
    if (this.owed.size === 0) this.logger.info({ reason }, "replica known to be behind");
    const was = this.owed.get(id);
    this.owed.set(id, { reason, since, forgivable: forgivable && (was === undefined || was.forgivable) });
  }

  /** Drops the debt to replica `id`, which vanished while we stayed connected. */
  private forgive(id: string): void {
    this.owed.delete(id);
    this.logger.info({ replica: id }, "a replica vanished while connected: what it held alone was never acknowledged");
    if (this.owed.size === 0) this.logger.info("replica up to date");
  }
}
