/**
 * What the remote API tells a client of the routers this one reaches (docs/remote-api.md,
 * "Connectivity"): the transports and links zenoh-ts asks for, and the listeners that follow
 * them, each a router over NATS as zenoh would describe it. A part only the remote API has.
 */
import type { Buffer } from "node:buffer";
import type { Connectivity } from "../core/ports.js";
import { frame, writeLink, writeTransport } from "./outgoing.js";
import { Out } from "./protocol.js";
import type { Writer } from "./wire.js";

type Kind = "transport" | "link";

export class ConnectivityEvents {
  /** Listeners by the client's id: what stops each. */
  readonly #listeners = new Map<number, () => void>();

  constructor(
    private readonly connectivity: Connectivity,
    /** This router's zid. */
    private readonly zid: string,
    private readonly send: (frame: Buffer) => void,
  ) {}

  /** Listeners held. */
  get size(): number {
    return this.#listeners.size;
  }

  /** True when listener `id` is declared. */
  has(id: number): boolean {
    return this.#listeners.has(id);
  }

  #peers(): string[] {
    return [...this.connectivity.peers()];
  }

  #write(kind: Kind, w: Writer, zid: string): void {
    if (kind === "transport") writeTransport(w, zid);
    else writeLink(w, zid, this.zid, this.connectivity.server() ?? "nats");
  }

  /** ResponseTransports or ResponseLinks: one entry per router reached. */
  response(kind: Kind, seq: number | undefined): Buffer {
    const w = frame(kind === "transport" ? Out.ResponseTransports : Out.ResponseLinks, seq);
    const peers = this.#peers();
    w.varint(peers.length);
    for (const zid of peers) this.#write(kind, w, zid);
    return w.finish();
  }

  /**
   * A listener `id` of `kind` events: an update for each router that comes or goes. Returns the
   * history (the routers reached now), to send after the response to the declaration.
   */
  declare(id: number, kind: Kind, history: boolean): () => void {
    const known = new Set(this.#peers());
    const emit = (put: boolean, zid: string): void => {
      const w = frame(kind === "transport" ? Out.InTransportEventUpdate : Out.InLinkEventUpdate)
        .u32(id)
        .u8(put ? 0 : 1);
      this.#write(kind, w, zid);
      this.send(w.finish());
    };
    const stop = this.connectivity.onChange(() => {
      const now = new Set(this.#peers());
      for (const z of now) if (!known.has(z)) emit(true, z);
      for (const z of known) if (!now.has(z)) emit(false, z);
      known.clear();
      for (const z of now) known.add(z);
    });
    this.#listeners.set(id, stop);
    return () => {
      if (history) for (const z of known) emit(true, z);
    };
  }

  /** Stops listener `id`; false when there is none by that id. */
  undeclare(id: number): boolean {
    const stop = this.#listeners.get(id);
    if (stop === undefined) return false;
    this.#listeners.delete(id);
    stop();
    return true;
  }

  /** Stops every listener. */
  close(): void {
    for (const stop of this.#listeners.values()) stop();
    this.#listeners.clear();
  }
}
