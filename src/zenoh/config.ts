/**
 * The zenoh door's config, in zenohd's names (docs/zenoh-protocol.md): `listen.endpoints`
 * (`-l/--listen`). The door starts from it with `startZenohDoor`.
 */
import type { z } from "zod";
import type { listenSchema } from "./listen-schema.js";
import { ZestError } from "../core/errors.js";
import type { Logger } from "../core/log.js";
import type { Router } from "../core/router.js";
import { DEFAULT_ZENOH_PORT, type Endpoint, formatEndpoint, isLoopback, parseEndpoint } from "./endpoint.js";
import { type ZenohLimits, ZenohServer } from "./server.js";

export type ListenConfig = z.infer<typeof listenSchema>;

/** What the door needs from the rest of the router's startup. */
export interface ZenohDoorContext {
  router: Router;
  logger: Logger;
  /** True when access control is on: then endpoints off loopback are allowed (protected mode). */
  accessControl: boolean;
  limits?: Partial<ZenohLimits>;
}

/**
 * Starts the zenoh door: the configured endpoints, or `tcp/127.0.0.1:7447`. Protected mode as
 * REST has it: the default is loopback, and an endpoint off loopback without access control
 * starts with a warning. Access control is not applied to zenoh sessions yet, so with it on the
 * door stays off unless endpoints are given (then with a warning). When the default port is
 * taken (another router on this host), the door takes a free port and says so, so several
 * routers start on one host as typed; a configured endpoint in use is an error.
 */
export async function startZenohDoor(
  config: ListenConfig | undefined,
  ctx: ZenohDoorContext,
): Promise<ZenohServer | undefined> {
  const configured = config?.endpoints;
  if (configured !== undefined && configured.length === 0) return undefined;
  if (configured === undefined && ctx.accessControl) {
    ctx.logger.warn(
      "zenoh door off: access control is on and is not applied to zenoh sessions yet; give listen.endpoints to open it anyway",
    );
    return undefined;
  }
  const endpoints: Endpoint[] = (configured ?? []).map((e) => parseEndpoint(e));
  for (const e of endpoints) {
    if (ctx.accessControl)
      ctx.logger.warn({ endpoint: formatEndpoint(e) }, "zenoh sessions are not subject to access control yet");
    else if (!isLoopback(e.host))
      ctx.logger.warn(
        { endpoint: formatEndpoint(e) },
        "the zenoh door listens off loopback without access control: anyone who can reach it may read and write every key",
      );
  }
  if (configured !== undefined) {
    const server = new ZenohServer({ router: ctx.router, logger: ctx.logger, endpoints, limits: ctx.limits });
    await server.listen();
    return server;
  }
  const byDefault: Endpoint = { protocol: "tcp", host: "127.0.0.1", port: DEFAULT_ZENOH_PORT };
  const server = new ZenohServer({
    router: ctx.router,
    logger: ctx.logger,
    endpoints: [byDefault],
    limits: ctx.limits,
  });
  try {
    await server.listen();
    return server;
  } catch (err) {
    if (!(err instanceof ZestError) || !/in use/.test(err.message)) throw err;
  }
  const fallback = new ZenohServer({
    router: ctx.router,
    logger: ctx.logger,
    endpoints: [{ ...byDefault, port: 0 }],
    limits: ctx.limits,
  });
  await fallback.listen();
  ctx.logger.warn(
    { locators: fallback.locators() },
    `zenoh port ${DEFAULT_ZENOH_PORT} is taken (another router on this host?): listening on a free port instead; give -l to choose`,
  );
  return fallback;
}
