/**
 * zest routers for the join tests (docs/zenoh-network.md): in process, one that listens on a zenoh
 * endpoint and one joined to it as a zenoh client; as a process, one joined to zenoh's router;
 * and the wait for a join (what the REST door says is in ./rest.ts).
 */
import assert from "node:assert/strict";
import { after } from "node:test";
import type { Zest } from "../../../src/runtime.js";
import type { ZestConfig } from "../../../src/zest-config.js";
import { untilPasses } from "../../support/assert.js";
import { startRouter } from "../../support/router.js";
import { connectStatus } from "./rest.js";
import { startZest, type ZestProcess } from "../../support/zest-process.js";

export const NO_SCOUTING = { multicast: { enabled: false } };

/**
 * What a test file closes after its tests, last pushed first closed: make it once at the top
 * level of a file and push each router, proxy or fabric the tests start.
 */
export function closeAfterFile(): { push(c: { close(): unknown }): void } {
  const closing: Array<{ close(): unknown }> = [];
  after(async () => {
    for (const c of closing.reverse()) await c.close();
  });
  return closing;
}

/** A zest router with its zenoh door on `tcp/127.0.0.1:<port>`, no scouting, and `config`. */
export function zenohRouter(port: number, config: ZestConfig = {}): Promise<Zest & { url: string }> {
  return startRouter({ listen: { endpoints: [`tcp/127.0.0.1:${port}`] }, scouting: NO_SCOUTING, ...config });
}

/**
 * A zest router that listens on nothing and joins `endpoint` as a zenoh client, retrying every
 * 50 ms up to `retryMaxMs`, with `config`.
 */
export function joinedRouter(endpoint: string, config: ZestConfig = {}, retryMaxMs = 200) {
  return startRouter({
    listen: { endpoints: [] },
    connect: { endpoints: [endpoint], retry: { period_init_ms: 50, period_max_ms: retryMaxMs } },
    ...config,
  });
}

/** Waits until the router at `url` has joined (its connect state is `open`). */
export async function untilJoined(url: string, timeoutMs?: number): Promise<void> {
  await untilPasses(async () => assert.equal((await connectStatus(url)).state, "open"), timeoutMs);
}

/**
 * zest as a process joined to `endpoint` (zenoh's router, in the netns tests), listening on a
 * free loopback port, no scouting, with `extraArgs`.
 */
export function startJoinedZest(endpoint: string, extraArgs: string[] = []): Promise<ZestProcess> {
  return startZest(["-e", endpoint, "-l", "tcp/127.0.0.1:0", "--no-multicast-scouting", ...extraArgs]);
}
