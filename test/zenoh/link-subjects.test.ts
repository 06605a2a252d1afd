/**
 * Access-control subjects for links (docs/security.md): `zids` (a zenoh session's id),
 * `link_protocols` (`tcp` for the zenoh door, `ws` for the remote API, none for REST) and
 * `interfaces` (the local interface a connection arrived on, on every door), each through the
 * real doors of one router: the raw zenoh client, the zenoh-ts client and HTTP.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import type { Session as ZSession } from "@eclipse-zenoh/zenoh-ts";
import { AccessControl } from "../../src/access/access.js";
import { normalizeZid } from "../../src/access/policy.js";
import type { Sample } from "../../src/core/sample.js";
import type { Zest } from "../../src/runtime.js";
import { encodePush } from "../../src/zenoh/codec/network.js";
import { openClient, roundTrip, startRemoteRouter } from "../remote/helpers.js";
import { RawClient, wirePut } from "./raw-client.js";
import { eventually } from "../support/wait.js";

const rule = (id: string, key: string) => ({ id, messages: ["put"], key_exprs: [`${key}/**`], permission: "allow" });
const ACCESS = {
  enabled: true,
  default_permission: "deny",
  rules: [rule("dev", "dev"), rule("web", "web"), rule("sensor", "sensor"), rule("lo", "lo"), rule("eth", "eth")],
  subjects: [
    { id: "zenoh links", link_protocols: ["tcp"] },
    { id: "remote api", link_protocols: ["ws"] },
    { id: "one device", zids: ["00c0ffee"] },
    { id: "loopback interface", interfaces: ["lo"] },
    { id: "no such interface", interfaces: ["zest-none0"] },
  ],
  policies: [
    { rules: ["dev"], subjects: ["zenoh links"] },
    { rules: ["web"], subjects: ["remote api"] },
    { rules: ["sensor"], subjects: ["one device"] },
    { rules: ["lo"], subjects: ["loopback interface"] },
    { rules: ["eth"], subjects: ["no such interface"] },
  ],
};
const PREFIXES = ["dev", "web", "sensor", "lo", "eth"];

let zest: Zest & { locator: string };
let port: number;
const written: string[] = [];
const opened: Array<{ close(): unknown }> = [];

before(async () => {
  zest = await startRemoteRouter({
    access_control: ACCESS,
    listen: { endpoints: ["tcp/127.0.0.1:0"] },
    scouting: { multicast: { enabled: false } },
  } as never);
  port = Number(zest.zenohLocators[0]!.split(":").pop());
  zest.session.declareSubscriber("**", (s: Sample) => void written.push(s.key));
});
after(async () => {
  for (const o of opened.reverse()) await o.close();
  await zest?.close();
});

/** Which of `keys` reached the router's subscriber, once `last` (always allowed) did. */
async function arrived(keys: string[], last: string): Promise<string[]> {
  await eventually(() => written.includes(last), 3000, last);
  return keys.filter((k) => written.includes(k));
}

const put = (payload: string) => wirePut(payload);

describe("link subjects through the doors", () => {
  test("a zenoh session over TCP matches link_protocols tcp, its zid, and the interface it came in on", async () => {
    const c = await RawClient.open(port, { zid: "C0FFEE" });
    opened.push(c);
    const keys = PREFIXES.map((p) => `${p}/zenoh-a`);
    c.sendFrame(
      ...keys.map(
        (k) => (w: Parameters<typeof encodePush>[0]) =>
          encodePush(w, { scope: 0, suffix: k, senderMapping: false }, put("x")),
      ),
    );
    assert.deepEqual(await arrived(keys, "lo/zenoh-a"), ["dev/zenoh-a", "sensor/zenoh-a", "lo/zenoh-a"]);
  });

  test("another zid does not match the zids subject", async () => {
    const c = await RawClient.open(port, { zid: "BEEF" });
    opened.push(c);
    const keys = ["sensor/zenoh-b", "dev/zenoh-b"];
    c.sendFrame(
      ...keys.map(
        (k) => (w: Parameters<typeof encodePush>[0]) =>
          encodePush(w, { scope: 0, suffix: k, senderMapping: false }, put("x")),
      ),
    );
    assert.deepEqual(await arrived(keys, "dev/zenoh-b"), ["dev/zenoh-b"]);
  });

  test("a zenoh-ts session matches link_protocols ws, never tcp or zids", async () => {
    const s: ZSession = await openClient(zest.locator);
    opened.push(s);
    const keys = PREFIXES.map((p) => `${p}/ts`);
    for (const k of keys) await s.put(k, "x");
    await roundTrip(s);
    assert.deepEqual(await arrived(keys, "lo/ts"), ["web/ts", "lo/ts"]);
  });

  test("a REST client matches no link protocol: only its interface counts", async () => {
    const statuses = new Map<string, number>();
    for (const p of PREFIXES) {
      const res = await fetch(`${zest.restUrl}/${p}/rest`, { method: "PUT", body: "x" });
      statuses.set(p, res.status);
      await res.arrayBuffer();
    }
    assert.deepEqual(Object.fromEntries(statuses), { dev: 403, web: 403, sensor: 403, lo: 200, eth: 403 });
  });
});

describe("link subjects in the config", () => {
  test("zids are compared as zenoh prints them: lowercase, no leading zeros", () => {
    assert.equal(normalizeZid("00C0FFEE"), "c0ffee");
    assert.equal(normalizeZid("0"), "0");
  });

  test("an unknown link protocol, a zid that is not hex and an empty list are refused", () => {
    const section = (subject: Record<string, unknown>) => ({
      enabled: true,
      subjects: [{ id: "s", ...subject }],
    });
    assert.throws(() => AccessControl.fromConfig(section({ link_protocols: ["http"] })), /link_protocols/);
    assert.throws(() => AccessControl.fromConfig(section({ zids: ["xyz"] })), /a zid is 1 to 32 hex digits/);
    assert.throws(() => AccessControl.fromConfig(section({ zids: ["a".repeat(33)] })), /a zid is 1 to 32 hex digits/);
    assert.throws(() => AccessControl.fromConfig(section({ interfaces: [] })), /interfaces/);
    assert.throws(() => AccessControl.fromConfig(section({ cert_common_names: ["x"] })), /cert_common_names/);
  });
});
