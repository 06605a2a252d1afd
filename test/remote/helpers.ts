/** Helpers of the remote API tests: an in-process router with the remote API, and zenoh-ts sessions on it. */
import { Config, open, type Reply, ReplyError, type Sample, type Session as ZSession } from "@eclipse-zenoh/zenoh-ts";
import { silentLogger } from "../../src/core/log.js";
import { startZest, type Zest } from "../../src/runtime.js";
import type { ZestConfig } from "../../src/zest-config.js";
import type { ZestProcess } from "../support/zest-process.js";
import { startNatsCluster, type NatsCluster } from "../support/nats-cluster.js";
import { NO_STORAGES, startRouters } from "../fabric/helpers.js";

/** Starts a router with REST and the remote API on free loopback ports (memory storage on `**` unless told). */
export async function startRemoteRouter(config: ZestConfig = {}): Promise<Zest & { locator: string }> {
  const plugins = config.plugins ?? {};
  const z = await startZest(
    {
      ...config,
      plugins: {
        ...plugins,
        rest: { http_port: "127.0.0.1:0", ...plugins.rest },
        remote_api: { websocket_port: 0, ...(plugins.remote_api as object | undefined) },
      },
    },
    { logger: silentLogger },
  );
  return Object.assign(z, { locator: z.remoteApiUrl!.replace("ws://", "ws/") });
}

/** Opens a zenoh-ts session on `locator`, with the client's console chatter muted. */
export async function openClient(locator: string): Promise<ZSession> {
  const { log, warn } = console;
  console.log = console.warn = () => undefined;
  try {
    return await open(new Config(locator));
  } finally {
    console.log = log;
    console.warn = warn;
  }
}

/** A reply as a short string: `put:key=payload`, `delete:key`, `err:payload`. */
export function showReply(reply: Reply): string {
  const r = reply.result();
  if (r instanceof ReplyError) return `err:${r.payload().toString()}`;
  return showSample(r);
}

export function showSample(s: Sample): string {
  return s.kind() === 1
    ? `delete:${s.keyexpr().toString()}`
    : `put:${s.keyexpr().toString()}=${s.payload().toString()}`;
}

/** Reads every reply of a get until its final. */
export async function collect(receiver: AsyncIterable<Reply> | undefined): Promise<string[]> {
  const out: string[] = [];
  if (!receiver) return out;
  for await (const r of receiver) out.push(showReply(r));
  return out;
}

/** A settled round trip: a ping through `session` after everything sent before it was handled. */
export async function roundTrip(session: ZSession): Promise<void> {
  await session.newTimestamp();
}

/** The `ws/host:port` locator of a `zest` process's remote API, from its startup line. */
export function locatorOf(z: ZestProcess): string {
  const m = /remote API ws:\/\/(\S+)/.exec(z.stderr());
  if (!m) throw new Error(`no remote API in: ${z.stderr()}`);
  return `ws/${m[1]}`;
}

/** Two `zest` routers (no storages) over one NATS server, a zenoh-ts client on each. */
export interface ClientPair {
  readonly cluster: NatsCluster;
  readonly r1: ZestProcess;
  readonly r2: ZestProcess;
  readonly c1: ZSession;
  readonly c2: ZSession;
  /** Closes the clients, stops the routers (those still running) and NATS. */
  stop(): Promise<void>;
}

/** Starts a `ClientPair` with router ids `ids` and `extra` arguments for both routers. (Needs `npm run build`.) */
export async function startClientPair(ids: [string, string], extra: string[] = []): Promise<ClientPair> {
  const cluster = await startNatsCluster({ size: 1, jetstream: false });
  const args = (id: string): string[] => [
    "--id",
    id,
    "--nats",
    cluster.urls[0]!,
    "--remote-api-port",
    "127.0.0.1:0",
    ...NO_STORAGES,
    ...extra,
  ];
  let routers: ZestProcess[] = [];
  try {
    routers = await startRouters([args(ids[0]), args(ids[1])]);
    const [r1, r2] = routers as [ZestProcess, ZestProcess];
    const c1 = await openClient(locatorOf(r1));
    const c2 = await openClient(locatorOf(r2));
    return {
      cluster,
      r1,
      r2,
      c1,
      c2,
      async stop() {
        // A client whose router was killed may fail to close: that is not the test's concern.
        await Promise.all([c1.close().catch(() => undefined), c2.close().catch(() => undefined)]);
        await Promise.all([r1.stop(), r2.stop()]);
        await cluster.stop();
      },
    };
  } catch (err) {
    await Promise.all(routers.map((r) => r.stop()));
    await cluster.stop();
    throw err;
  }
}
