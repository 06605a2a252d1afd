/**
 * The zenoh protocol as a front door (docs/zenoh-protocol.md, docs/adding-a-front-door.md):
 * zenoh clients and peers over TCP, UDP and TLS, with multicast scouting answered beside it. Its
 * config keeps zenohd's names at the root (`listen`, `scouting`, `transport`), so a zenohd config's
 * sections read the same here.
 */
import type { DoorContext, DoorFlag, FrontDoor } from "../access/front-door.js";
import { errorMessage } from "../core/errors.js";
import { parseEndpoint } from "./endpoint.js";
import { startZenohDoor, zenohTls } from "./config.js";
import { startScoutingForDoor } from "./scouting/index.js";
import { type ZenohDoorConfig, zenohDoorSchema } from "./schema.js";
import { UsrPwdAuth } from "./auth-usrpwd.js";
import { startJoiner } from "./connect/start.js";
import type { ZenohJoiner } from "./connect/joiner.js";

/** A repeatable endpoint flag's list, each endpoint checked (`--listen: endpoint "quic/...": ...`). */
const endpoints =
  (flag: string) =>
  (given: string | readonly string[] | false): readonly string[] | undefined => {
    const list = typeof given === "string" ? [given] : given === false ? [] : given;
    for (const e of list) {
      try {
        parseEndpoint(e);
      } catch (err) {
        throw new Error(`${flag}: ${errorMessage(err)}`);
      }
    }
    return list;
  };

/** zenohd's flags, with zenohd's names: they set the door's root sections. */
const zenohFlags: readonly DoorFlag[] = [
  {
    flag: "-l, --listen",
    value: "endpoint",
    description:
      "zenoh endpoint to listen on, tcp/, udp/ or tls/ then <ip>:<port> or [<ipv6>]:<port> (repeatable; default tcp/127.0.0.1:7447)",
    repeatable: true,
    path: ["listen", "endpoints"],
    parse: endpoints("--listen"),
  },
  {
    flag: "-e, --connect",
    value: "endpoint",
    description: "zenoh router to join as a client, tcp/ or tls/ then <ip>:<port> (repeatable: the first that answers)",
    repeatable: true,
    path: ["connect", "endpoints"],
    parse: endpoints("--connect"),
  },
  {
    flag: "--no-multicast-scouting",
    description: "do not answer zenoh multicast scouting (as zenohd's flag)",
    path: ["scouting", "multicast", "enabled"],
  },
];

/** The router zest joined, as one more session of the door (`joined: true`), while open. */
function joinedSession(joiner: ZenohJoiner | undefined): Array<Record<string, unknown>> {
  const s = joiner?.joinedRouter();
  return s === undefined ? [] : [s];
}

export const zenohDoor = {
  name: "zenoh",
  title: "zenoh",
  schema: zenohDoorSchema,
  atRoot: true,
  flags: zenohFlags,
  async start(ctx: DoorContext<ZenohDoorConfig>) {
    const dictionary = ctx.config.transport?.auth?.usrpwd?.dictionary_file;
    const usrpwd = dictionary ? UsrPwdAuth.fromFile(dictionary) : undefined;
    if (usrpwd !== undefined)
      ctx.logger.info(
        { users: usrpwd.size, accessControl: ctx.edge.access.enabled },
        "zenoh user/password authentication on",
      );
    const tx = ctx.config.transport?.link?.tx;
    const lease = tx?.lease;
    const waitBeforeCloseUs = tx?.queue?.congestion_control?.block?.wait_before_close;
    const server = await startZenohDoor(ctx.config.listen, {
      usrpwd,
      sessionBound: ctx.edge.sessionBound,
      admin: ctx.edge.admin,
      guard: ctx.edge.connectionGuard({
        perAddress: ctx.config.transport?.unicast?.max_sessions_per_address,
        total: ctx.config.transport?.unicast?.max_sessions,
      }),
      bindHost: (e) =>
        void ctx.edge.bindHost(
          { title: "zenoh door", openHint: "-l tcp/0.0.0.0:7447" },
          { host: e.host, port: e.port },
        ),
      limits: {
        ...(lease === undefined ? {} : { leaseMs: lease }),
        ...(waitBeforeCloseUs === undefined ? {} : { blockWaitBeforeCloseMs: Math.ceil(waitBeforeCloseUs / 1000) }),
      },
      zid: ctx.zid,
      openSession: ctx.openSession,
      connectivity: ctx.connectivity,
      logger: ctx.logger,
      access: ctx.edge.access.enabled ? ctx.edge.access : undefined,
      tls: zenohTls(ctx.config.transport, ctx.edge.tls),
    });
    // Joining a zenoh network (docs/zenoh-network.md) works with the listener off too.
    const joiner = startJoiner(ctx, lease);
    if (!server) {
      if (joiner === undefined) return undefined;
      return {
        locators: () => [],
        status: () => ({ locators: [], sessions: [], connect: joiner.status() }),
        sessions: () => joinedSession(joiner),
        counters: () => ({ connections: joiner.status().state === "open" ? 1 : 0, refused: 0 }),
        close: () => joiner.close(),
      };
    }
    ctx.logger.info({ zid: ctx.zid, locators: server.locators() }, "zenoh door listening");
    let scouting: Awaited<ReturnType<typeof startScoutingForDoor>>;
    try {
      scouting = await startScoutingForDoor(ctx.config.scouting, server, ctx.zid, ctx.logger);
    } catch (err) {
      await joiner?.close();
      await server.close();
      throw err;
    }
    return {
      locators: () => server.locators(),
      status: () => ({
        locators: server.locators(),
        sessions: server.status(),
        refused: server.refused,
        auth_failures: server.authFailures,
        ...(joiner === undefined ? {} : { connect: joiner.status() }),
      }),
      sessions: () => [
        ...server.status().map((s) => ({ peer: s.zid, whatami: s.whatami, address: s.address, link: s.link })),
        ...joinedSession(joiner),
      ],
      counters: () => ({ connections: server.status().length, refused: server.refused }),
      async close() {
        await joiner?.close();
        await scouting?.close();
        await server.close();
      },
    };
  },
} satisfies FrontDoor<"zenoh", typeof zenohDoorSchema> & { readonly atRoot: true };
