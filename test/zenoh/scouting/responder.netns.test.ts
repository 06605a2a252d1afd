// Multicast scouting against the real zenoh-pico z_scout, inside the loopback-only namespace
// (this file's name puts it there): no datagram leaves the machine.
import assert from "node:assert/strict";
import { createSocket, type Socket } from "node:dgram";
import { once } from "node:events";
import { after, describe, test } from "node:test";
import { silentLogger } from "../../../src/core/log.js";
import { Router } from "../../../src/core/router.js";
import type { Sample } from "../../../src/core/sample.js";
import { Session } from "../../../src/core/session.js";
import { idToZenohId } from "../../../src/core/timestamp.js";
import {
  decodeScoutingMessage,
  encodeScout,
  type Hello,
  scoutingSchema,
  ScoutingResponder,
  startScouting,
} from "../../../src/zenoh/scouting/index.js";
import { ZenohServer } from "../../../src/zenoh/server.js";
import { netnsSkip } from "../../support/netns.js";
import { picoSkip, picoPut, runPico } from "../../support/pico.js";
import { runZestExpectingExit, startZest } from "../../support/zest-process.js";
import { eventually } from "../../support/wait.js";

const GROUP = "224.0.0.224";
const PORT = 7446;

/** A bare UDP socket on loopback that sends SCOUTs and gathers the HELLOs sent back to it. */
async function scoutClient(): Promise<{ sock: Socket; hellos: Hello[]; other: Buffer[] }> {
  const sock = createSocket("udp4");
  sock.bind(0, "127.0.0.1");
  await once(sock, "listening");
  sock.setMulticastInterface("127.0.0.1");
  const hellos: Hello[] = [];
  const other: Buffer[] = [];
  sock.on("message", (m) => {
    const msg = decodeScoutingMessage(m);
    if (msg.kind === "hello") hellos.push(msg);
    else other.push(m);
  });
  return { sock, hellos, other };
}

function responder(locators: string[], opts: { id?: string; maxHellosPerSecond?: number } = {}): ScoutingResponder {
  return new ScoutingResponder({
    interfaces: ["127.0.0.1"],
    zid: idToZenohId(opts.id ?? "AB12"),
    locators: () => locators,
    logger: silentLogger,
    ...(opts.maxHellosPerSecond === undefined ? {} : { maxHellosPerSecond: opts.maxHellosPerSecond }),
  });
}

const open: Array<{ close(): unknown }> = [];
after(async () => {
  for (const o of open) await o.close();
});

describe("multicast scouting", { skip: netnsSkip() }, () => {
  test("pico's z_scout finds the router: its zid, whatami and the listener's locator", {
    skip: picoSkip("z_scout"),
  }, async () => {
    const r = responder(["tcp/127.0.0.1:7447"]);
    await r.start();
    try {
      const scout = runPico("z_scout");
      try {
        const line = await scout.waitFor(/^Hello \{/, 10_000);
        // pico prints the zid's bytes in wire order: AB12 is sent as 12 ab.
        assert.match(line, /zid: Some\(12AB\), whatami: "Router", locators: \["tcp\/127\.0\.0\.1:7447"\]/);
      } finally {
        await scout.stop();
      }
      assert.equal(r.stats.hellos >= 1, true);
    } finally {
      await r.close();
    }
  });

  test("a SCOUT for clients and peers only gets no HELLO; a malformed datagram is dropped and the next SCOUT answered", async () => {
    const r = responder(["tcp/127.0.0.1:7447"]);
    await r.start();
    const c = await scoutClient();
    open.push(r, c.sock);
    c.sock.send(encodeScout(["peer", "client"]), PORT, GROUP);
    c.sock.send(Buffer.from([0x05, 0x09, 0xff, 0xff]), PORT, GROUP);
    await eventually(() => r.stats.malformed === 1 && r.stats.scouts === 1, 5_000, "the two datagrams");
    assert.equal(c.hellos.length, 0);
    c.sock.send(encodeScout(["router"]), PORT, GROUP);
    await eventually(() => c.hellos.length === 1, 5_000, "a HELLO");
    assert.deepEqual(c.hellos[0]!.locators, ["tcp/127.0.0.1:7447"]);
    assert.equal(c.hellos[0]!.whatami, "router");
    await r.close();
  });

  test("two routers on one host share the scouting port and both answer", async () => {
    const a = responder(["tcp/127.0.0.1:7447"], { id: "A1" });
    const b = responder(["tcp/127.0.0.1:7448"], { id: "B2" });
    await a.start();
    await b.start();
    const c = await scoutClient();
    open.push(a, b, c.sock);
    c.sock.send(encodeScout(["router"]), PORT, GROUP);
    await eventually(() => c.hellos.length === 2, 5_000, "two HELLOs");
    assert.deepEqual(c.hellos.map((h) => h.locators[0]).sort(), ["tcp/127.0.0.1:7447", "tcp/127.0.0.1:7448"]);
    await a.close();
    await b.close();
  });

  test("a flood of SCOUTs is answered at most maxHellosPerSecond times a second", async () => {
    const r = responder(["tcp/127.0.0.1:7447"], { maxHellosPerSecond: 5 });
    await r.start();
    const c = await scoutClient();
    open.push(r, c.sock);
    const scout = encodeScout(["router"]);
    for (let i = 0; i < 50; i++) c.sock.send(scout, PORT, GROUP);
    await eventually(() => r.stats.scouts === 50, 5_000, "50 scouts");
    assert.ok(r.stats.hellos <= 10, `sent ${r.stats.hellos}`);
    assert.ok(r.stats.throttled >= 40, `throttled ${r.stats.throttled}`);
    await r.close();
  });

  test("startScouting: a loopback listener is found on loopback; scouting off starts nothing; close frees the port", async () => {
    const config = scoutingSchema.parse({});
    const started = await startScouting(config, {
      zid: idToZenohId("C3"),
      listenerHosts: ["127.0.0.1"],
      locators: () => ["tcp/127.0.0.1:7450"],
      logger: silentLogger,
    });
    assert.ok(started);
    const c = await scoutClient();
    open.push(c.sock);
    c.sock.send(encodeScout(["router"]), PORT, GROUP);
    await eventually(() => c.hellos.length === 1, 5_000, "a HELLO");
    assert.deepEqual(c.hellos[0]!.locators, ["tcp/127.0.0.1:7450"]);
    await started.close();
    await started.close();
    const off = await startScouting(scoutingSchema.parse({ multicast: { enabled: false } }), {
      zid: idToZenohId("C3"),
      listenerHosts: ["127.0.0.1"],
      locators: () => [],
      logger: silentLogger,
    });
    assert.equal(off, undefined);
    c.sock.send(encodeScout(["router"]), PORT, GROUP);
    await new Promise((r) => setTimeout(r, 200));
    assert.equal(c.hellos.length, 1);
  });
});

// One test at a time: two doors answering scouts in one namespace at once would each be found by
// the other test's client.
describe("pico clients given no endpoint find the zenoh door by scouting", {
  skip: netnsSkip(),
  concurrency: 1,
}, () => {
  /** The zenoh door on a loopback port with scouting answering for it, as a router would run them. */
  async function door(): Promise<{ router: Router; close(): Promise<void> }> {
    const router = new Router({ zid: "5C07" });
    const server = new ZenohServer({
      zid: router.zid,
      openSession: (name) => new Session(router, name),
      connectivity: router.connectivity(),
      logger: silentLogger,
      endpoints: [{ protocol: "tcp", host: "127.0.0.1", port: 0 }],
    });
    await server.listen();
    const scouting = await startScouting(scoutingSchema.parse({}), {
      zid: idToZenohId(router.zid),
      listenerHosts: ["127.0.0.1"],
      locators: () => server.locators(),
      logger: silentLogger,
    });
    return {
      router,
      async close() {
        await scouting?.close();
        await server.close();
      },
    };
  }

  test("z_put without -e scouts, connects and its put reaches a subscriber", { skip: picoSkip("z_put") }, async () => {
    const d = await door();
    try {
      const got: Sample[] = [];
      new Session(d.router, "test").declareSubscriber("scouted/**", (s) => void got.push(s));
      const putLines = await picoPut(["-k", "scouted/put", "-v", "found you"]);
      // On a failure, say what arrived and what z_put printed: the scouting it did is in there.
      await eventually(() => got.length === 1, 5_000, "the put").catch((err: Error) => {
        throw new Error(`${err.message}; ${got.length} samples arrived; z_put printed: ${putLines.join(" | ")}`);
      });
      assert.equal(got[0]!.key, "scouted/put");
      assert.equal(got[0]!.payload.toString(), "found you");
    } finally {
      await d.close();
    }
  });

  test("z_sub without -e scouts, connects and receives a put made in the router", {
    skip: picoSkip("z_sub"),
  }, async () => {
    const d = await door();
    try {
      const sub = runPico("z_sub", ["-k", "scouted/**", "-n", "1"]);
      try {
        await sub.waitFor(/Press CTRL-C to quit|Processing/i, 10_000);
        const s = new Session(d.router, "test");
        // The subscriber's declaration travels after the session opens: put until one arrives.
        const line = sub.waitFor(/Received \('scouted\/sub': 'hi'\)/, 10_000);
        await eventually(
          async () => {
            await s.put("scouted/sub", "hi");
            return sub.lines().some((l) => l.includes("scouted/sub"));
          },
          8_000,
          "the sample at z_sub",
        );
        await line;
      } finally {
        await sub.stop();
      }
    } finally {
      await d.close();
    }
  });
});

describe("the zest command answers scouting for its zenoh door", { skip: netnsSkip() }, () => {
  test("z_put given no endpoint finds zest, and REST reads the value", { skip: picoSkip("z_put") }, async () => {
    const zest = await startZest(["-l", "tcp/127.0.0.1:0"]);
    try {
      await picoPut(["-k", "demo/scouted", "-v", "by scouting"]);
      let body: unknown;
      await eventually(
        async () => {
          const res = await fetch(`${zest.url}/demo/scouted`);
          body = await res.json();
          return Array.isArray(body) && body.length === 1;
        },
        5_000,
        "the value over REST",
      );
      const [entry] = body as Array<{ key: string; value: string }>;
      assert.equal(entry!.key, "demo/scouted");
      assert.equal(Buffer.from(entry!.value, "base64").toString(), "by scouting");
    } finally {
      await zest.stop();
    }
  });

  for (const off of [["--cfg", "scouting/multicast/enabled:false"], ["--no-multicast-scouting"]]) {
    test(`with ${off.join(" ")}, a client given no endpoint finds nothing`, { skip: picoSkip("z_scout") }, async () => {
      const zest = await startZest(["-l", "tcp/127.0.0.1:0", ...off]);
      try {
        const scout = runPico("z_scout");
        try {
          await scout.waitFor(/Did not find any zenoh process/, 10_000);
        } finally {
          await scout.stop();
        }
      } finally {
        await zest.stop();
      }
    });
  }

  test("a bad scouting section stops zest with a one-line error naming the field", async () => {
    const r = await runZestExpectingExit([
      "-l",
      "tcp/127.0.0.1:0",
      "--cfg",
      'scouting/multicast/adress:"224.0.0.224:7446"',
    ]);
    assert.equal(r.code, 2, r.stderr);
    assert.match(r.stderr, /scouting\.multicast.*did you mean address\?/);
  });
});
