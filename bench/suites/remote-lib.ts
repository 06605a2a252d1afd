/** Shared by the remote-API benchmarks: a zest child with the remote API, and the zenoh-ts worker. */
import net from "node:net";
import { runWorker, spawnZest, type ServerProcess } from "../lib/proc.js";

/** Node flags the zenoh-ts client needs on Node 20. */
export const ZENOH_TS_FLAGS = [
  "--experimental-wasm-modules",
  "--experimental-websocket",
  "--disable-warning=ExperimentalWarning",
];

async function freePort(): Promise<number> {
  const srv = net.createServer();
  await new Promise<void>((r) => srv.listen(0, "127.0.0.1", () => r()));
  const port = (srv.address() as net.AddressInfo).port;
  await new Promise<void>((r) => srv.close(() => r()));
  return port;
}

/** Starts the built zest with REST and the remote API on loopback; `locator` is zenoh-ts's `ws/host:port`. */
export async function spawnRemoteZest(
  label: string,
  extraArgs: string[] = [],
): Promise<{ zest: ServerProcess; locator: string; wsUrl: string }> {
  const port = await freePort();
  const zest = await spawnZest(label, ["--remote-api-port", `127.0.0.1:${port}`, ...extraArgs]);
  return { zest, locator: `ws/127.0.0.1:${port}`, wsUrl: `ws://127.0.0.1:${port}` };
}

/**
 * Runs bench/workers/remote-client.mjs (zenoh-ts clients) with `args` against `zest` (whose CPU
 * is part of the measurement, not interference); resolves with its figures.
 */
export function runZenohTs<T extends { cpuSeconds: number }>(
  zest: ServerProcess,
  args: string[],
): Promise<{ out: T; otherCpuPct: number; stealPct: number }> {
  return runWorker<T>("remote-client.mjs", ZENOH_TS_FLAGS, args, { measuredPids: [zest.pid] });
}
