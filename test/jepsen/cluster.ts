/**
 * The cluster the Jepsen-style histories run on, and the faults injected into it (the short form,
 * test/jepsen/linearizable.proc.test.ts, and the long one, bench/jepsen.ts, share them): three routers
 * over a three-node NATS cluster, each with a memory storage on `mem/**` and a `jetstream` storage
 * (three replicas) on `cas/**`. Router 2 reaches its nats-server through a TCP proxy and only
 * through it (the servers advertise no other URL to clients), so the proxy can cut it from NATS.
 */
import { getJson } from "../support/http.js";
import { eventually } from "../support/wait.js";
import { type NatsCluster, startNatsCluster } from "../support/nats-cluster.js";
import { startTcpProxy, type TcpProxy } from "../support/tcp-proxy.js";
import { startZest, type ZestProcess } from "../support/zest-process.js";
import { fabricTimings, NO_STORAGES, routerStatus, sleep, startRouters } from "../fabric/helpers.js";

/** A router unheard of this long is forgotten by the others. */
export const PEER_TIMEOUT_MS = 2_500;
/** The router behind the proxy. */
export const PROXIED = 2;
const IDS = ["A1", "B1", "C1"];
const cfg = (path: string, value: unknown): string[] => ["--cfg", `${path}:${JSON.stringify(value)}`];

/** The running cluster; `routers[i]` changes when a fault restarts router `i`. */
export interface JepsenCluster {
  readonly nats: NatsCluster;
  readonly proxy: TcpProxy;
  readonly routers: ZestProcess[];
  /** The command line of router `i`. */
  args(i: number): string[];
  /** Waits until every router knows the two others. */
  met(timeoutMs?: number): Promise<void>;
  stop(): Promise<void>;
}

/** Starts the NATS cluster, the proxy and the three routers, and waits until they met. */
export async function startJepsenCluster(): Promise<JepsenCluster> {
  const nats = await startNatsCluster({ noAdvertise: true });
  const proxy = await startTcpProxy(nats.nodes[PROXIED]!.port);
  const args = (i: number): string[] => [
    "--id",
    IDS[i]!,
    // The others know every server, so they reconnect to another when theirs dies.
    "--nats",
    i === PROXIED ? proxy.url : [nats.urls[i]!, ...nats.urls.filter((_, j) => j !== i)].join(","),
    ...NO_STORAGES,
    // A killed router is forgotten within 2.5 s, so writes do not wait for it longer (and a
    // router reconnecting after its NATS server died is not forgotten meanwhile).
    ...fabricTimings({ heartbeatMs: 250, peerTimeoutMs: PEER_TIMEOUT_MS, ackTimeoutMs: 3_500 }),
    ...cfg("fabric/nats/reconnect_time_wait_ms", 100),
    ...cfg("plugins/storage_manager/storages/mem", { key_expr: "mem/**", volume: "memory" }),
    ...cfg("plugins/storage_manager/storages/cas", { key_expr: "cas/**", volume: { id: "jetstream", replicas: 3 } }),
  ];
  let routers: ZestProcess[];
  try {
    routers = await startRouters([0, 1, 2].map(args));
  } catch (err) {
    await proxy.close();
    await nats.stop();
    throw err;
  }
  const cluster: JepsenCluster = {
    nats,
    proxy,
    routers,
    args,
    async met(timeoutMs = 15_000) {
      for (const z of routers)
        await eventually(
          async () => (await routerStatus(z.url)).fabric.detail.routers.length === 2,
          timeoutMs,
          "routers to meet",
        );
    },
    async stop() {
      await Promise.all(routers.map((r) => r.stop()));
      await proxy.close();
      await nats.stop();
    },
  };
  try {
    await cluster.met();
  } catch (err) {
    await cluster.stop();
    throw err;
  }
  return cluster;
}

/** A fault: it starts a quarter into a history of `runMs` and is over when it resolves. */
export type Fault = (c: JepsenCluster, target: number, runMs: number) => Promise<void>;

/** The faults, by name (docs/cluster.md, "Faults"). */
export const FAULTS: Readonly<Record<string, Fault>> = {
  none: async () => undefined,
  kill: async (c, i, runMs) => {
    await sleep(runMs / 4);
    await c.routers[i]!.kill9();
    await sleep(runMs / 4);
    c.routers[i] = await startZest(c.args(i));
  },
  nats: async (c, i, runMs) => {
    await sleep(runMs / 4);
    await c.nats.kill9(i);
    await sleep(runMs / 4);
    await c.nats.restart(i, { wait: false });
  },
  pause: async (c, i, runMs) => {
    await sleep(runMs / 4);
    c.routers[i]!.proc.kill("SIGSTOP");
    await sleep(PEER_TIMEOUT_MS + 500);
    c.routers[i]!.proc.kill("SIGCONT");
  },
  // Always the proxied router, past its peers' timeout: they forget it, its storage misses writes.
  partition: async (c, _i, runMs) => {
    await sleep(runMs / 4);
    c.proxy.cut();
    await sleep(PEER_TIMEOUT_MS + 500);
    c.proxy.heal();
  },
};

/**
 * Whether the memory replicas hold the same keys, tombstones and values: every router's
 * replication digest of the `mem` storage is the same (docs/replication.md, "Health"). Waits
 * up to `timeoutMs`.
 */
export async function replicasConverge(c: JepsenCluster, timeoutMs = 20_000): Promise<boolean> {
  const digest = async (url: string): Promise<string> => {
    try {
      const { status, entries } = await getJson(url, "/@/router/local/status/plugins/storage_manager/replication/mem");
      const h = entries[0]?.value as { behind?: boolean; log?: { fingerprint?: string } } | undefined;
      if (status === 200 && h && !h.behind && h.log?.fingerprint) return h.log.fingerprint;
      return `none from ${url} (${status})`;
    } catch (err) {
      return `none from ${url} (${String(err)})`;
    }
  };
  try {
    await eventually(
      async () => new Set(await Promise.all(c.routers.map((r) => digest(r.url)))).size === 1,
      timeoutMs,
      "the memory replicas to converge",
    );
    return true;
  } catch {
    return false;
  }
}
