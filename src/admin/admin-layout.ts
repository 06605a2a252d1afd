import type { Query } from "../core/query.js";
import type { Sample } from "../core/sample.js";
import type { Queryable, Session, Subscriber } from "../core/session.js";
import type { StorageManager } from "../storage/manager.js";

import { LeaseAdmin } from "./lease-admin.js";

/** What the admin space shows about the parts of the router it does not own. */
export interface AdminSources {
  /** zest's version string. */
  readonly version: string;
  /** Where the router can be reached (the REST URL among them). */
  locators(): string[];
  /** Every running front door's status, by door name (a layout shows the REST door's as zenoh's REST plugin). */
  doors(): ReadonlyArray<readonly [name: string, status: Record<string, unknown>]>;
  /** Other routers reachable through the fabric, and the fabric's health. */
  sessions(): Array<Record<string, unknown>>;
  fabric(): Record<string, unknown>;
  /** Loaded plugin modules by name → path. */
  plugins(): Record<string, string>;
}

/**
 * What both admin-space layouts share: a queryable answering `@/router/<zid>/**` and a
 * subscriber on the same prefix, so that every write is either applied or refused with a
 * status (never silently dropped). A layout says how entries look and what writes mean.
 */
export abstract class AdminLayout {
  protected readonly session: Session;
  protected readonly manager: StorageManager;
  protected readonly sources: AdminSources;
  /** `@/router/<zid>`. */
  protected readonly prefix: string;
  private queryable: Queryable | undefined;
  private subscriber: Subscriber | undefined;
  /** `leases/<id>`: the same in both layouts. */
  private readonly leases: LeaseAdmin;

  constructor(session: Session, manager: StorageManager, sources: AdminSources) {
    this.session = session;
    this.manager = manager;
    this.sources = sources;
    this.prefix = `@/router/${session.zid}`;
    this.leases = new LeaseAdmin(this.prefix, session.leases);
  }

  start(): void {
    this.queryable = this.session.declareQueryable(`${this.prefix}/**`, (q) => {
      this.answer(q);
      this.leases.answer(q);
    });
    this.subscriber = this.session.declareSubscriber(`${this.prefix}/**`, (s) =>
      this.leases.owns(s.key) ? this.leases.write(s) : this.write(s),
    );
  }

  close(): void {
    this.queryable?.undeclare();
    this.subscriber?.undeclare();
  }

  /** Replies with the entries intersecting the query. */
  protected abstract answer(query: Query): void;
  /** Applies (or refuses, by rejecting with a ZestError) a write on an admin key. */
  protected abstract write(sample: Sample): Promise<void>;
}
