/**
 * zenoh multicast scouting for the zenoh door: a client with no endpoint sends SCOUT to
 * `224.0.0.224:7446` and connects to the locators of the first HELLO (docs/zenoh-protocol.md,
 * "Scouting"). The door calls `startScouting` once its listeners are bound and closes what it
 * returns when it closes.
 */
import { errorMessage, ZestError } from "../../core/errors.js";
import type { Logger } from "../../core/log.js";
import { idToZenohId } from "../../core/timestamp.js";
import { locatorHost, scoutingInterfaces } from "./interfaces.js";
import { ScoutingResponder } from "./responder.js";
import { answersScouts, type ScoutingConfig } from "./schema.js";

export {
  helloLocators,
  hostInterfaces,
  type InterfaceTable,
  isLoopback,
  locatorHost,
  scoutingInterfaces,
} from "./interfaces.js";
export * from "./messages.js";
export { DEFAULT_SCOUTING_ADDRESS, parseScoutingAddress } from "./address.js";
export { ScoutingResponder, type ScoutingStats } from "./responder.js";
export * from "./schema.js";

/** What the door knows that scouting needs. */
export interface ScoutingContext {
  /** The router's ZenohId (16 bytes, little-endian: `idToZenohId(routerId)`). */
  readonly zid: Uint8Array;
  /** The hosts the zenoh listeners are bound to (`127.0.0.1`, `0.0.0.0`, `::`...). */
  readonly listenerHosts: readonly string[];
  /** The listeners' locators (`tcp/127.0.0.1:7447`), read at every SCOUT. */
  readonly locators: () => readonly string[];
  readonly logger: Logger;
}

/**
 * Starts answering SCOUTs as `config` says, on the interfaces where the listeners are reachable
 * unless `scouting.multicast.interface` names others. Resolves with the responder to close, or
 * undefined when scouting is off (or no listener is reachable through IPv4). Rejects with a
 * ZestError when an interface is unknown or the group cannot be joined.
 */
export async function startScouting(
  config: ScoutingConfig,
  ctx: ScoutingContext,
): Promise<ScoutingResponder | undefined> {
  if (!answersScouts(config)) return undefined;
  const { address, interface: iface, ttl } = config.multicast;
  const interfaces = scoutingInterfaces(iface, ctx.listenerHosts);
  if (interfaces.length === 0) {
    ctx.logger.info({ listeners: ctx.listenerHosts }, "scouting: no IPv4 interface reaches the zenoh listener; off");
    return undefined;
  }
  const responder = new ScoutingResponder({
    address,
    interfaces,
    ttl,
    zid: ctx.zid,
    whatami: "router",
    locators: ctx.locators,
    logger: ctx.logger,
  });
  await responder.start();
  return responder;
}

/**
 * Starts scouting for a running zenoh door, from its `scouting` section (parsed once with the
 * whole configuration): what the door calls once it listens. An unknown interface throws (a
 * config error, as zenohd refuses to start); a group that cannot be joined (no multicast route,
 * say) is a warning, and the router runs without scouting: clients given an endpoint still
 * connect.
 */
export async function startScoutingForDoor(
  config: ScoutingConfig,
  door: { locators(): string[] },
  routerId: string,
  logger: Logger,
): Promise<ScoutingResponder | undefined> {
  const hosts = door.locators().flatMap((l) => locatorHost(l) ?? []);
  try {
    return await startScouting(config, {
      zid: idToZenohId(routerId),
      listenerHosts: hosts,
      locators: () => door.locators(),
      logger,
    });
  } catch (err) {
    if (err instanceof ZestError && err.kind === "bad_input") throw err;
    logger.warn({ err: errorMessage(err) }, "multicast scouting off: clients must be given an endpoint");
    return undefined;
  }
}
