/**
 * Access control on the remote API with the real zenoh-ts client: the upgrade request
 * authenticates the connection (`?token=`, Basic, Bearer), reads allowed in part are filtered
 * per key, writes outside the rules are refused whole, bad credentials are a 401.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import {
  ConsolidationMode,
  type Query,
  ReplyKeyExpr,
  type Sample,
  type Session as ZSession,
} from "@eclipse-zenoh/zenoh-ts";
import { WebSocket } from "ws";
import { hashSecret } from "../../src/access/hash.js";
import { collect, openClient, roundTrip, showSample, startRemoteRouter } from "./helpers.js";
import type { Zest } from "../../src/runtime.js";
import { makeCertificate } from "../support/certificate.js";
import { eventually } from "../support/wait.js";

// A low scrypt cost keeps the test fast; the format and the check are the same.
const hash = (s: string): string => hashSecret(s, { ln: 6 });
const ALICE_TOKEN = "alice.t0ken-value";
const ROOT_TOKEN = "root.r00t-token";
const CAROL_TOKEN = "carol.c4rol-token";
const basic = (user: string, password: string): string =>
  `Basic ${Buffer.from(`${user}:${password}`).toString("base64")}`;

const ACCESS = {
  enabled: true,
  default_permission: "deny",
  rules: [
    {
      id: "read demo",
      messages: ["query", "declare_subscriber", "declare_liveliness_subscriber", "liveliness_query"],
      key_exprs: ["demo/**"],
      permission: "allow",
    },
    { id: "write demo", messages: ["put", "delete", "liveliness_token"], key_exprs: ["demo/**"], permission: "allow" },
    {
      id: "everything",
      messages: [
        "put",
        "delete",
        "query",
        "declare_subscriber",
        "declare_queryable",
        "liveliness_token",
        "declare_liveliness_subscriber",
        "liveliness_query",
      ],
      key_exprs: ["**", "@/**"],
      permission: "allow",
    },
    { id: "serve svc", messages: ["declare_queryable"], key_exprs: ["svc/**"], permission: "allow" },
  ],
  subjects: [
    { id: "alice", usernames: ["alice"] },
    { id: "root", usernames: ["root"] },
    { id: "carol", usernames: ["carol"] },
  ],
  policies: [
    { rules: ["read demo", "write demo"], subjects: ["alice"] },
    { rules: ["everything"], subjects: ["root"] },
    { rules: ["serve svc"], subjects: ["carol"] },
  ],
  users: [
    { name: "alice", password_hash: hash("alice-pw") },
    { name: "root", password_hash: hash("root-pw") },
    { name: "carol", password_hash: hash("carol-pw") },
  ],
  tokens: [
    { id: "alice", user: "alice", token_hash: hash(ALICE_TOKEN) },
    { id: "root", user: "root", token_hash: hash(ROOT_TOKEN) },
    { id: "carol", user: "carol", token_hash: hash(CAROL_TOKEN) },
  ],
};

/** The HTTP status the upgrade got (101 when the WebSocket opened). */
function upgradeStatus(
  url: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; challenge?: string }> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, { headers });
    ws.on("open", () => {
      ws.close();
      resolve({ status: 101 });
    });
    ws.on("unexpected-response", (_req, res) => {
      resolve({ status: res.statusCode ?? 0, challenge: res.headers["www-authenticate"] });
      res.resume();
    });
    ws.on("error", (err) => reject(err));
  });
}

describe("access control on the remote API", () => {
  let z: Zest & { locator: string };
  let alice: ZSession;
  let root: ZSession;

  before(async () => {
    z = await startRemoteRouter({ access_control: ACCESS } as never);
    alice = await openClient(`${z.locator}?token=${ALICE_TOKEN}`);
    root = await openClient(`${z.locator}?token=${ROOT_TOKEN}`);
  });
  after(async () => {
    await alice?.close();
    await root?.close();
    await z?.close();
  });

  test("bad or missing credentials refuse the upgrade with 401; good ones open it", async () => {
    const url = z.remoteApiUrl!;
    for (const [what, u, headers] of [
      ["wrong token", `${url}/?token=alice.wrong`, {}],
      ["wrong password", url, { authorization: basic("alice", "nope") }],
      ["unknown scheme", url, { authorization: "Digest x" }],
      ["no credentials (an anonymous client could do nothing)", url, {}],
    ] as const) {
      const r = await upgradeStatus(u, headers);
      assert.equal(r.status, 401, what);
      assert.match(r.challenge ?? "", /^Basic realm="zest"/, what);
    }
    assert.equal((await upgradeStatus(url, { authorization: basic("alice", "alice-pw") })).status, 101, "Basic");
    assert.equal((await upgradeStatus(url, { authorization: `Bearer ${ALICE_TOKEN}` })).status, 101, "Bearer");
    assert.equal((await upgradeStatus(`${url}/?token=${ALICE_TOKEN}`)).status, 101, "?token=");
  });

  test("a user who may read only demo/** gets only those samples on a ** subscriber and get", async () => {
    const got: string[] = [];
    const sub = await alice.declareSubscriber("**", { handler: (s: Sample) => void got.push(showSample(s)) });
    await roundTrip(alice);
    await root.put("demo/a", "A");
    await root.put("other/b", "B");
    await root.put("demo/c", "C");
    await eventually(() => got.length >= 2, 3000, "demo samples");
    await roundTrip(root);
    await roundTrip(alice);
    assert.deepEqual(got, ["put:demo/a=A", "put:demo/c=C"]);
    assert.deepEqual((await collect(await alice.get("**"))).sort(), ["put:demo/a=A", "put:demo/c=C"]);
    // The rules, not the client, filtered: root reads both.
    assert.deepEqual((await collect(await root.get("**"))).sort(), ["put:demo/a=A", "put:demo/c=C", "put:other/b=B"]);
    await sub.undeclare();
  });

  test("a refused put or delete does not land; an allowed one does", async () => {
    await alice.put("other/x", "nope");
    await alice.put("demo/ok", "yes");
    await alice.delete("other/b");
    await roundTrip(alice);
    const values = [...(await collect(await root.get("other/*"))), ...(await collect(await root.get("demo/*")))];
    assert.ok(values.includes("put:demo/ok=yes"), values.join());
    assert.ok(!values.some((v) => v.startsWith("put:other/x")), values.join());
    assert.ok(values.includes("put:other/b=B"), "the refused delete left other/b");
    // A put on a wildcard reaching outside demo/** is refused whole: demo/* keeps its values.
    await alice.put("*/ok", "wild");
    await roundTrip(alice);
    assert.deepEqual(await collect(await root.get("demo/ok")), ["put:demo/ok=yes"]);
  });

  test("declarations outside the rules are refused with the reason; reads in part are allowed", async () => {
    await assert.rejects(alice.declareQueryable("demo/q", { handler: () => undefined }), /forbidden/);
    await assert.rejects(alice.liveliness().declareToken("other/t"), /forbidden/);
    await assert.rejects(alice.declarePublisher("other/p"), /forbidden/);
    await assert.rejects(alice.declareSubscriber("other/**", { handler: () => undefined }), /forbidden/);
    const pub = await alice.declarePublisher("demo/p");
    await pub.undeclare();
  });

  test("a queryable's replies are held to declare_queryable on each reply's key, with _anyke or without", async () => {
    // Carol may declare queryables on svc/** and nothing else.
    const carol = await openClient(`${z.locator}?token=${CAROL_TOKEN}`);
    try {
      await assert.rejects(carol.declareQueryable("demo/q", { handler: () => undefined }), /forbidden/);
      const q = await carol.declareQueryable("svc/q", {
        handler: async (query: Query) => {
          await query.reply("svc/q", "own");
          await query.reply("secret/x", "forged");
          await query.replyDel("secret/y");
          await query.reply("svc/other", "also hers");
          await query.finalize();
        },
      });
      await roundTrip(carol);
      // `_anyke` lets a reply name any key: only the ones under svc/** reach the getter.
      const any = await collect(
        await root.get("svc/q", { acceptReplies: ReplyKeyExpr.ANY, consolidation: ConsolidationMode.NONE }),
      );
      assert.deepEqual(any, ["put:svc/q=own", "put:svc/other=also hers"]);
      // Without `_anyke`, a query on ** reaches her queryable and admits every key: the rules still apply.
      const wide = await collect(await root.get("**", { consolidation: ConsolidationMode.NONE }));
      assert.ok(!wide.some((r) => r.includes("secret/")), wide.join());
      assert.ok(wide.includes("put:svc/q=own"), wide.join());
      await q.undeclare();
    } finally {
      await carol.close();
    }
  });

  test("liveliness: a ** liveliness subscriber and get see only the tokens the user may read", async () => {
    const t1 = await root.liveliness().declareToken("demo/alive");
    const t2 = await root.liveliness().declareToken("other/alive");
    const events: string[] = [];
    const sub = await alice
      .liveliness()
      .declareSubscriber("**", { history: true, handler: (s: Sample) => void events.push(showSample(s)) });
    assert.deepEqual(await collect(await alice.liveliness().get("**")), ["put:demo/alive="]);
    await t1.undeclare();
    await t2.undeclare();
    await roundTrip(root);
    await eventually(() => events.length >= 2, 3000, "liveliness events");
    await roundTrip(alice);
    assert.deepEqual(events, ["put:demo/alive=", "delete:demo/alive"]);
    await sub.undeclare();
  });
});

describe("admin-space permissions still apply under access control", () => {
  test("with adminspace write off, even a user allowed @/** may not declare a publisher there", async () => {
    const z = await startRemoteRouter({
      access_control: ACCESS,
      adminspace: { permissions: { read: true, write: false } },
    } as never);
    const root = await openClient(`${z.locator}?token=${ROOT_TOKEN}`);
    try {
      await assert.rejects(root.declarePublisher("@/router/local/config/x"), /forbidden/);
      const pub = await root.declarePublisher("plain/key");
      await pub.undeclare();
    } finally {
      await root.close();
      await z.close();
    }
  });
});

describe("anonymous clients under access control", () => {
  test("a client without credentials that a cidrs subject matches connects and gets what its rules allow", async () => {
    const section = {
      ...ACCESS,
      rules: [
        ...ACCESS.rules,
        { id: "public read", messages: ["query", "declare_subscriber"], key_exprs: ["public/**"], permission: "allow" },
      ],
      subjects: [...ACCESS.subjects, { id: "local", cidrs: ["127.0.0.0/8", "::1/128"] }],
      policies: [...ACCESS.policies, { rules: ["public read"], subjects: ["local"] }],
    };
    const z = await startRemoteRouter({ access_control: section } as never);
    const root = await openClient(`${z.locator}?token=${ROOT_TOKEN}`);
    const anon = await openClient(z.locator);
    try {
      await root.put("public/p", "open");
      await root.put("private/p", "closed");
      await roundTrip(root);
      assert.deepEqual(await collect(await anon.get("**")), ["put:public/p=open"]);
      // Refused for want of credentials: the reason says so.
      await assert.rejects(anon.declarePublisher("public/p"), /unauthenticated: .*needs credentials/);
    } finally {
      await anon.close();
      await root.close();
      await z.close();
    }
  });
});

describe("wss from the REST TLS config", () => {
  test("plugins.rest.tls makes the remote API speak wss; zenoh-ts connects with credentials and REST sees its put", async () => {
    const dir = mkdtempSync(join(tmpdir(), "zest-wss-rt-"));
    const { cert, key } = makeCertificate(dir);
    const z = await startRemoteRouter({
      access_control: ACCESS,
      plugins: { rest: { tls: { listen_certificate: cert, listen_private_key: key } } },
    } as never);
    // A self-signed certificate: this test process trusts it for the connections below.
    process.env.NODE_TLS_REJECT_UNAUTHORIZED = "0";
    try {
      assert.match(z.remoteApiUrl!, /^wss:\/\/127\.0\.0\.1:\d+$/);
      assert.match(z.restUrl!, /^https:/);
      const c = await openClient(`${z.remoteApiUrl!.replace("wss://", "wss/")}?token=${ALICE_TOKEN}`);
      await c.put("demo/tls", "over wss");
      await roundTrip(c);
      await c.close();
      const r = await fetch(`${z.restUrl!.replace("localhost", "127.0.0.1")}/demo/tls`, {
        headers: { authorization: `Bearer ${ROOT_TOKEN}` },
      });
      assert.equal(r.status, 200);
      assert.match(await r.text(), new RegExp(Buffer.from("over wss").toString("base64")));
      // Bad credentials are refused over TLS too.
      const status = await new Promise<number>((resolve, reject) => {
        const ws = new WebSocket(`${z.remoteApiUrl!}/?token=alice.bad`, { rejectUnauthorized: false });
        ws.on("open", () => resolve(101));
        ws.on("unexpected-response", (_req, res) => resolve(res.statusCode ?? 0));
        ws.on("error", reject);
      });
      assert.equal(status, 401);
    } finally {
      delete process.env.NODE_TLS_REJECT_UNAUTHORIZED;
      await z.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
