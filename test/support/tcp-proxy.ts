/**
 * A TCP proxy a test controls: it listens on a loopback port and forwards every connection to a
 * target, until the test cuts the link. `cut()` destroys every open connection and refuses new
 * ones (they are accepted and closed at once, as a broken network path looks to a client that
 * keeps reconnecting); `heal()` lets connections through again. Used to partition a router from
 * NATS without touching either process.
 */
import { once } from "node:events";
import { createServer, type AddressInfo, type Server, type Socket, connect } from "node:net";

/** A running proxy. */
export interface TcpProxy {
  /** The port clients connect to. */
  readonly port: number;
  /** `nats://127.0.0.1:<port>`, for a NATS client. */
  readonly url: string;
  /** True while the link is cut. */
  readonly isCut: boolean;
  /** Bytes forwarded so far, both ways. */
  readonly bytes: number;
  /** Drops every connection and refuses new ones until `heal`. */
  cut(): void;
  /** Forwards new connections again. */
  heal(): void;
  close(): Promise<void>;
}

/** Starts a proxy to `targetPort` on 127.0.0.1. */
export async function startTcpProxy(targetPort: number): Promise<TcpProxy> {
  const open = new Set<Socket>();
  let isCut = false;
  let bytes = 0;
  const server: Server = createServer((client) => {
    if (isCut) {
      client.destroy();
      return;
    }
    const upstream = connect(targetPort, "127.0.0.1");
    open.add(client);
    open.add(upstream);
    const drop = (): void => {
      open.delete(client);
      open.delete(upstream);
      client.destroy();
      upstream.destroy();
    };
    client.on("data", (d: Buffer) => {
      bytes += d.length;
      upstream.write(d);
    });
    upstream.on("data", (d: Buffer) => {
      bytes += d.length;
      client.write(d);
    });
    client.on("error", drop);
    upstream.on("error", drop);
    client.on("close", drop);
    upstream.on("close", drop);
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const port = (server.address() as AddressInfo).port;
  return {
    port,
    url: `nats://127.0.0.1:${port}`,
    get isCut() {
      return isCut;
    },
    get bytes() {
      return bytes;
    },
    cut() {
      isCut = true;
      for (const s of open) s.destroy();
      open.clear();
    },
    heal() {
      isCut = false;
    },
    async close() {
      isCut = true;
      for (const s of open) s.destroy();
      open.clear();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}
