import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { killAtExit } from "./child-processes.js";
import { freePort } from "./ports.js";

/** A throwaway `influxd` for one test file. */
export interface InfluxdHandle {
  /** `http://127.0.0.1:<port>` */
  readonly url: string;
  /** Stops the server (SIGTERM, then SIGKILL) and removes its files. */
  stop(): Promise<void>;
}

const START_TIMEOUT_MS = 20_000;

/** True when `influxd` is on PATH. */
export function influxdAvailable(): boolean {
  return spawnSync("influxd", ["version"], { stdio: "ignore" }).status === 0;
}

/**
 * How a test file should treat a missing `influxd`: undefined when it is there; otherwise a skip
 * message, except on CI (`CI=true`) where a missing server must fail the run, not hide it.
 */
export function influxdSkipReason(): string | undefined {
  if (influxdAvailable()) return undefined;
  if (process.env.CI === "true")
    throw new Error("influxd is not on PATH, and CI=true: InfluxDB tests cannot be skipped on CI");
  return "influxd is not on PATH (install InfluxDB 1.x to run these tests)";
}

/**
 * Starts `influxd` on free loopback ports with its data in a fresh temp dir, and waits until
 * `/ping` answers 204. Every other listener (RPC excepted, which is bound to its own free port)
 * is disabled so parallel runs never clash. `httpPort` chooses the HTTP port (to bring a server
 * back where a router expects it).
 */
export async function startInfluxd(options: { httpPort?: number } = {}): Promise<InfluxdHandle> {
  const dir = mkdtempSync(join(tmpdir(), "zest-influxd-"));
  const httpPort = options.httpPort ?? (await freePort());
  const rpcPort = await freePort();
  const config = `
reporting-disabled = true
bind-address = "127.0.0.1:${rpcPort}"

[meta]
  dir = "${join(dir, "meta")}"
  logging-enabled = false

[data]
  dir = "${join(dir, "data")}"
  wal-dir = "${join(dir, "wal")}"
  query-log-enabled = false

[monitor]
  store-enabled = false

[retention]
  enabled = false

[continuous_queries]
  enabled = false

[subscriber]
  enabled = false

[http]
  enabled = true
  bind-address = "127.0.0.1:${httpPort}"
  auth-enabled = false
  log-enabled = false
  pprof-enabled = false

[logging]
  level = "error"

[[graphite]]
  enabled = false

[[collectd]]
  enabled = false

[[opentsdb]]
  enabled = false

[[udp]]
  enabled = false
`;
  const configPath = join(dir, "influxdb.conf");
  writeFileSync(configPath, config);
  const child = spawn("influxd", ["-config", configPath], { stdio: ["ignore", "ignore", "pipe"] });
  killAtExit(child);
  let stderr = "";
  child.stderr?.setEncoding("utf8").on("data", (chunk: string) => {
    stderr = (stderr + chunk).slice(-4000);
  });
  let exited: string | undefined;
  child.on("exit", (code, signal) => {
    exited = `influxd exited (code ${code}, signal ${signal})`;
  });
  child.on("error", (err) => {
    exited = `influxd could not start: ${err.message}`;
  });
  const url = `http://127.0.0.1:${httpPort}`;
  const stop = async (): Promise<void> => {
    await kill(child);
    rmSync(dir, { recursive: true, force: true });
  };
  const deadline = Date.now() + START_TIMEOUT_MS;
  for (;;) {
    if (exited !== undefined) {
      await stop();
      throw new Error(`${exited} before answering /ping; stderr:\n${stderr}`);
    }
    try {
      const res = await fetch(`${url}/ping`, { signal: AbortSignal.timeout(1_000) });
      if (res.status === 204) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      await stop();
      throw new Error(`influxd did not answer ${url}/ping within ${START_TIMEOUT_MS / 1000} s; stderr:\n${stderr}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return { url, stop };
}

async function kill(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null || child.pid === undefined) return;
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  child.kill("SIGTERM");
  const timer = setTimeout(() => child.kill("SIGKILL"), 5_000);
  await exited;
  clearTimeout(timer);
}
