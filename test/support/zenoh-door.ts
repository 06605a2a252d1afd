/**
 * A zenoh door (src/zenoh/server.ts) on a router of its own, listening on loopback, for the tests
 * that speak the wire protocol to it (the raw client, zenoh-pico), with a session on that router
 * to publish, subscribe and declare queryables from the router's side.
 */
import { silentLogger } from "../../src/core/log.js";
import { Router } from "../../src/core/router.js";
import { Session } from "../../src/core/session.js";
import { parseEndpoint } from "../../src/zenoh/endpoint.js";
import { ZenohServer, type ZenohServerOptions } from "../../src/zenoh/server.js";

/** A door started by `zenohDoor`. */
export interface TestZenohDoor {
  readonly router: Router;
  readonly server: ZenohServer;
  /** The port of its first endpoint. */
  readonly port: number;
  /** A session on the door's router. */
  readonly session: Session;
}

/** The server's options a test may set; `endpoint` (default `tcp/127.0.0.1:0`) is the one it listens on. */
export type ZenohDoorOptions = Partial<
  Omit<ZenohServerOptions, "zid" | "openSession" | "connectivity" | "endpoints">
> & {
  endpoint?: string;
};

/** Starts a zenoh door; it is pushed on `opened`, which the test closes at its end. */
export async function zenohDoor(
  opened: Array<{ close(): unknown }>,
  options: ZenohDoorOptions = {},
): Promise<TestZenohDoor> {
  const { endpoint = "tcp/127.0.0.1:0", logger = silentLogger, ...rest } = options;
  const router = new Router({ logger: silentLogger });
  const server = new ZenohServer({
    ...rest,
    zid: router.zid,
    openSession: (name) => new Session(router, name),
    connectivity: router.connectivity(),
    logger,
    endpoints: [parseEndpoint(endpoint)],
  });
  await server.listen();
  opened.push(server);
  const port = Number(server.locators()[0]!.split(":").pop());
  return { router, server, port, session: new Session(router, "test") };
}
