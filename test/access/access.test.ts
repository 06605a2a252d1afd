import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { AccessControl, type Principal } from "../../src/access/access.js";
import { hashSecret } from "../../src/access/hash.js";
import { protectedBind } from "../../src/access/listen.js";
import { ZestError } from "../../src/core/errors.js";

const basic = (user: string, password: string): string =>
  `Basic ${Buffer.from(`${user}:${password}`).toString("base64")}`;
const h = (s: string): string => hashSecret(s, { ln: 6 });

function make(section: Record<string, unknown>): AccessControl {
  return AccessControl.fromConfig({ enabled: true, ...section });
}

async function principal(
  ac: AccessControl,
  authorization: string | undefined,
  address = "10.0.0.1",
): Promise<Principal> {
  return await ac.authenticate({ authorization, address });
}

describe("access decisions", () => {
  const ac = make({
    default_permission: "deny",
    rules: [
      { id: "demo", messages: ["query", "put"], key_exprs: ["demo/**"], permission: "allow" },
      { id: "secret", messages: ["query", "put"], key_exprs: ["demo/secret/**"], permission: "deny" },
      { id: "admin", messages: ["query"], key_exprs: ["@/**"], permission: "allow" },
    ],
    subjects: [
      { id: "u", usernames: ["u"] },
      { id: "lan", cidrs: ["192.168.0.0/16"] },
    ],
    policies: [
      { rules: ["demo", "secret"], subjects: ["u"] },
      { rules: ["admin"], subjects: ["lan"] },
    ],
    users: [{ name: "u", password_hash: h("pw") }],
  });

  test("plain keys: allow inside an allow rule, deny under a deny rule or outside every rule", async () => {
    const p = await principal(ac, basic("u", "pw"));
    assert.equal(ac.decide(p, "put", "demo/a"), "allow");
    assert.equal(ac.decide(p, "put", "demo/secret/a"), "deny");
    assert.equal(ac.decide(p, "put", "other/a"), "deny");
    assert.equal(ac.decide(p, "delete", "demo/a"), "deny", "no rule for delete: the default applies");
  });

  test("wildcards: partial when some matching keys are allowed and some not", async () => {
    const p = await principal(ac, basic("u", "pw"));
    assert.equal(ac.decide(p, "query", "**"), "partial");
    assert.equal(ac.decide(p, "query", "demo/**"), "partial", "demo/secret/** is denied inside it");
    assert.equal(ac.decide(p, "query", "demo/public/*"), "allow");
    assert.equal(ac.decide(p, "query", "demo/secret/**"), "deny");
    assert.equal(ac.decide(p, "query", "other/**"), "deny");
    assert.equal(ac.mayRead(p, "query", "demo/x"), true);
    assert.equal(ac.mayRead(p, "query", "demo/secret/x"), false);
  });

  test("** never reaches the admin space: it needs rules on @/**", async () => {
    const p = await principal(ac, basic("u", "pw"));
    assert.equal(ac.decide(p, "query", "@/router/AB"), "deny");
    const lan = await principal(ac, undefined, "::ffff:192.168.1.9");
    assert.equal(lan.address, "192.168.1.9");
    assert.equal(ac.decide(lan, "query", "@/router/AB"), "allow");
    assert.equal(ac.decide(await principal(ac, undefined, "10.1.1.1"), "query", "@/router/AB"), "deny");
  });

  test("default allow: deny rules carve out, wildcards touching them are partial", () => {
    const open = make({
      default_permission: "allow",
      rules: [{ id: "d", messages: ["put"], key_exprs: ["locked/**"], permission: "deny" }],
      subjects: [{ id: "all" }],
      policies: [{ rules: ["d"], subjects: ["all"] }],
    });
    const p = open.authenticate({ address: "127.0.0.1" }) as Principal;
    assert.equal(open.decide(p, "put", "x/y"), "allow");
    assert.equal(open.decide(p, "put", "locked/y"), "deny");
    assert.equal(open.decide(p, "put", "**"), "partial");
    assert.equal(open.decide(p, "query", "locked/y"), "allow");
  });

  test("a refusal asks an anonymous client for credentials and tells a user it is forbidden", async () => {
    const anon = await principal(ac, undefined);
    assert.equal(ac.refusal(anon, "read x").kind, "unauthenticated");
    assert.equal(ac.refusal(await principal(ac, basic("u", "pw")), "read x").kind, "forbidden");
  });

  test("OPEN (no access_control, or enabled: false) allows everything", () => {
    for (const off of [AccessControl.fromConfig(undefined), AccessControl.fromConfig({ enabled: false, rules: [] })]) {
      assert.equal(off.enabled, false);
      const p = off.authenticate({ authorization: "Basic garbage", address: "1.2.3.4" }) as Principal;
      assert.equal(off.decide(p, "delete", "**"), "allow");
    }
  });
});

describe("authentication", () => {
  const ac = make({
    users: [{ name: "u", password_hash: h("pw") }],
    tokens: [{ id: "t1", user: "u", token_hash: h("t1.secret") }],
  });

  test("a verified credential is answered synchronously afterwards", async () => {
    const first = ac.authenticate({ authorization: basic("u", "pw"), address: "10.0.0.2" });
    assert.ok(first instanceof Promise);
    assert.equal((await first).user, "u");
    const again = ac.authenticate({ authorization: basic("u", "pw"), address: "10.0.0.2" });
    assert.ok(!(again instanceof Promise));
    assert.equal((again as Principal).user, "u");
    assert.equal((await principal(ac, "Bearer t1.secret")).user, "u");
  });

  test("knownPrincipal answers only from what is already verified, and never counts a failure", async () => {
    const ac2 = make({ users: [{ name: "k", password_hash: h("pw") }] });
    assert.equal(ac2.knownPrincipal({ authorization: basic("k", "pw"), address: "10.0.0.3" }), undefined);
    await principal(ac2, basic("k", "pw"), "10.0.0.3");
    assert.equal(ac2.knownPrincipal({ authorization: basic("k", "pw"), address: "10.0.0.3" })?.user, "k");
    assert.equal(ac2.knownPrincipal({ address: "10.0.0.3" })?.user, undefined);
    await assert.rejects(
      Promise.resolve().then(() => ac2.authenticate({ authorization: basic("k", "bad"), address: "10.0.0.4" })),
    );
    for (let i = 0; i < 50; i++)
      assert.equal(ac2.knownPrincipal({ authorization: basic("k", "bad"), address: "10.0.0.4" }), undefined);
    // 50 fast-path peeks did not use up the address's budget: the right password still works.
    assert.equal((await principal(ac2, basic("k", "pw"), "10.0.0.4")).user, "k");
  });

  test("failures are unauthenticated, and an address that keeps failing is refused without a check", async () => {
    const addr = "10.9.9.9";
    for (let i = 0; i < 20; i++) {
      await assert.rejects(
        Promise.resolve().then(() => ac.authenticate({ authorization: basic("u", `wrong${i}`), address: addr })),
        (e: unknown) => e instanceof ZestError && e.kind === "unauthenticated",
      );
    }
    // Even the right password is refused now, at once.
    assert.throws(
      () => ac.authenticate({ authorization: basic("u", "pw-not-cached"), address: addr }),
      /too many failed logins/,
    );
    // Another address is unaffected.
    assert.equal((await principal(ac, basic("u", "pw"), "10.9.9.8")).user, "u");
  });
});

describe("protected mode", () => {
  test("no interface and no access control binds loopback and says which flag opens it; an open interface warns", () => {
    const lines: string[] = [];
    const logger = { warn: (_o: unknown, msg: string) => lines.push(msg) } as unknown as Parameters<
      typeof protectedBind
    >[3];
    const door = { title: "REST gateway", openHint: "--rest-http-port 0.0.0.0:8000" };
    const off = AccessControl.OPEN.enabled;
    assert.equal(protectedBind(door, { port: 8000 }, off, logger), "127.0.0.1");
    assert.match(lines[0]!, /protected mode.*REST gateway.*--rest-http-port 0\.0\.0\.0:8000/);
    assert.equal(protectedBind(door, { host: "0.0.0.0", port: 8000 }, off, logger), "0.0.0.0");
    assert.match(lines[1]!, /listens on 0\.0\.0\.0 without access control/);
    assert.equal(protectedBind(door, { host: "127.0.0.1", port: 8000 }, off, logger), "127.0.0.1");
    assert.equal(lines.length, 2);
    const on = make({ default_permission: "allow" });
    assert.equal(protectedBind(door, { port: 8000 }, on.enabled, logger), undefined);
    assert.equal(lines.length, 2);
  });
});
