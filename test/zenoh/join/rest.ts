/**
 * What the tests of zest joining a zenoh network read over REST: a GET's entries, and the zenoh
 * door's `connect` status in the admin space (docs/zenoh-network.md, "Reconnecting").
 */
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { http as httpAt } from "../../support/http.js";

/** One request to `url` (a whole URL), with a text body when given. */
export function http(method: string, url: string, body?: string, headers: Record<string, string> = {}) {
  const u = new URL(url);
  return httpAt(u.origin, method, u.pathname + u.search, body === undefined ? { headers } : { body, headers });
}

/** A REST GET's entries, as `key=value` (the value decoded as zest renders text). */
export async function restEntries(url: string): Promise<string[]> {
  const r = await http("GET", url);
  assert.equal(r.status, 200, r.text);
  const entries = JSON.parse(r.text) as Array<{ key: string; value: unknown }>;
  return entries.map(
    (e) =>
      `${e.key}=${typeof e.value === "string" ? Buffer.from(e.value, "base64").toString() : JSON.stringify(e.value)}`,
  );
}

/** The zenoh door's `connect` status in the admin space of the zest at `url`. */
export async function connectStatus(url: string): Promise<Record<string, unknown>> {
  const r = await http("GET", `${url}/@/router/local/status/plugins/zenoh/status`);
  const [entry] = JSON.parse(r.text) as Array<{ value: { connect: Record<string, unknown> } }>;
  assert.ok(entry, r.text);
  return entry.value.connect;
}
