/**
 * zest joins an existing zenoh network (docs/zenoh-network.md): a zest process started with
 * `-e tcp/…` beside zenoh's own router (the zenoh-rust runtime of the `eclipse-zenoh` wheel in
 * router mode), with zenoh-python clients attached to that router, in a loopback-only namespace.
 * Puts, gets and queryables cross both ways, nothing twice; the router restarted mid-way, zest
 * reconnects and declares again.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { untilPasses } from "../support/assert.js";
import { picoSkip, runPico } from "../support/pico.js";
import { Buffer } from "node:buffer";
import { openSse, type SseClient } from "../support/http.js";
import { startZest, type ZestProcess, zenohLocatorOf } from "../support/zest-process.js";
import { call, type PyProcess, samplesOf, startZenohClient, startZenohRouter } from "./join/python.js";
import { pythonSkip } from "../support/zenoh-python.js";
import { connectStatus, http, restEntries } from "./join/rest.js";
import { startJoinedZest, untilJoined } from "./join/routers.js";
import { freePort } from "../support/ports.js";
import { normalizeZid } from "../../src/access/policy.js";

const skip = pythonSkip();

describe("zest joined to zenoh's router", { skip }, () => {
  let port: number;
  let router: PyProcess & { zid: string };
  let zest: ZestProcess;
  let endpoint: string;

  before(async () => {
    port = await freePort();
    endpoint = `tcp/127.0.0.1:${port}`;
    router = await startZenohRouter(port);
    zest = await startJoinedZest(endpoint);
    await untilJoined(zest.url);
  });
  after(async () => {
    await zest?.stop();
    await router?.stop();
  });

  test("the admin space shows the connection open, to the router's zid", async () => {
    const s = await connectStatus(zest.url);
    assert.equal(s.state, "open");
    assert.equal(s.endpoint, endpoint);
    // zest writes a zid with whole bytes ("05E2..."), zenoh as a number ("5e2..."): one id.
    assert.equal(normalizeZid(String(s.router)), normalizeZid(router.zid));
    // The default storage on ** is declared once: one subscriber and one queryable.
    assert.deepEqual(s.declared, { subscribers: 1, queryables: 1, tokens: 0 });
  });

  test("a python put on the router side reaches zest's storage (REST GET) and an SSE client, once", async () => {
    const sse: SseClient = await openSse(`${zest.url}/join/py/**`);
    const pub = await startZenohClient(endpoint);
    try {
      await call(pub, { op: "put", key: "join/py/a", value: "from python" });
      const [ev] = await sse.next(1, 10_000);
      assert.equal(ev!.event, "PUT");
      const data = JSON.parse(ev!.data) as { key: string };
      assert.equal(data.key, "join/py/a");
      await untilPasses(async () =>
        assert.deepEqual(await restEntries(`${zest.url}/join/py/**`), ["join/py/a=from python"]),
      );
      // Nothing arrives twice.
      await assert.rejects(sse.next(1, 500));
    } finally {
      sse.close();
      await pub.stop();
    }
  });

  test("a python delete on the router side removes the key from zest's storage", async () => {
    const c = await startZenohClient(endpoint);
    try {
      await call(c, { op: "put", key: "join/del/a", value: "soon gone" });
      await untilPasses(async () =>
        assert.deepEqual(await restEntries(`${zest.url}/join/del/**`), ["join/del/a=soon gone"]),
      );
      await call(c, { op: "delete", key: "join/del/a" });
      await untilPasses(async () => assert.deepEqual(await restEntries(`${zest.url}/join/del/**`), []));
    } finally {
      await c.stop();
    }
  });

  test("a python put on the router side reaches a pico subscriber on zest", { skip: picoSkip("z_sub") }, async () => {
    const sub = runPico("z_sub", ["-e", zenohLocatorOf(zest), "-k", "join/pico/**"]);
    const pub = await startZenohClient(endpoint);
    try {
      await sub.waitFor(/Press CTRL-C to quit/);
      let n = 0;
      await untilPasses(async () => {
        await call(pub, { op: "put", key: `join/pico/${++n}`, value: "to pico" });
        await sub.waitFor(/Received \('join\/pico\/\d+': 'to pico'\)/, 300);
      });
    } finally {
      await pub.stop();
      await sub.stop();
    }
  });

  test("a REST PUT on zest reaches a python subscriber on the router side, once", async () => {
    const sub = await startZenohClient(endpoint);
    try {
      await call(sub, { op: "sub", key: "join/rest/**" });
      // The router declares the subscriber to zest on its own time: put until one arrives.
      let n = 0;
      await untilPasses(async () => {
        const r = await http("PUT", `${zest.url}/join/rest/${++n}`, `value ${n}`, { "content-type": "text/plain" });
        assert.equal(r.status, 200);
        await sub.waitLine((l) => "sample" in l, 300);
      });
      const first = samplesOf(sub).length;
      const r = await http("PUT", `${zest.url}/join/rest/last`, "the last", { "content-type": "text/plain" });
      assert.equal(r.status, 200);
      await sub.waitLine((l) => "sample" in l && (l.sample as { key: string }).key === "join/rest/last");
      await new Promise((res) => setTimeout(res, 300));
      const after = samplesOf(sub).slice(first);
      assert.deepEqual(after, [{ key: "join/rest/last", kind: "PUT", value: "the last" }]);
    } finally {
      await sub.stop();
    }
  });

  test("a REST GET on zest reads a python queryable on the router side", async () => {
    const q = await startZenohClient(endpoint);
    try {
      await call(q, { op: "queryable", key: "join/q/**", value: "answered by python" });
      await untilPasses(async () => {
        const r = await http("GET", `${zest.url}/join/q/x`);
        assert.equal(r.status, 200);
        const entries = JSON.parse(r.text) as Array<{ key: string; value: string }>;
        assert.equal(entries.length, 1, r.text);
        assert.equal(entries[0]!.key, "join/q/x");
        assert.equal(Buffer.from(entries[0]!.value, "base64").toString(), "answered by python");
      });
    } finally {
      await q.stop();
    }
  });

  test("a python get on the router side reads zest's storage", async () => {
    const put = await http("PUT", `${zest.url}/join/stored/k`, "kept by zest", { "content-type": "text/plain" });
    assert.equal(put.status, 200);
    const c = await startZenohClient(endpoint);
    try {
      const done = await call(c, { op: "get", selector: "join/stored/**" });
      assert.deepEqual(done.replies, [{ key: "join/stored/k", value: "kept by zest" }]);
    } finally {
      await c.stop();
    }
  });

  test("zenoh-python clients on either side, one on zest's listener and one on the router: puts cross both ways, once", async () => {
    const onZest = await startZenohClient(zenohLocatorOf(zest));
    const onRouter = await startZenohClient(endpoint);
    try {
      await call(onZest, { op: "sub", key: "join/both/to-zest/**" });
      await call(onRouter, { op: "sub", key: "join/both/to-router/**" });
      // Each subscriber is declared along the way on its own time: put until the first arrives.
      let n = 0;
      await untilPasses(async () => {
        await call(onRouter, { op: "put", key: `join/both/to-zest/${++n}`, value: "r" });
        await onZest.waitLine((l) => "sample" in l, 300);
      });
      let m = 0;
      await untilPasses(async () => {
        await call(onZest, { op: "put", key: `join/both/to-router/${++m}`, value: "z" });
        await onRouter.waitLine((l) => "sample" in l, 300);
      });
      const zestSeen = samplesOf(onZest).length;
      const routerSeen = samplesOf(onRouter).length;
      await call(onRouter, { op: "put", key: "join/both/to-zest/last", value: "from the router side" });
      await call(onZest, { op: "put", key: "join/both/to-router/last", value: "from zest's side" });
      await onZest.waitLine((l) => "sample" in l && (l.sample as { key: string }).key === "join/both/to-zest/last");
      await onRouter.waitLine((l) => "sample" in l && (l.sample as { key: string }).key === "join/both/to-router/last");
      await new Promise((res) => setTimeout(res, 300));
      assert.deepEqual(samplesOf(onZest).slice(zestSeen), [
        { key: "join/both/to-zest/last", kind: "PUT", value: "from the router side" },
      ]);
      assert.deepEqual(samplesOf(onRouter).slice(routerSeen), [
        { key: "join/both/to-router/last", kind: "PUT", value: "from zest's side" },
      ]);
    } finally {
      await onZest.stop();
      await onRouter.stop();
    }
  });

  test("the router restarted: zest reconnects, declares again, and a later put arrives once", async () => {
    const sse = await openSse(`${zest.url}/join/again/**`);
    try {
      await router.stop();
      await untilPasses(async () => assert.notEqual((await connectStatus(zest.url)).state, "open"), 15_000);
      const down = await connectStatus(zest.url);
      assert.match(String(down.state), /^(connecting|backoff)$/);
      router = await startZenohRouter(port);
      await untilPasses(async () => {
        const s = await connectStatus(zest.url);
        assert.equal(s.state, "open");
        // zest writes a zid with whole bytes ("05E2..."), zenoh as a number ("5e2..."): one id.
        assert.equal(normalizeZid(String(s.router)), normalizeZid(router.zid));
      }, 20_000);
      const pub = await startZenohClient(endpoint);
      try {
        await call(pub, { op: "put", key: "join/again/a", value: "after the restart" });
        const [ev] = await sse.next(1, 10_000);
        assert.equal((JSON.parse(ev!.data) as { key: string }).key, "join/again/a");
        await assert.rejects(sse.next(1, 500));
        // zest's subscriber and queryable were declared to the new router: a python sub sees a REST PUT.
        await call(pub, { op: "sub", key: "join/again/**" });
        let n = 0;
        await untilPasses(async () => {
          await http("PUT", `${zest.url}/join/again/rest${++n}`, "x", { "content-type": "text/plain" });
          await pub.waitLine(
            (l) => "sample" in l && (l.sample as { key: string }).key.startsWith("join/again/rest"),
            300,
          );
        });
      } finally {
        await pub.stop();
      }
    } finally {
      sse.close();
    }
  });
});

describe("zenoh's router connecting to zest", { skip }, () => {
  test("is refused with CLOSE and a log line: zest joins routers, not the other way round", async () => {
    const zest = await startZest(["-v", "-l", "tcp/127.0.0.1:0", "--no-multicast-scouting"]);
    const router = await startZenohRouter(await freePort(), zenohLocatorOf(zest));
    try {
      await untilPasses(() => assert.match(zest.stderr(), /zenoh router tried to connect/), 15_000);
      assert.doesNotMatch(zest.stderr(), /"msg":"zenoh session opened"/);
    } finally {
      await router.stop();
      await zest.stop();
    }
  });
});

describe("zest joined to zenoh's router over udp/", { skip }, () => {
  test("a python put on the router side reaches an SSE client on zest, and a REST PUT a python subscriber, once each", async () => {
    const port = await freePort();
    const udpPort = await freePort();
    const router = await startZenohRouter(port, undefined, udpPort);
    const zest = await startJoinedZest(`udp/127.0.0.1:${udpPort}`, []);
    const endpoint = `tcp/127.0.0.1:${port}`;
    const c = await startZenohClient(endpoint);
    const sse = await openSse(`${zest.url}/joinudp/**`);
    try {
      await untilPasses(async () => {
        const s = await connectStatus(zest.url);
        assert.equal(s.state, "open");
        assert.equal(s.endpoint, `udp/127.0.0.1:${udpPort}`);
        // zest writes a zid with whole bytes ("05E2..."), zenoh as a number ("5e2..."): one id.
        assert.equal(normalizeZid(String(s.router)), normalizeZid(router.zid));
      }, 15_000);
      await call(c, { op: "sub", key: "joinudp/rest/**" });
      let n = 0;
      await untilPasses(async () => {
        await call(c, { op: "put", key: `joinudp/py/${++n}`, value: "over udp" });
        await sse.next(1, 300);
      });
      await new Promise((r) => setTimeout(r, 300));
      await sse.next(0, 10);
      await call(c, { op: "put", key: "joinudp/py/last", value: "the last" });
      const evs = await sse.next(1, 5_000);
      assert.equal((JSON.parse(evs.at(-1)!.data) as { key: string }).key, "joinudp/py/last");
      await assert.rejects(sse.next(1, 300));
      let m = 0;
      await untilPasses(async () => {
        await http("PUT", `${zest.url}/joinudp/rest/${++m}`, "x", { "content-type": "text/plain" });
        await c.waitLine((l) => "sample" in l, 300);
      });
      const seen = samplesOf(c).length;
      await http("PUT", `${zest.url}/joinudp/rest/last`, "from zest", { "content-type": "text/plain" });
      await c.waitLine((l) => "sample" in l && (l.sample as { key: string }).key === "joinudp/rest/last");
      await new Promise((r) => setTimeout(r, 300));
      assert.deepEqual(samplesOf(c).slice(seen), [{ key: "joinudp/rest/last", kind: "PUT", value: "from zest" }]);
    } finally {
      sse.close();
      await c.stop();
      await zest.stop();
      await router.stop();
    }
  });
});
