/**
 * The multicast scouting responder: answers a SCOUT that wants a router with a HELLO listing
 * where this router's zenoh listener accepts sessions, as zenohd does (docs/zenoh-protocol.md,
 * "Scouting"). It joins the multicast group on each configured interface address and answers
 * from a unicast socket on the interface that best matches the scout's address.
 */
import type { Buffer } from "node:buffer";
import { createSocket, type RemoteInfo, type Socket } from "node:dgram";
import { once } from "node:events";
import type { Logger } from "../../core/log.js";
import { errorMessage, ZestError } from "../../core/errors.js";
import { DEFAULT_SCOUTING_ADDRESS, parseScoutingAddress } from "./address.js";
import { helloLocators } from "./interfaces.js";
import {
  decodeScoutingMessage,
  encodeHello,
  MAX_HELLO_LOCATORS,
  type ScoutingMessage,
  type WhatAmI,
} from "./messages.js";

/** Options of a `ScoutingResponder`. */
export interface ScoutingResponderOptions {
  /** The multicast group and port, `224.0.0.224:7446` by default (IPv4 only). */
  readonly address?: string;
  /** IPv4 addresses of the interfaces to answer on (see `scoutingInterfaces`). */
  readonly interfaces: readonly string[];
  /** This node's ZenohId (16 bytes, little-endian) or its wire form (1 to 16 bytes). */
  readonly zid: Uint8Array;
  /** The kind this node answers as; a scout that does not want it gets no answer. */
  readonly whatami?: WhatAmI;
  /** The listener's locators, read at every SCOUT (a listener on port 0 learns its port late). */
  readonly locators: () => readonly string[];
  /** TTL of the datagrams sent (zenohd's `scouting.multicast.ttl`, 1 by default). */
  readonly ttl?: number;
  /** Most HELLOs sent per second, whoever asks: a flood of SCOUTs is not amplified past it. */
  readonly maxHellosPerSecond?: number;
  readonly logger: Logger;
}

/** What the responder did, for the admin space and tests. */
export interface ScoutingStats {
  scouts: number;
  hellos: number;
  /** Datagrams that were not a scouting message (dropped with a debug line). */
  malformed: number;
  /** SCOUTs left unanswered past `maxHellosPerSecond`. */
  throttled: number;
}

/** The number of leading bytes two IPv4 addresses share (zenoh picks the reply socket by it). */
function sharedOctets(a: string, b: string): number {
  const x = a.split(".");
  const y = b.split(".");
  let n = 0;
  while (n < 4 && x[n] === y[n]) n++;
  return n;
}

/** Answers zenoh multicast scouting. `start()` binds, `close()` releases every socket. */
export class ScoutingResponder {
  /** What it did so far. */
  readonly stats: ScoutingStats = { scouts: 0, hellos: 0, malformed: 0, throttled: 0 };
  private readonly group: string;
  private readonly port: number;
  private readonly whatami: WhatAmI;
  private readonly maxPerSecond: number;
  private mcast: Socket | undefined;
  private readonly senders = new Map<string, Socket>();
  private windowStart = 0;
  private windowCount = 0;

  constructor(private readonly opts: ScoutingResponderOptions) {
    ({ group: this.group, port: this.port } = parseScoutingAddress(opts.address ?? DEFAULT_SCOUTING_ADDRESS));
    this.whatami = opts.whatami ?? "router";
    this.maxPerSecond = opts.maxHellosPerSecond ?? 1000;
    if (opts.interfaces.length === 0) throw new ZestError("bad_input", "scouting: no interface to answer on");
  }

  /** The group and port it listens on, e.g. `224.0.0.224:7446`. */
  get address(): string {
    return `${this.group}:${this.port}`;
  }

  /**
   * Binds the group's port (shared: several routers on one host may all answer), joins the group
   * on each interface, and opens one unicast socket per interface to answer from. Rejects with a
   * ZestError naming the interface that could not join.
   */
  async start(): Promise<void> {
    if (this.mcast) return;
    const mcast = createSocket({ type: "udp4", reuseAddr: true });
    this.mcast = mcast;
    try {
      // Bound to the group address (as zenohd on Unix): only the group's datagrams arrive here.
      mcast.bind({ port: this.port, address: this.group, exclusive: false });
      await once(mcast, "listening");
      for (const iface of this.opts.interfaces) {
        try {
          mcast.addMembership(this.group, iface);
        } catch (err) {
          throw new ZestError("unavailable", `scouting: cannot join ${this.group} on ${iface}: ${errorMessage(err)}`);
        }
      }
      for (const iface of this.opts.interfaces) {
        const s = createSocket({ type: "udp4" });
        this.senders.set(iface, s);
        s.bind({ port: 0, address: iface });
        await once(s, "listening");
        s.setMulticastTTL(this.opts.ttl ?? 1);
        s.on("error", (err) => this.opts.logger.warn({ iface, err: errorMessage(err) }, "scouting socket error"));
      }
    } catch (err) {
      await this.close();
      throw err instanceof ZestError
        ? err
        : new ZestError("unavailable", `scouting on ${this.address}: ${errorMessage(err)}`);
    }
    mcast.on("message", (msg, rinfo) => this.onDatagram(msg, rinfo));
    mcast.on("error", (err) => this.opts.logger.warn({ err: errorMessage(err) }, "scouting socket error"));
    this.opts.logger.info({ address: this.address, interfaces: this.opts.interfaces }, "scouting: answering");
  }

  /** Closes every socket. Safe to call twice. */
  async close(): Promise<void> {
    const all = [...this.senders.values()];
    if (this.mcast) all.push(this.mcast);
    this.mcast = undefined;
    this.senders.clear();
    await Promise.all(
      all.map(
        (s) =>
          new Promise<void>((resolve) => {
            try {
              s.close(() => resolve());
            } catch {
              resolve(); // never bound, or closed already
            }
          }),
      ),
    );
  }

  private onDatagram(msg: Buffer, rinfo: RemoteInfo): void {
    let scout: ScoutingMessage;
    try {
      scout = decodeScoutingMessage(msg);
    } catch (err) {
      this.stats.malformed++;
      this.opts.logger.debug({ from: `${rinfo.address}:${rinfo.port}`, err: errorMessage(err) }, "scouting: dropped");
      return;
    }
    // A HELLO from another node, or a SCOUT for clients or peers only: not ours to answer.
    if (scout.kind !== "scout") return;
    this.stats.scouts++;
    if (!scout.what.has(this.whatami)) return;
    if (!this.admit()) {
      this.stats.throttled++;
      return;
    }
    const locators = helloLocators(this.opts.locators(), rinfo.address).slice(0, MAX_HELLO_LOCATORS);
    let hello: Buffer;
    try {
      hello = encodeHello(this.whatami, this.opts.zid, locators);
    } catch (err) {
      this.opts.logger.warn({ err: errorMessage(err) }, "scouting: cannot encode HELLO");
      return;
    }
    const sender = this.senderFor(rinfo.address);
    if (sender === undefined) return;
    this.stats.hellos++;
    sender.send(hello, rinfo.port, rinfo.address, (err) => {
      if (err) this.opts.logger.debug({ to: rinfo.address, err: errorMessage(err) }, "scouting: HELLO not sent");
    });
  }

  /** The unicast socket whose interface address shares the most leading octets with `peer`. */
  private senderFor(peer: string): Socket | undefined {
    let best: Socket | undefined;
    let bestShared = -1;
    for (const [iface, s] of this.senders) {
      const n = sharedOctets(iface, peer);
      if (n > bestShared) {
        best = s;
        bestShared = n;
      }
    }
    return best;
  }

  /** A fixed one-second window: at most `maxHellosPerSecond` answers in it. */
  private admit(): boolean {
    const now = Date.now();
    if (now - this.windowStart >= 1000) {
      this.windowStart = now;
      this.windowCount = 0;
    }
    return ++this.windowCount <= this.maxPerSecond;
  }
}
