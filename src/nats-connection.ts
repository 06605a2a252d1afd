/**
 * The router's one NATS connection, as an explicit port (docs/cluster.md, "The `jetstream`
 * volume"): the NATS fabric (from `--nats` or `fabric.nats`) opens it and is attached here, and
 * jetstream volumes without `servers` of their own read it through `source`. Whoever shares the
 * connection names this object, rather than closing over a variable.
 */
import type { NatsFabric } from "./fabric/index.js";
import type { NatsConnectionSource } from "./storage/volumes/jetstream.js";

/** One router's shared NATS connection: none until a NATS fabric is attached. */
export class SharedNatsConnection {
  #fabric: NatsFabric | undefined;

  /** Shares `fabric`'s connection from now on (none when it is undefined); returns the fabric. */
  attach(fabric: NatsFabric | undefined): NatsFabric | undefined {
    this.#fabric = fabric;
    return fabric;
  }

  /** The shared connection, while an attached fabric has one; undefined otherwise. */
  readonly source: NatsConnectionSource = () => this.#fabric?.connection;
}
