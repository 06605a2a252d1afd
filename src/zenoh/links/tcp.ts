/** The TCP listener of the zenoh door (docs/zenoh-protocol.md, "Links"): a `StreamWire` per connection. */
import { createServer, type Server } from "node:net";
import { errorMessage } from "../../core/errors.js";
import type { Logger } from "../../core/log.js";
import { type Endpoint, formatEndpoint } from "../endpoint.js";
import { bindError, type LinkListener, type OnWire } from "./listener.js";
import { StreamWire } from "./stream.js";

/** Listens on a `tcp/` endpoint; a port in use rejects with a one-line `unavailable` error. */
export async function listenTcp(e: Endpoint, onWire: OnWire, logger: Logger): Promise<LinkListener> {
  const server = createServer((socket) => onWire(new StreamWire("tcp", socket)));
  return listenServer(server, e, logger);
}

/** Binds `server` (TCP or TLS) to `e` and answers its listener. */
export async function listenServer(server: Server, e: Endpoint, logger: Logger): Promise<LinkListener> {
  await new Promise<void>((resolve, reject) => {
    const onError = (err: NodeJS.ErrnoException): void => reject(bindError(e, err));
    server.once("error", onError);
    server.listen(e.port, e.host, () => {
      server.off("error", onError);
      resolve();
    });
  });
  server.on("error", (err) => logger.warn({ err: errorMessage(err) }, "zenoh listener error"));
  const addr = server.address();
  const locator =
    addr && typeof addr === "object"
      ? formatEndpoint({ protocol: e.protocol, host: addr.address, port: addr.port })
      : formatEndpoint(e);
  return {
    locator,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
