/**
 * zenoh's user/password authentication in the handshake (src/zenoh/auth-usrpwd.ts,
 * docs/zenoh-protocol.md "Credentials"), with the raw client sending credentials as zenoh-rust's
 * client does: the nonce of the INIT ack, the HMAC in the OPEN syn, CLOSE for a refusal.
 */
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import { AccessControl } from "../../src/access/access.js";
import { DecodeError } from "../../src/core/binary.js";
import type { Sample } from "../../src/core/sample.js";
import { MAX_DICTIONARY_BYTES, parseDictionary, UsrPwdAuth, usrPwdClient } from "../../src/zenoh/auth-usrpwd.js";
import { encodePush } from "../../src/zenoh/codec/network.js";
import { CloseReason, encodeInitSyn, encodeOpen } from "../../src/zenoh/codec/transport.js";
import { RawClient, wireKey, wirePut } from "./raw-client.js";
import { type TestZenohDoor, zenohDoor } from "../support/zenoh-door.js";
import { capturingLogger } from "../support/log.js";
import { rng } from "../support/rng.js";

const opened: Array<{ close(): unknown }> = [];
const dir = mkdtempSync(join(tmpdir(), "zest-usrpwd-"));
after(async () => {
  for (const o of opened.reverse()) await o.close();
  rmSync(dir, { recursive: true, force: true });
});

function dictionary(text: string): string {
  const path = join(dir, `dict-${Math.random().toString(36).slice(2)}.txt`);
  writeFileSync(path, text);
  return path;
}

async function door(
  users: string | undefined,
  access?: unknown,
): Promise<TestZenohDoor & { lines: Array<Record<string, unknown>> }> {
  const { logger, lines } = capturingLogger();
  const d = await zenohDoor(opened, {
    logger,
    access: access === undefined ? undefined : AccessControl.fromConfig(access),
    usrpwd: users === undefined ? undefined : UsrPwdAuth.fromFile(dictionary(users)),
  });
  return { ...d, lines };
}

const key = wireKey;
const put = (payload: string) => wirePut(payload);

/** alice may write alice/**, anonymous loopback clients may write public/**. */
const ALICE_AND_PUBLIC = {
  enabled: true,
  default_permission: "deny",
  rules: [
    { id: "alice", messages: ["put"], key_exprs: ["alice/**"], permission: "allow" },
    { id: "public", messages: ["put"], key_exprs: ["public/**"], permission: "allow" },
  ],
  subjects: [
    { id: "alice", usernames: ["alice"] },
    { id: "local", cidrs: ["127.0.0.0/8"] },
  ],
  policies: [
    { rules: ["alice"], subjects: ["alice"] },
    { rules: ["public"], subjects: ["local"] },
  ],
};
/** Only alice may do anything. */
const ALICE_ONLY = { ...ALICE_AND_PUBLIC, policies: [{ rules: ["alice"], subjects: ["alice"] }] };

async function refusedHandshake(port: number, opts: Parameters<RawClient["handshake"]>[0]): Promise<RawClient> {
  const c = await RawClient.connect(port);
  opened.push(c);
  await assert.rejects(c.handshake(opts));
  await c.waitClosed();
  const close = c.transport.find((t) => t.kind === "close");
  assert.ok(close?.kind === "close" && close.reason === CloseReason.GENERIC, "refused with CLOSE GENERIC");
  assert.ok(!c.transport.some((t) => t.kind === "open"), "no OPEN ack");
  return c;
}

describe("the usrpwd dictionary (zenohd's dictionary_file)", () => {
  test("user:password lines are read, trimmed, blank lines skipped", () => {
    const users = parseDictionary("alice:secret\n\n  bob : pass:word \r\n", "d");
    assert.deepEqual([...users.keys()], ["alice", "bob"]);
    assert.equal(users.get("bob")!.toString(), "pass:word");
  });
  test("malformed lines are refused naming the line, never the password", () => {
    for (const [text, reason] of [
      ["alice", /line 1: expected user:password/],
      ["\nalice:", /line 2: empty password/],
      [":pw", /line 1: empty user name/],
      ["a:1\na:2", /line 2: user "a" is listed twice/],
      [`${"u".repeat(257)}:pw`, /user name longer than 256 bytes/],
      [`u:${"p".repeat(1025)}`, /password longer than 1024 bytes/],
    ] as const) {
      assert.throws(
        () => parseDictionary(text, "d"),
        (err: Error) => reason.test(err.message) && !/pw\b/.test(err.message),
      );
    }
  });
  test("a missing, empty or oversized file stops the door with a one-line reason", () => {
    assert.throws(() => UsrPwdAuth.fromFile(join(dir, "none.txt")), /dictionary_file .*none\.txt: ENOENT/);
    assert.throws(() => UsrPwdAuth.fromFile(dictionary("\n\n")), /lists no user/);
    assert.throws(() => UsrPwdAuth.fromFile(dictionary("a".repeat(MAX_DICTIONARY_BYTES + 1))), /larger than/);
  });
});

describe("usrpwd in the handshake", () => {
  test("a session with the right password is that user for every access-control rule", async () => {
    const d = await door("alice:wonderland\n", ALICE_ONLY);
    const got: Sample[] = [];
    d.session.declareSubscriber("**", (s) => void got.push(s));
    const c = await RawClient.open(d.port, { credentials: { user: "alice", password: "wonderland" } });
    opened.push(c);
    const ack = c.transport.find((t) => t.kind === "open");
    assert.ok(ack?.kind === "open" && ack.msg.auth !== undefined, "the OPEN ack carries the usrpwd extension");
    c.sendFrame(
      (w) => encodePush(w, key("bob/a"), put("no")),
      (w) => encodePush(w, key("alice/a"), put("yes")),
    );
    await c.until(() => got.length > 0 || undefined);
    await new Promise((r) => setTimeout(r, 50));
    assert.deepEqual(
      got.map((s) => s.key),
      ["alice/a"],
    );
    assert.deepEqual(
      d.server.status().map((s) => s.user),
      ["alice"],
    );
  });

  test("a wrong password is refused in the handshake with CLOSE, one log line, and counted", async () => {
    const d = await door("alice:wonderland\n", ALICE_ONLY);
    await refusedHandshake(d.port, { credentials: { user: "alice", password: "looking-glass" } });
    assert.equal(d.server.authFailures, 1);
    assert.equal(d.server.refused, 1);
    const refusals = d.lines.filter((l) => l.msg === "zenoh handshake refused");
    assert.equal(refusals.length, 1);
    assert.match(String(refusals[0]!.reason), /wrong password for user "alice"/);
    assert.ok(!JSON.stringify(d.lines).includes("looking-glass"), "the password is never logged");
  });

  test("an unknown user is refused like a wrong password", async () => {
    const d = await door("alice:wonderland\n", ALICE_ONLY);
    await refusedHandshake(d.port, { credentials: { user: "mallory", password: "wonderland" } });
    assert.equal(d.server.authFailures, 1);
  });

  test("a client without credentials is refused at INIT when access control allows anonymous clients nothing", async () => {
    const d = await door("alice:wonderland\n", ALICE_ONLY);
    await refusedHandshake(d.port, {});
    assert.equal(d.server.authFailures, 1);
    assert.match(String(d.lines.find((l) => l.msg === "zenoh handshake refused")?.reason), /credentials required/);
  });

  test("without access control, usrpwd admits only the dictionary's users, as zenohd", async () => {
    const d = await door("alice:wonderland\n");
    await refusedHandshake(d.port, {});
    const c = await RawClient.open(d.port, { credentials: { user: "alice", password: "wonderland" } });
    opened.push(c);
    assert.equal(d.server.status().length, 1);
  });

  test("an anonymous client the rules give something to is admitted beside users", async () => {
    const d = await door("alice:wonderland\n", ALICE_AND_PUBLIC);
    const got: Sample[] = [];
    d.session.declareSubscriber("**", (s) => void got.push(s));
    const c = await RawClient.open(d.port);
    opened.push(c);
    c.sendFrame(
      (w) => encodePush(w, key("alice/a"), put("no")),
      (w) => encodePush(w, key("public/a"), put("yes")),
    );
    await c.until(() => got.length > 0 || undefined);
    await new Promise((r) => setTimeout(r, 50));
    assert.deepEqual(
      got.map((s) => s.key),
      ["public/a"],
    );
  });

  test("an OPEN whose HMAC answers another nonce is refused (no replay across handshakes)", async () => {
    const d = await door("alice:wonderland\n", ALICE_ONLY);
    const c = await RawClient.connect(d.port);
    opened.push(c);
    c.sendBatch((w) => encodeInitSyn(w, { whatami: "client", zid: "AB", patch: 1, auth: usrPwdClient.initSyn() }));
    const ack = await c.waitTransport((t) => t.kind === "init");
    assert.ok(ack.kind === "init" && ack.msg.auth);
    const otherNonce = new UsrPwdAuth(new Map()).initAck(12345n);
    const auth = usrPwdClient.openSyn(otherNonce, "alice", "wonderland");
    c.sendBatch((w) => encodeOpen(w, { ack: false, leaseMs: 10_000, initialSn: 0, cookie: ack.msg.cookie!, auth }));
    await c.waitClosed();
    assert.ok(!c.transport.some((t) => t.kind === "open"));
    assert.equal(d.server.authFailures, 1);
  });

  test("malformed credentials close that handshake, never the router", async () => {
    const d = await door("alice:wonderland\n", ALICE_ONLY);
    for (const garbage of [
      Buffer.of(0x42, 0x05, 1, 2),
      Buffer.of(0x42, 0x01, 0xff),
      Buffer.of(0x02),
      Buffer.alloc(0),
    ]) {
      const c = await RawClient.connect(d.port);
      opened.push(c);
      c.sendBatch((w) => encodeInitSyn(w, { whatami: "client", zid: "AB", patch: 1, auth: usrPwdClient.initSyn() }));
      const ack = await c.waitTransport((t) => t.kind === "init");
      assert.ok(ack.kind === "init");
      c.sendBatch((w) =>
        encodeOpen(w, { ack: false, leaseMs: 10_000, initialSn: 0, cookie: ack.msg.cookie!, auth: garbage }),
      );
      await c.waitClosed();
      assert.ok(!c.transport.some((t) => t.kind === "open"));
    }
    const ok = await RawClient.open(d.port, { credentials: { user: "alice", password: "wonderland" } });
    opened.push(ok);
  });

  test("twenty failures from one address within a minute stop the checks, right password included", async () => {
    const d = await door("alice:wonderland\n", ALICE_ONLY);
    for (let i = 0; i < 20; i++) {
      const c = await RawClient.connect(d.port);
      opened.push(c);
      await assert.rejects(c.handshake({ credentials: { user: "alice", password: `guess${i}` } }));
      c.close();
    }
    await refusedHandshake(d.port, { credentials: { user: "alice", password: "wonderland" } });
    assert.match(String(d.lines.at(-1)?.reason), /too many failed logins/);
  });

  test("credentials offered to a router without usrpwd get no nonce: the session is anonymous", async () => {
    const d = await door(undefined);
    const c = await RawClient.connect(d.port);
    opened.push(c);
    await c.handshake({ credentials: { user: "alice", password: "x" } });
    const ack = c.transport.find((t) => t.kind === "init");
    assert.ok(ack?.kind === "init" && ack.msg.auth === undefined);
    assert.equal(d.server.status()[0]!.user, undefined);
  });
});

describe("usrpwd's decoders against random input", () => {
  test("any auth extension body is refused, or fails with a DecodeError, never throws otherwise", () => {
    const auth = new UsrPwdAuth(parseDictionary("alice:secret\n", "test"));
    const next = rng(0x9e3779b9);
    const genuine = usrPwdClient.openSyn(auth.initAck(7n), "alice", "secret")!;
    for (let i = 0; i < 5_000; i++) {
      const body =
        i % 2 === 0
          ? Buffer.from(Array.from({ length: next() % 80 }, () => next() & 0xff))
          : Buffer.from(
              genuine.map((b) => (next() % 8 === 0 ? next() & 0xff : b)).subarray(0, next() % (genuine.length + 1)),
            );
      try {
        auth.asked(body);
        const outcome = auth.verify(body, 7n, `10.0.${i >> 8}.${i & 0xff}`);
        // A mutated body may still be the genuine one; anything else is refused.
        if (!("refused" in outcome)) assert.equal(outcome.user, "alice");
      } catch (err) {
        assert.ok(err instanceof DecodeError, `input ${body.toString("hex")}: ${String(err)}`);
      }
    }
  });
});
