/** Helpers of the remote API tests: an in-process router with the remote API, and zenoh-ts sessions on it. */
import { Config, open, type Reply, ReplyError, type Sample, type Session as ZSession } from "@eclipse-zenoh/zenoh-ts";
import { silentLogger } from "../../src/core/log.js";
import { startZest, type Zest } from "../../src/runtime.js";
import type { ZestConfig } from "../../src/config/config.js";

/** Starts a router with REST and the remote API on free loopback ports (memory storage on `**` unless told). */
export async function startRemoteRouter(config: ZestConfig = {}): Promise<Zest & { locator: string }> {
  const plugins = config.plugins ?? {};
  const z = await startZest(
    { ...config, plugins: { ...plugins, rest: { http_port: "127.0.0.1:0", ...plugins.rest }, remote_api: { websocket_port: 0, ...(plugins.remote_api as object | undefined) } } },
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
  return s.kind() === 1 ? `delete:${s.keyexpr().toString()}` : `put:${s.keyexpr().toString()}=${s.payload().toString()}`;
}

/** Reads every reply of a get until its final. */
export async function collect(receiver: AsyncIterable<Reply> | undefined): Promise<string[]> {
  const out: string[] = [];
  if (!receiver) return out;
  for await (const r of receiver) out.push(showReply(r));
  return out;
}

/** Waits until `check()` holds (polling every 10 ms), at most `ms`. */
export async function until(check: () => boolean, ms = 3000, what = "condition"): Promise<void> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** A settled round trip: a ping through `session` after everything sent before it was handled. */
export async function roundTrip(session: ZSession): Promise<void> {
  await session.newTimestamp();
}
