/**
 * zest joining a zenoh network (docs/zenoh-network.md), without zenoh-python: a zest router
 * joined to another zest router as a zenoh client (the one key space both ways, the reconnect
 * after a restart), and the joiner against a raw TCP server that answers the handshake badly,
 * or not at all (each attempt fails, is logged and retried within the backoff's bounds).
 */
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, test } from "node:test";
import { BinaryWriter } from "../../src/core/binary.js";
import { silentLogger } from "../../src/core/log.js";
import { Router } from "../../src/core/router.js";
import { Session } from "../../src/core/session.js";
import { DEFAULT_ADMIN_PERMISSIONS } from "../../src/access/admin-permissions.js";
import type { Zest } from "../../src/runtime.js";
import { CloseReason, encodeClose, encodeInitAck } from "../../src/zenoh/codec/transport.js";
import { ZenohJoiner } from "../../src/zenoh/connect/joiner.js";
import { parseEndpoint } from "../../src/zenoh/endpoint.js";
import { DEFAULT_ZENOH_LIMITS } from "../../src/zenoh/server.js";
import { validateConfig } from "../../src/zest-config.js";
import { untilPasses } from "../support/assert.js";
import { makeCertificate } from "../support/certificate.js";
import { http, openSse } from "../support/http.js";
import { startRouter, TEXT } from "../support/router.js";
import { runZestExpectingExit } from "../support/zest-process.js";
import { closeAfterFile, untilJoined, joinedRouter, NO_SCOUTING, zenohRouter } from "./join/routers.js";
import { connectStatus } from "./join/rest.js";
import { freePort } from "../support/ports.js";

const closing = closeAfterFile();

async function values(url: string, selector: string): Promise<string[]> {
  const r = await http(url, "GET", selector);
  assert.equal(r.status, 200, r.text);
  return (JSON.parse(r.text) as Array<{ key: string; value: unknown }>).map((e) => `${e.key}=${String(e.value)}`);
}

describe("a zest router joined to another as a zenoh client", () => {
  test("one key space both ways, once each; the joined router restarted, it reconnects and declares again", async () => {
    const port = await freePort();
    let b = await zenohRouter(port);
    const a = await joinedRouter(`tcp/127.0.0.1:${port}`);
    closing.push(a);
    try {
      await untilPasses(async () => {
        const s = await connectStatus(a.url);
        assert.equal(s.state, "open");
        assert.equal(s.router, b.router.zid);
      });
      // The joined router is listed among A's sessions, and A among B's (as a client).
      const sessionsOf = async (url: string) =>
        (JSON.parse((await http(url, "GET", "/@/router/local")).text) as Array<{ value: { sessions: unknown[] } }>)[0]!
          .value.sessions as Array<Record<string, unknown>>;
      const joined = (await sessionsOf(a.url)).find((s) => s.joined === true);
      assert.equal(joined?.peer, b.router.zid);
      assert.equal(joined?.whatami, "router");
      assert.ok((await sessionsOf(b.url)).some((s) => s.peer === a.router.zid && s.whatami === "client"));
      // A's default storage (**) is declared to B once: B lists A as a client.
      const sse = await openSse(`${b.url}/j/**`);
      try {
        assert.equal((await http(a.url, "PUT", "/j/from-a", { body: "one", headers: TEXT })).status, 200);
        const [ev] = await sse.next(1);
        assert.equal((JSON.parse(ev!.data) as { key: string }).key, "j/from-a");
        await assert.rejects(sse.next(1, 300));
      } finally {
        sse.close();
      }
      assert.deepEqual(await values(b.url, "/j/from-a"), ["j/from-a=one"]);
      assert.equal((await http(b.url, "PUT", "/j/from-b", { body: "two", headers: TEXT })).status, 200);
      await untilPasses(async () => assert.deepEqual(await values(a.url, "/j/from-b"), ["j/from-b=two"]));

      await b.close();
      await untilPasses(async () => assert.notEqual((await connectStatus(a.url)).state, "open"));
      const away = await connectStatus(a.url);
      assert.match(String(away.state), /^(connecting|backoff)$/);
      assert.equal(away.last_error !== undefined, true);
      b = await zenohRouter(port);
      await untilPasses(async () => {
        const s = await connectStatus(a.url);
        assert.equal(s.state, "open");
        assert.equal(s.router, b.router.zid);
        assert.equal(s.sessions, 2);
      });
      // Declared again: a put on the new B reaches A's storage, and A's on B's.
      assert.equal((await http(b.url, "PUT", "/j/again-b", { body: "3", headers: TEXT })).status, 200);
      await untilPasses(async () => assert.deepEqual(await values(a.url, "/j/again-b"), ["j/again-b=3"]));
      assert.equal((await http(a.url, "PUT", "/j/again-a", { body: "4", headers: TEXT })).status, 200);
      await untilPasses(async () => assert.deepEqual(await values(b.url, "/j/again-a"), ["j/again-a=4"]));
    } finally {
      await b.close();
    }
  });
});

/** A TCP server that answers each connection with `answer` (or nothing), counting connections. */
async function fakeRouter(answer: ((socket: Socket) => void) | undefined): Promise<{
  server: Server;
  port: number;
  connections: number[];
}> {
  const connections: number[] = [];
  const server = createServer((socket) => {
    connections.push(Date.now());
    socket.on("error", () => {});
    socket.once("data", () => answer?.(socket));
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  closing.push({ close: () => new Promise<void>((r) => server.close(() => r())) });
  return { server, port: (server.address() as { port: number }).port, connections };
}

function batch(write: (w: BinaryWriter) => void): Buffer {
  const w = new BinaryWriter(64);
  w.u16(0);
  write(w);
  w.patchU16(0, w.length - 2);
  return Buffer.from(w.view());
}

function joiner(port: number, handshakeTimeoutMs = 10_000, protocol = "tcp"): ZenohJoiner {
  const router = new Router({ logger: silentLogger });
  const j = new ZenohJoiner({
    zid: router.zid,
    endpoints: [parseEndpoint(`${protocol}/127.0.0.1:${port}`)],
    openSession: (name) => new Session(router, name),
    connectivity: router.connectivity(),
    logger: silentLogger,
    limits: { ...DEFAULT_ZENOH_LIMITS, handshakeTimeoutMs, batchSize: 2048 },
    admin: DEFAULT_ADMIN_PERMISSIONS,
    backoff: { initialMs: 20, maxMs: 100 },
  });
  closing.push(j);
  return j;
}

describe("joining over udp/", () => {
  test("a router listening on udp/ is joined: puts cross both ways, once", async () => {
    const port = await freePort();
    const b = await startRouter({ listen: { endpoints: [`udp/127.0.0.1:${port}`] }, scouting: NO_SCOUTING });
    closing.push(b);
    const a = await joinedRouter(`udp/127.0.0.1:${port}`);
    closing.push(a);
    await untilPasses(async () => {
      const s = await connectStatus(a.url);
      assert.equal(s.state, "open");
      assert.equal(s.endpoint, `udp/127.0.0.1:${port}`);
      assert.equal(s.router, b.router.zid);
    });
    const sse = await openSse(`${b.url}/ju/**`);
    try {
      let n = 0;
      // A's storage (**) is declared to B on its own time: put until B's SSE client has one.
      await untilPasses(async () => {
        assert.equal((await http(a.url, "PUT", `/ju/warm${++n}`, { body: "w", headers: TEXT })).status, 200);
        await sse.next(1, 300);
      });
      await new Promise((r) => setTimeout(r, 300));
      await sse.next(0, 10);
      assert.equal((await http(a.url, "PUT", "/ju/from-a", { body: "over udp", headers: TEXT })).status, 200);
      const evs = await sse.next(1, 5_000);
      assert.equal((JSON.parse(evs.at(-1)!.data) as { key: string }).key, "ju/from-a");
      await assert.rejects(sse.next(1, 300));
    } finally {
      sse.close();
    }
    assert.equal((await http(b.url, "PUT", "/ju/from-b", { body: "back", headers: TEXT })).status, 200);
    await untilPasses(async () => assert.deepEqual(await values(a.url, "/ju/from-b"), ["ju/from-b=back"]));
  });

  test("nobody on the udp/ port: the handshake deadline ends each attempt, and it is retried", async () => {
    const j = joiner(await freePort(), 300, "udp");
    j.start();
    await untilPasses(() => {
      const s = j.status();
      assert.ok(s.failures >= 2, JSON.stringify(s));
      assert.notEqual(s.state, "open");
      assert.match(String(s.last_error), /handshake/);
    });
    await j.close();
  });
});

describe("the joiner against a router that answers badly", () => {
  const cases: Array<[string, (s: Socket) => void, RegExp]> = [
    [
      "a CLOSE instead of the INIT ack",
      (s) => s.write(batch((w) => encodeClose(w, CloseReason.GENERIC))),
      /the router refused the session \(CLOSE GENERIC/,
    ],
    ["bytes that are no zenoh message", (s) => s.write(Buffer.from([3, 0, 0xff, 0xff, 0xff])), /handshake/],
    [
      "an INIT ack with a batch size above the one offered",
      (s) =>
        s.write(
          batch((w) =>
            encodeInitAck(w, {
              whatami: "router",
              zid: "ABCD",
              snRes: 2,
              reqRes: 2,
              batchSize: 65_535,
              cookie: Buffer.from("c"),
              patch: 1,
              qos: true,
            }),
          ),
        ),
      /handshake/,
    ],
    ["a connection that closes at once", (s) => s.destroy(), /handshake/],
  ];
  for (const [what, answer, error] of cases) {
    test(`${what}: the attempt fails, and is retried after a bounded backoff`, async () => {
      const fake = await fakeRouter(answer);
      const j = joiner(fake.port);
      j.start();
      await untilPasses(() => assert.ok(fake.connections.length >= 4, `${fake.connections.length} connections`));
      const s = j.status();
      assert.notEqual(s.state, "open");
      assert.ok(s.failures >= 3);
      assert.match(String(s.last_error), error);
      // The backoff stays within its bound (100 ms, plus the time an attempt takes).
      const gaps = fake.connections.slice(1).map((t, i) => t - fake.connections[i]!);
      assert.ok(Math.max(...gaps) < 1_000, `gaps ${gaps.join(", ")}`);
      await j.close();
      // A connection already under way when it closed may still be accepted: count after it.
      await new Promise((r) => setTimeout(r, 100));
      const n = fake.connections.length;
      await new Promise((r) => setTimeout(r, 300));
      assert.equal(fake.connections.length, n, "no attempt after close");
    });
  }

  test("a router that never answers: the handshake deadline ends the attempt", async () => {
    const fake = await fakeRouter(undefined);
    const j = joiner(fake.port, 200);
    j.start();
    await untilPasses(() => assert.ok(fake.connections.length >= 2));
    assert.equal(j.status().failures >= 1, true);
    await j.close();
  });

  test("nobody listening: connection refused, state backoff with the next attempt's time", async () => {
    const j = joiner(await freePort());
    j.start();
    await untilPasses(() => {
      const s = j.status();
      assert.equal(s.state, "backoff");
      assert.match(String(s.last_error), /ECONNREFUSED/);
      assert.ok(Date.parse(String(s.next_attempt)) > 0);
    });
    await j.close();
    assert.equal(j.status().state, "closed");
  });
});

describe("connect.endpoints in the config and -e on the command line", () => {
  test("a malformed endpoint, another protocol or port 0 is refused with its path", () => {
    for (const [endpoints, pattern] of [
      [["quic/127.0.0.1:7447"], /connect\.endpoints\.0.*quic/s],
      [["tcp/127.0.0.1:0"], /connect\.endpoints\.0.*not 0/s],
      [["tcp/nowhere"], /connect\.endpoints\.0/],
      [Array.from({ length: 65 }, () => "tcp/127.0.0.1:7447"), /connect\.endpoints/],
    ] as Array<[string[], RegExp]>) {
      assert.throws(() => validateConfig({ connect: { endpoints } }), pattern);
    }
    assert.throws(() => validateConfig({ connect: { endpoints: [], nope: 1 } } as never), /connect/);
    validateConfig({ connect: { endpoints: ["tcp/127.0.0.1:7447"], retry: { period_init_ms: 100 } } });
    validateConfig({ connect: { endpoints: ["udp/127.0.0.1:7447", "tls/localhost:7447"] } });
  });

  test("-e with a bad endpoint stops zest with one line naming the flag", async () => {
    const r = await runZestExpectingExit(["-e", "tcp/127.0.0.1", "--rest-http-port", "none", "-l", "tcp/127.0.0.1:0"]);
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /--connect: .*tcp\/127\.0\.0\.1/);
  });
});

describe("credentials toward the joined router (transport.auth.usrpwd.user and password)", () => {
  test("the right password opens the session; a wrong one is refused, logged in the status, and retried", async () => {
    const dir = mkdtempSync(join(tmpdir(), "zest-join-"));
    const users = join(dir, "users.txt");
    writeFileSync(users, "alice:secret\n");
    const port = await freePort();
    const b = await startRouter({
      listen: { endpoints: [`tcp/127.0.0.1:${port}`] },
      scouting: NO_SCOUTING,
      transport: { auth: { usrpwd: { dictionary_file: users } } },
    });
    closing.push(b);
    const joinAs = (password: string) =>
      joinedRouter(`tcp/127.0.0.1:${port}`, { transport: { auth: { usrpwd: { user: "alice", password } } } }, 100);
    const good = await joinAs("secret");
    closing.push(good);
    await untilJoined(good.url);
    const r = await http(b.url, "GET", "/@/router/local/status/plugins/zenoh/status");
    assert.match(r.text, /"user":"alice"/);
    const bad = await joinAs("wrong");
    closing.push(bad);
    await untilPasses(async () => {
      const s = await connectStatus(bad.url);
      assert.ok(Number(s.failures) >= 2, JSON.stringify(s));
      assert.notEqual(s.state, "open");
      assert.match(String(s.last_error), /refused the session \(CLOSE GENERIC: credentials/);
    });
    rmSync(dir, { recursive: true, force: true });
  });
});

describe("joining over tls/ (transport.link.tls: root_ca_certificate, verify_name_on_connect)", () => {
  test("a router whose certificate the root CA signed is joined; without that CA the attempt fails, saying why", async () => {
    const dir = mkdtempSync(join(tmpdir(), "zest-join-tls-"));
    const { cert, key } = makeCertificate(dir);
    const port = await freePort();
    const b = await startRouter({
      listen: { endpoints: [`tls/127.0.0.1:${port}`] },
      scouting: NO_SCOUTING,
      transport: { link: { tls: { listen_certificate: cert, listen_private_key: key } } },
    });
    closing.push(b);
    const joinWith = (tls: Record<string, unknown>) =>
      joinedRouter(`tls/127.0.0.1:${port}`, { transport: { link: { tls } } }, 100);
    const trusted = await joinWith({ root_ca_certificate: cert });
    closing.push(trusted);
    await untilJoined(trusted.url);
    assert.equal((await http(trusted.url, "PUT", "/tls/a", { body: "over tls", headers: TEXT })).status, 200);
    await untilPasses(async () => assert.deepEqual(await values(b.url, "/tls/a"), ["tls/a=over tls"]));
    const untrusted = await joinWith({});
    closing.push(untrusted);
    await untilPasses(async () => {
      const s = await connectStatus(untrusted.url);
      assert.notEqual(s.state, "open");
      assert.match(String(s.last_error), /certificate/i);
    });
    rmSync(dir, { recursive: true, force: true });
  });
});

describe("liveliness across the join", () => {
  test("a token on either side is alive on the other, and gone with its undeclaration", async () => {
    const port = await freePort();
    const b = await zenohRouter(port);
    closing.push(b);
    const a = await startRouter({ listen: { endpoints: [] }, connect: { endpoints: [`tcp/127.0.0.1:${port}`] } });
    closing.push(a);
    await untilJoined(a.url);
    const onA = a.session.declareLivelinessToken("live/a");
    const onB = b.session.declareLivelinessToken("live/b");
    const keys = (z: Zest) =>
      z.session
        .livelinessGet("live/**")
        .map((s) => s.key)
        .sort();
    await untilPasses(() => {
      assert.deepEqual(keys(a), ["live/a", "live/b"]);
      assert.deepEqual(keys(b), ["live/a", "live/b"]);
    });
    onA.undeclare();
    await untilPasses(() => assert.deepEqual(keys(b), ["live/b"]));
    onB.undeclare();
    await untilPasses(() => assert.deepEqual(keys(a), []));
  });
});

describe("gets across the join", () => {
  test("a get reaching two of the joined router's queryables leaves as one REQUEST: each answers once", async () => {
    const port = await freePort();
    const b = await zenohRouter(port);
    closing.push(b);
    const a = await startRouter({ listen: { endpoints: [] }, connect: { endpoints: [`tcp/127.0.0.1:${port}`] } });
    closing.push(a);
    const asked = { wide: 0, narrow: 0 };
    b.session.declareQueryable("qq/**", (q) => {
      asked.wide++;
      q.reply("qq/a", "wide");
    });
    b.session.declareQueryable("qq/a", (q) => {
      asked.narrow++;
      q.reply("qq/a", "narrow");
    });
    await untilPasses(async () => {
      const s = await connectStatus(a.url);
      assert.equal(s.state, "open");
      assert.ok((await a.session.get("qq/a", { target: "all" })).length > 0);
    });
    await new Promise((r) => setTimeout(r, 300));
    asked.wide = 0;
    asked.narrow = 0;
    await a.session.get("qq/a", { target: "all", consolidation: "none" });
    assert.deepEqual(asked, { wide: 1, narrow: 1 });
  });
});

describe("access control on what the joined router sends", () => {
  test("its puts are decided as an anonymous client from its address: a refused key never enters zest", async () => {
    const port = await freePort();
    const b = await zenohRouter(port);
    closing.push(b);
    const a = await startRouter({
      listen: { endpoints: [] },
      connect: { endpoints: [`tcp/127.0.0.1:${port}`] },
      access_control: {
        enabled: true,
        default_permission: "deny",
        rules: [{ id: "demo", messages: ["put", "declare_subscriber"], key_exprs: ["demo/**"], permission: "allow" }],
        subjects: [{ id: "local", cidrs: ["127.0.0.0/8"] }],
        policies: [{ rules: ["demo"], subjects: ["local"] }],
      },
    } as never);
    closing.push(a);
    const got: string[] = [];
    a.session.declareSubscriber("**", (s) => void got.push(s.key));
    let n = 0;
    await untilPasses(async () => {
      await b.session.put(`demo/warm${++n}`, "w");
      await new Promise((r) => setTimeout(r, 50));
      assert.ok(got.length > 0);
    });
    got.length = 0;
    await b.session.put("secret/a", "no");
    await b.session.put("demo/a", "yes");
    await untilPasses(() => assert.ok(got.includes("demo/a")));
    await new Promise((r) => setTimeout(r, 300));
    assert.deepEqual(got, ["demo/a"]);
  });
});
