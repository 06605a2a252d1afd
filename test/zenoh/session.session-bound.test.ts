/**
 * Session-bound values on the zenoh door (docs/ttl-and-leases.md), with the raw client: the
 * `zest:` attachment (the remote API's convention, parsed by the same function) and the router's
 * `session_bound.key_exprs`; the values are deleted when the session closes or its lease expires.
 */
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { after, before, describe, test } from "node:test";
import { silentLogger } from "../../src/core/log.js";
import type { Sample } from "../../src/core/sample.js";
import { startZest, type Zest } from "../../src/runtime.js";
import { SessionBoundKeys } from "../../src/core/session-bound.js";
import { encodePush } from "../../src/zenoh/codec/network.js";
import { RawClient } from "./raw-client.js";
import { eventually } from "../support/wait.js";

let zest: Zest;
let port: number;
const seen: Sample[] = [];
const opened: Array<{ close(): unknown }> = [];

before(async () => {
  zest = await startZest(
    {
      plugins: { rest: { http_port: "none" } },
      listen: { endpoints: ["tcp/127.0.0.1:0"] },
      scouting: { multicast: { enabled: false } },
      session_bound: { key_exprs: ["presence/**"] },
      transport: { link: { tx: { lease: 1000 } } },
    } as never,
    { logger: silentLogger },
  );
  port = Number(zest.zenohLocators[0]!.split(":").pop());
  zest.session.declareSubscriber("**", (s) => void seen.push(s));
});
after(async () => {
  for (const o of opened.reverse()) await o.close();
  await zest?.close();
});

const events = (key: string): string[] => seen.filter((s) => s.key === key).map((s) => s.kind);
async function stored(key: string): Promise<string[]> {
  const out: string[] = [];
  for (const r of await zest.session.get(key)) if (r.kind === "ok") out.push(r.sample.payload.toString());
  return out;
}

function pushWith(c: RawClient, key: string, attachment?: string): void {
  c.sendFrame((w) =>
    encodePush(
      w,
      { scope: 0, suffix: key, senderMapping: false },
      {
        kind: "put",
        encoding: "",
        hasEncoding: false,
        payload: Buffer.from("v"),
        ...(attachment === undefined ? {} : { attachment: Buffer.from(attachment) }),
      },
    ),
  );
}

describe("session-bound values through the zenoh door", () => {
  test("a put with the zest:session attachment is deleted when its session closes, and its attachment is not handed on", async () => {
    const c = await RawClient.open(port);
    opened.push(c);
    pushWith(c, "att/a", "zest:session");
    pushWith(c, "att/kept", "user data");
    await eventually(() => events("att/kept").length === 1, 5000, "att/kept");
    assert.deepEqual(events("att/a"), ["put"]);
    assert.equal(seen.find((s) => s.key === "att/a")!.attachment, undefined);
    assert.equal(seen.find((s) => s.key === "att/kept")!.attachment?.toString(), "user data");
    c.close();
    await eventually(() => events("att/a").length === 2, 5000, "the DELETE");
    assert.deepEqual(events("att/a"), ["put", "delete"]);
    assert.deepEqual(await stored("att/a"), []);
    assert.deepEqual(await stored("att/kept"), ["v"], "a put without zest: outlives its session");
  });

  test("a malformed zest: attachment refuses the put, as on the remote API", async () => {
    const c = await RawClient.open(port);
    opened.push(c);
    pushWith(c, "att/bad", "zest:forever");
    pushWith(c, "att/bad-ttl", "zest:ttl=10");
    pushWith(c, "att/long", `zest:lease=${"x".repeat(300)}`);
    pushWith(c, "att/after-bad", "zest:ttl=1h");
    await eventually(() => events("att/after-bad").length === 1, 5000, "att/after-bad");
    assert.deepEqual(events("att/bad"), []);
    assert.deepEqual(events("att/bad-ttl"), []);
    assert.deepEqual(events("att/long"), []);
    assert.ok(seen.find((s) => s.key === "att/after-bad")!.deadline! > Date.now(), "zest:ttl gives a deadline");
    c.close();
  });

  test("session_bound.key_exprs binds puts on the keys they include, and keeps their attachment", async () => {
    const c = await RawClient.open(port);
    opened.push(c);
    pushWith(c, "presence/dev1", "mine");
    pushWith(c, "elsewhere/dev1");
    await eventually(() => events("elsewhere/dev1").length === 1, 5000, "elsewhere/dev1");
    assert.equal(seen.find((s) => s.key === "presence/dev1")!.attachment?.toString(), "mine");
    c.close();
    await eventually(() => events("presence/dev1").length === 2, 5000, "the DELETE");
    assert.deepEqual(await stored("presence/dev1"), []);
    assert.deepEqual(await stored("elsewhere/dev1"), ["v"]);
  });

  test("a session that falls silent loses its bound values when the lease it announced expires", async () => {
    const c = await RawClient.open(port, { leaseMs: 1000 });
    opened.push(c);
    pushWith(c, "presence/silent");
    await eventually(() => events("presence/silent").length === 1, 5000, "the PUT");
    // The raw client sends no KEEP_ALIVE: silent from now on, its socket still open.
    const start = Date.now();
    await eventually(() => events("presence/silent").length === 2, 5000, "the DELETE at lease expiry");
    assert.ok(Date.now() - start >= 500, "not before the lease");
    // The DELETE is seen in-process; the CLOSE still has a socket to cross.
    await eventually(
      () => c.transport.some((t) => t.kind === "close" && t.reason === 0x05),
      5000,
      "closed with CLOSE EXPIRED",
    );
  });
});

describe("session_bound config", () => {
  test("it includes plain keys only, and refuses a bad key expression naming it", () => {
    const keys = new SessionBoundKeys(["presence/**", "devices/*/status"]);
    assert.equal(keys.bound("presence/a/b"), true);
    assert.equal(keys.bound("devices/x/status"), true);
    assert.equal(keys.bound("devices/x/other"), false);
    assert.equal(keys.bound("presence/*"), false, "a wildcard put is never bound");
    assert.throws(() => new SessionBoundKeys(["a//b"]), /session_bound.key_exprs: "a\/\/b"/);
  });

  test("the section is closed and bounded", async () => {
    const start = (section: unknown) =>
      startZest(
        { plugins: { rest: { http_port: "none" } }, listen: { endpoints: [] }, ...(section as object) } as never,
        {
          logger: silentLogger,
        },
      );
    await assert.rejects(start({ session_bound: { keys: ["a"] } }), /session_bound/);
    await assert.rejects(start({ session_bound: { key_exprs: Array(1025).fill("a") } }), /session_bound/);
    await assert.rejects(start({ transport: { link: { tx: { lease: 10 } } } }), /lease/);
    await assert.rejects(start({ transport: { auth: { usrpwd: { user: "me" } } } }), /user and password go together/);
  });
});
