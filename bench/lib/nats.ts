/**
 * A real 3-node NATS cluster (`startNatsCluster()` from test/support) and zest routers joined to
 * it, for the fabric and jetstream benchmarks (issue 4).
 */
import { type NatsCluster, startNatsCluster } from "../../test/support/nats-cluster.js";
import { type ServerProcess, spawnZest } from "./proc.js";
import { waitUntil } from "./system-load.js";

export type { NatsCluster };
export { startNatsCluster };

/** Pids of the cluster's running nats-server processes (their CPU belongs to the system under test). */
export function natsPids(cluster: NatsCluster): number[] {
  return cluster.nodes.flatMap((n) => (n.proc?.pid === undefined ? [] : [n.proc.pid]));
}

/** Starts a zest router joined to `url` (one NATS node), with `--id` so the others can be awaited by name. */
export function spawnRouter(label: string, id: string, url: string, args: string[]): Promise<ServerProcess> {
  return spawnZest(label, ["--id", id, "--nats", url, ...args]);
}

/**
 * Messages the cluster's nats-servers have taken in so far (`in_msgs` of `/varz`, summed over the
 * nodes: a message crossing a route counts on both of its servers). The difference over a run,
 * per request, tells how many NATS messages a request costs.
 */
export async function natsMessagesIn(cluster: NatsCluster): Promise<number> {
  let total = 0;
  for (const node of cluster.nodes) {
    const res = await fetch(`http://127.0.0.1:${node.monitorPort}/varz`);
    total += ((await res.json()) as { in_msgs: number }).in_msgs;
  }
  return total;
}

/** The fabric part of a router's `@/router/local` status. */
export interface FabricStatus {
  connected: boolean;
  detail: { routers: string[]; samplesReceived: number; samplesSent: number; [k: string]: unknown };
}

/** Reads the fabric status of a router. */
export async function fabricStatus(server: ServerProcess): Promise<FabricStatus> {
  const res = await fetch(`${server.url}/@/router/local`);
  const entries = (await res.json()) as Array<{ value: { fabric: FabricStatus } }>;
  const fabric = entries[0]?.value.fabric;
  if (!fabric) throw new Error(`no fabric status at ${server.url}`);
  return fabric;
}

/** Waits until every router lists every other one (by `--id`). */
export async function waitRoutersMeet(
  routers: Array<{ server: ServerProcess; id: string }>,
  timeoutMs = 10_000,
): Promise<void> {
  for (const r of routers) {
    const others = routers.filter((o) => o !== r).map((o) => o.id);
    await waitUntil(
      async () => {
        const known = (await fabricStatus(r.server)).detail.routers;
        return others.every((id) => known.includes(id));
      },
      timeoutMs,
      `router ${r.id} to see ${others.join(", ")}`,
    );
  }
}
