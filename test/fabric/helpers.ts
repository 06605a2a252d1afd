/** Small helpers shared by the fabric end-to-end tests. */
import { getJson, http, type HttpResult } from "../support/http.js";
import { eventually } from "../support/wait.js";

export { startRouters } from "../support/zest-process.js";

/** The fabric status a router shows in `@/router/local`. */
export interface FabricView {
  kind: string;
  connected: boolean;
  detail: { routers: string[]; samplesReceived: number; samplesSent: number; [k: string]: unknown };
}

/** Reads `@/router/local` and returns its fabric status and sessions. */
export async function routerStatus(
  url: string,
): Promise<{ zid: string; fabric: FabricView; sessions: Array<Record<string, unknown>> }> {
  const { entries } = await getJson(url, "/@/router/local");
  const v = entries[0]?.value as
    | { zid: string; fabric: FabricView; sessions: Array<Record<string, unknown>> }
    | undefined;
  if (!v) throw new Error(`no router status at ${url}`);
  return v;
}

/** Waits until each router at `urls` counts `others` other routers in its fabric status. */
export async function untilRoutersMeet(
  urls: readonly string[],
  others: number,
  timeoutMs = 5_000,
  what = "routers to meet",
): Promise<void> {
  for (const url of urls)
    await eventually(async () => (await routerStatus(url)).fabric.detail.routers.length === others, timeoutMs, what);
}

/** PUT a text/plain value. */
export function putText(url: string, key: string, value: string): Promise<HttpResult> {
  return http(url, "PUT", `/${key}`, { body: value, headers: { "content-type": "text/plain" } });
}

/** GET `key` and return the entries as `{key: value}` plus the status and error entries. */
export async function getValues(
  url: string,
  selector: string,
): Promise<{ status: number; values: Record<string, unknown>; errors: string[] }> {
  const { status, entries } = await getJson(url, `/${selector}`);
  const values: Record<string, unknown> = {};
  const errors: string[] = [];
  for (const e of entries) {
    if (e.key === "ERROR") errors.push(String(e.value));
    else values[e.key as string] = e.value;
  }
  return { status, values, errors };
}

/** `--cfg` for a memory storage. */
export function memoryStorage(name: string, keyExpr: string): string[] {
  return ["--cfg", `plugins/storage_manager/storages/${name}:{key_expr:"${keyExpr}",volume:"memory"}`];
}

/** `--cfg` that leaves a router without any storage (not even the default one on `**`). */
export const NO_STORAGES = ["--cfg", "plugins/storage_manager:{storages:{}}"];

/**
 * `--cfg` for short fabric timings (instead of 1 s heartbeats, 4 s peer timeout, 5 s ack
 * timeout), so tests that wait for a router to be forgotten wait `peerTimeoutMs`, not 4 s.
 */
export function fabricTimings(t: { heartbeatMs: number; peerTimeoutMs: number; ackTimeoutMs: number }): string[] {
  return [
    "--cfg",
    `fabric/nats/heartbeat_ms:${t.heartbeatMs}`,
    "--cfg",
    `fabric/nats/peer_timeout_ms:${t.peerTimeoutMs}`,
    "--cfg",
    `fabric/nats/ack_timeout_ms:${t.ackTimeoutMs}`,
  ];
}

/** Resolves after `ms` milliseconds. */
export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
