/**
 * The UDP unicast listener of the zenoh door (docs/zenoh-protocol.md, "UDP"). One socket per
 * endpoint; its datagrams are demultiplexed by remote address and port, one `DatagramWire` (one
 * zenoh session) each, as zenoh's unconnected UDP listener does. A datagram is one batch, with no
 * length prefix. UDP neither retransmits nor orders: the link is best effort, as in zenoh.
 */
import type { Buffer } from "node:buffer";
import { createSocket, type RemoteInfo, type Socket } from "node:dgram";
import { lookup } from "node:dns/promises";
import { isIP } from "node:net";
import { errorMessage } from "../../core/errors.js";
import type { Logger } from "../../core/log.js";
import { type Endpoint, formatEndpoint } from "../endpoint.js";
import { bindError, type LinkListener, type OnWire } from "./listener.js";
import type { Wire, WireHandlers } from "./wire.js";

/**
 * The largest datagram zenoh sends on UDP: 65 535 less the UDP header (8) and an IPv6 header
 * (40), zenoh's `UDP_MAX_MTU`.
 */
export const UDP_MAX_MTU = 65_535 - 8 - 40;

/** One remote address and port on a UDP socket: one zenoh session. */
export class DatagramWire implements Wire {
  readonly protocol = "udp";
  readonly streamed = false;
  readonly reliable = false;
  readonly mtu = UDP_MAX_MTU;
  queuedBytes = 0;
  private handlers: WireHandlers | undefined;
  private stopped = false;

  constructor(
    private readonly socket: Socket,
    readonly remoteAddress: string,
    readonly remotePort: number,
    readonly localAddress: string | undefined,
    private readonly forget: (wire: DatagramWire) => void,
  ) {}

  bind(handlers: WireHandlers): void {
    this.handlers = handlers;
  }

  /** A datagram from this wire's remote. */
  deliver(datagram: Buffer): void {
    if (!this.stopped) this.handlers?.batch(datagram);
  }

  send(framed: Uint8Array): void {
    if (this.stopped) return;
    const size = framed.length - 2;
    this.queuedBytes += size;
    this.socket.send(framed, 2, size, this.remotePort, this.remoteAddress, () => {
      this.queuedBytes -= size;
      if (this.queuedBytes === 0 && !this.stopped) this.handlers?.drained();
    });
  }

  end(): void {
    this.destroy();
  }

  destroy(): void {
    if (this.stopped) return;
    this.stopped = true;
    this.forget(this);
  }

  /** The listener closed under it. */
  lost(): void {
    if (this.stopped) return;
    this.destroy();
    this.handlers?.closed();
  }
}

/** Listens on a `udp/` endpoint; a port in use rejects with a one-line `unavailable` error. */
export async function listenUdp(e: Endpoint, onWire: OnWire, logger: Logger): Promise<LinkListener> {
  const socket = createSocket({ type: isIP(e.host) === 6 ? "udp6" : "udp4" });
  const wires = new Map<string, DatagramWire>();
  const keyOf = (address: string, port: number): string => `${address}|${port}`;
  // A socket bound to a wildcard cannot tell which interface a datagram came in on.
  const local = e.host === "0.0.0.0" || e.host === "::" ? undefined : e.host;
  const forget = (w: DatagramWire): void => {
    const k = keyOf(w.remoteAddress, w.remotePort);
    if (wires.get(k) === w) wires.delete(k);
  };
  await new Promise<void>((resolve, reject) => {
    const onError = (err: NodeJS.ErrnoException): void => {
      socket.close();
      reject(bindError(e, err));
    };
    socket.once("error", onError);
    socket.bind(e.port, e.host, () => {
      socket.off("error", onError);
      resolve();
    });
  });
  socket.on("error", (err) => logger.warn({ err: errorMessage(err) }, "zenoh UDP listener error"));
  socket.on("message", (datagram: Buffer, from: RemoteInfo) => {
    const k = keyOf(from.address, from.port);
    let wire = wires.get(k);
    if (wire === undefined) {
      wire = new DatagramWire(socket, from.address, from.port, local, forget);
      wires.set(k, wire);
      // The server binds the wire to a new transport, or refuses it (which forgets it).
      onWire(wire);
      if (wires.get(k) !== wire) return;
    }
    wire.deliver(datagram);
  });
  const addr = socket.address();
  return {
    locator: formatEndpoint({ protocol: "udp", host: addr.address, port: addr.port }),
    close: () =>
      new Promise<void>((resolve) => {
        for (const w of [...wires.values()]) w.lost();
        socket.close(() => resolve());
      }),
  };
}

/**
 * Opens a UDP link to a router's `udp/` endpoint, as zenoh's UDP link does when it connects: a
 * socket of its own on an ephemeral port, taking datagrams from that endpoint only. Closing the
 * wire closes the socket.
 */
export async function connectUdp(e: Endpoint): Promise<DatagramWire> {
  // Datagrams are told apart by their source address: a name (`localhost`) is resolved first.
  const host = isIP(e.host) === 0 ? (await lookup(e.host)).address : e.host;
  const socket = createSocket({ type: isIP(host) === 6 ? "udp6" : "udp4" });
  await new Promise<void>((resolve, reject) => {
    const onError = (err: Error): void => {
      socket.close();
      reject(err);
    };
    socket.once("error", onError);
    socket.bind(0, isIP(host) === 6 ? "::" : "0.0.0.0", () => {
      socket.off("error", onError);
      resolve();
    });
  });
  const wire = new DatagramWire(socket, host, e.port, undefined, () => socket.close());
  // An ICMP "port unreachable" surfaces as an error on the socket: the router is not there.
  socket.on("error", () => wire.lost());
  socket.on("message", (datagram: Buffer, from: RemoteInfo) => {
    if (from.port === e.port && from.address === host) wire.deliver(datagram);
  });
  return wire;
}
