/**
 * A real `nats-server` cluster on loopback ports for tests and benchmarks: JetStream on, store
 * directories in one temp dir, every process and directory removed by `stop()`.
 *
 * ```ts
 * const cluster = await startNatsCluster();          // 3 nodes, JetStream, ready for R3 streams
 * const zest = await startZest(["--nats", cluster.urls[0]!]);
 * ...
 * await cluster.stop();
 * ```
 */
import { spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { createServer, type AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { killAtExit } from "./child-processes.js";

/** The `nats-server` binary: `$NATS_SERVER`, else the Debian path, else whatever `PATH` finds. */
export const NATS_SERVER =
  process.env.NATS_SERVER ?? (existsSync("/usr/sbin/nats-server") ? "/usr/sbin/nats-server" : "nats-server");

/** One server of the cluster. Its ports stay the same across `restart`. */
export interface NatsNode {
  readonly name: string;
  /** Client URL, `nats://127.0.0.1:<port>`. */
  readonly url: string;
  readonly port: number;
  readonly clusterPort: number;
  readonly monitorPort: number;
  readonly storeDir: string;
  /** The live process, undefined while the node is down. */
  proc: ChildProcess | undefined;
  /** Everything the current process wrote on stderr (nats-server logs there). */
  log: string;
}

/** A running cluster. */
export interface NatsCluster {
  readonly nodes: readonly NatsNode[];
  /** Client URLs of every node, in node order. */
  readonly urls: readonly string[];
  /** SIGKILL node `i` (its store dir is kept, so `restart(i)` brings it back with its data). */
  kill9(i: number): Promise<void>;
  /** SIGTERM node `i` and wait for it to exit. */
  stopNode(i: number): Promise<void>;
  /**
   * Starts node `i` again on the same ports and store dir, and waits until the cluster is ready.
   * With `wait: false` it returns at once: restart every node of a cluster that was killed whole,
   * then `waitReady()` (JetStream needs a quorum before any node is ready).
   */
  restart(i: number, opts?: { wait?: boolean }): Promise<void>;
  /** Waits until every running node answers `/healthz` and JetStream has a meta leader. */
  waitReady(timeoutMs?: number): Promise<void>;
  /** Stops every node and removes the temp dir. Safe to call twice. */
  stop(): Promise<void>;
}

/** Options of `startNatsCluster`. */
export interface NatsClusterOptions {
  /** Number of nodes (default 3). One node runs without cluster routes. */
  size?: number;
  /** Enable JetStream (default true). */
  jetstream?: boolean;
  /** Milliseconds to wait for readiness (default 20 000). */
  readyTimeoutMs?: number;
  /**
   * Do not tell clients the cluster's other servers (`--no_advertise`), so a client reaches only
   * the URLs it was given: a router behind a TCP proxy cannot get around a cut (default false).
   */
  noAdvertise?: boolean;
}

/** Free loopback ports, all reserved at once so that they are distinct. */
export async function freePorts(n: number): Promise<number[]> {
  const servers = await Promise.all(
    Array.from({ length: n }, async () => {
      const s = createServer();
      s.listen(0, "127.0.0.1");
      await once(s, "listening");
      return s;
    }),
  );
  const ports = servers.map((s) => (s.address() as AddressInfo).port);
  await Promise.all(servers.map((s) => new Promise<void>((r) => s.close(() => r()))));
  return ports;
}

/**
 * Starts a `size`-node cluster (3 by default) and waits until it can hold replicated streams.
 * Free ports are picked, then bound by the servers; when another process took one in between,
 * the cluster is started again on new ports.
 */
export async function startNatsCluster(options: NatsClusterOptions = {}): Promise<NatsCluster> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await startOnce(options);
    } catch (err) {
      if (attempt >= 3 || !/address already in use/i.test(String(err))) throw err;
    }
  }
}

async function startOnce(options: NatsClusterOptions): Promise<NatsCluster> {
  const size = options.size ?? 3;
  const jetstream = options.jetstream ?? true;
  const dir = mkdtempSync(join(tmpdir(), "zest-nats-"));
  const ports = await freePorts(size * 3);
  const clusterName = `zest_test_${process.pid}_${ports[0]}`;
  const nodes: NatsNode[] = Array.from({ length: size }, (_, i) => ({
    name: `n${i + 1}`,
    port: ports[i * 3]!,
    clusterPort: ports[i * 3 + 1]!,
    monitorPort: ports[i * 3 + 2]!,
    url: `nats://127.0.0.1:${ports[i * 3]!}`,
    storeDir: join(dir, `n${i + 1}`),
    proc: undefined,
    log: "",
  }));
  const routes = nodes.map((n) => `nats://127.0.0.1:${n.clusterPort}`).join(",");

  const launch = (node: NatsNode): void => {
    const args = ["-a", "127.0.0.1", "-p", String(node.port), "-m", String(node.monitorPort), "-n", node.name];
    if (jetstream) args.push("-js", "-sd", node.storeDir);
    if (size > 1)
      args.push("--cluster_name", clusterName, "--cluster", `nats://127.0.0.1:${node.clusterPort}`, "--routes", routes);
    if (size > 1 && options.noAdvertise) args.push("--no_advertise");
    const proc = spawn(NATS_SERVER, args, { stdio: ["ignore", "ignore", "pipe"] });
    killAtExit(proc);
    node.log = "";
    proc.stderr!.setEncoding("utf8").on("data", (d: string) => {
      // Keep the tail only: a long run logs a lot, and only the last lines explain a failure.
      node.log = (node.log + d).slice(-20_000);
    });
    node.proc = proc;
  };

  const terminate = async (node: NatsNode, signal: NodeJS.Signals): Promise<void> => {
    const proc = node.proc;
    node.proc = undefined;
    if (!proc || proc.exitCode !== null || proc.signalCode !== null) return;
    const gone = once(proc, "exit");
    proc.kill(signal);
    const t = signal === "SIGKILL" ? undefined : setTimeout(() => proc.kill("SIGKILL"), 5_000);
    await gone;
    if (t) clearTimeout(t);
  };

  const healthy = async (node: NatsNode): Promise<boolean> => {
    if (!node.proc || node.proc.exitCode !== null) throw new Error(`nats-server ${node.name} exited:\n${node.log}`);
    try {
      const res = await fetch(`http://127.0.0.1:${node.monitorPort}/healthz`, { signal: AbortSignal.timeout(1_000) });
      await res.arrayBuffer();
      if (res.status !== 200) return false;
      if (!jetstream || size === 1) return true;
      // /healthz is fine before JetStream's meta group has a leader; replicated streams need one.
      const jsz = await fetch(`http://127.0.0.1:${node.monitorPort}/jsz`, { signal: AbortSignal.timeout(1_000) });
      const info = (await jsz.json()) as { meta_cluster?: { leader?: string; cluster_size?: number } };
      return Boolean(info.meta_cluster?.leader) && (info.meta_cluster?.cluster_size ?? 0) >= size;
    } catch {
      return false;
    }
  };

  const waitReady = async (timeoutMs = options.readyTimeoutMs ?? 20_000): Promise<void> => {
    const deadline = Date.now() + timeoutMs;
    for (const node of nodes) {
      if (!node.proc) continue;
      while (!(await healthy(node))) {
        if (Date.now() > deadline)
          throw new Error(`nats-server ${node.name} not ready within ${timeoutMs} ms:\n${node.log}`);
        await new Promise((r) => setTimeout(r, 100));
      }
    }
  };

  let stopped = false;
  const cluster: NatsCluster = {
    nodes,
    urls: nodes.map((n) => n.url),
    kill9: (i) => terminate(nodeAt(nodes, i), "SIGKILL"),
    stopNode: (i) => terminate(nodeAt(nodes, i), "SIGTERM"),
    async restart(i, opts = {}) {
      const node = nodeAt(nodes, i);
      if (node.proc) await terminate(node, "SIGTERM");
      launch(node);
      if (opts.wait !== false) await waitReady();
    },
    waitReady,
    async stop() {
      if (stopped) return;
      stopped = true;
      await Promise.all(nodes.map((n) => terminate(n, "SIGTERM")));
      rmSync(dir, { recursive: true, force: true });
    },
  };
  try {
    for (const n of nodes) launch(n);
    await waitReady();
  } catch (err) {
    await cluster.stop();
    throw err;
  }
  return cluster;
}

function nodeAt(nodes: readonly NatsNode[], i: number): NatsNode {
  const node = nodes[i];
  if (!node) throw new Error(`no nats node ${i} (the cluster has ${nodes.length})`);
  return node;
}
