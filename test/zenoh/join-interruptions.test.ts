/**
 * zest joined to another zest router as a zenoh client (docs/zenoh-network.md, "Reconnecting"),
 * interrupted mid-stream: a partition between them healed (the tests' TCP proxy), the joined
 * router restarted, zest restarted. Streams of puts arrive in order and none twice; the router
 * forgets zest's declarations while it is away and has them again after.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { Zest } from "../../src/runtime.js";
import { untilPasses } from "../support/assert.js";
import { startRouter } from "../support/router.js";
import { startTcpProxy } from "../support/tcp-proxy.js";
import { closeAfterFile, untilJoined, joinedRouter, zenohRouter } from "./join/routers.js";
import { connectStatus } from "./join/rest.js";
import { freePort } from "../support/ports.js";

const closing = closeAfterFile();

/**
 * A stream of puts on `from`, one every 5 ms on `<prefix>/<i>`, until `stop()`: resolves with
 * how many were put.
 */
function streamPuts(from: Zest, prefix: string): { stop(): Promise<number> } {
  let i = 0;
  let running = true;
  const done = (async () => {
    while (running) {
      await from.session.put(`${prefix}/${String(i++).padStart(5, "0")}`, "s").catch(() => {});
      await new Promise((r) => setTimeout(r, 5));
    }
    return i;
  })();
  return {
    stop: async () => {
      running = false;
      return done;
    },
  };
}

/** The keys a subscriber on `router` gets on `key`, in order. */
function keysOn(router: Zest, key: string): string[] {
  const got: string[] = [];
  router.session.declareSubscriber(key, (s) => void got.push(s.key));
  return got;
}

/** Asserts the stream's keys in `got` (warm-ups left out) are increasing (in order, none twice) and end with its last. */
function assertOnceInOrder(got: readonly string[], prefix: string, count: number): void {
  const keys = got.filter((k) => !k.endsWith("/warm"));
  for (let i = 1; i < keys.length; i++) assert.ok(keys[i - 1]! < keys[i]!, `${keys[i - 1]} then ${keys[i]}`);
  assert.equal(keys.at(-1), `${prefix}/${String(count - 1).padStart(5, "0")}`);
}

describe("interruptions mid-stream: nothing twice", () => {
  test("a partition between zest and the router it joined, healed: zest reconnects; a stream of puts across it arrives in order, none twice", async () => {
    const port = await freePort();
    const b = await zenohRouter(port);
    closing.push(b);
    const proxy = await startTcpProxy(port);
    closing.push(proxy);
    const a = await joinedRouter(`tcp/127.0.0.1:${proxy.port}`);
    closing.push(a);
    await untilJoined(a.url);
    const onB = keysOn(b, "jp/a/**");
    const onA = keysOn(a, "jp/b/**");
    // Both directions, until each side has the other's subscriber.
    await untilPasses(async () => {
      await a.session.put("jp/a/warm", "w");
      await b.session.put("jp/b/warm", "w");
      assert.ok(onB.length > 0 && onA.length > 0);
    });
    onA.length = 0;
    onB.length = 0;
    const fromA = streamPuts(a, "jp/a");
    const fromB = streamPuts(b, "jp/b");
    await new Promise((r) => setTimeout(r, 300));
    proxy.cut();
    await untilPasses(async () => assert.notEqual((await connectStatus(a.url)).state, "open"));
    // B released A's declarations (A's subscriber on jp/b/**).
    await untilPasses(() => assert.equal(b.session.matchingKeys("jp/b/x", "subscribers").includes("jp/b/**"), false));
    await new Promise((r) => setTimeout(r, 300));
    const duringA = onA.length;
    proxy.heal();
    await untilJoined(a.url);
    await untilPasses(() => assert.ok(onA.length > duringA + 10));
    const [nA, nB] = [await fromA.stop(), await fromB.stop()];
    await new Promise((r) => setTimeout(r, 500));
    assertOnceInOrder(onB, "jp/a", nA);
    assertOnceInOrder(onA, "jp/b", nB);
  });

  test("the joined router restarted mid-stream: zest declares again; the stream arrives in order, none twice", async () => {
    const port = await freePort();
    let b = await zenohRouter(port);
    const a = await joinedRouter(`tcp/127.0.0.1:${port}`);
    closing.push(a);
    await untilJoined(a.url);
    const onA = keysOn(a, "jr/**");
    let s = streamPuts(b, "jr/1");
    await untilPasses(() => assert.ok(onA.length > 20));
    await s.stop();
    await b.close();
    b = await zenohRouter(port);
    closing.push(b);
    await untilJoined(a.url);
    const before = onA.length;
    s = streamPuts(b, "jr/2");
    await untilPasses(() => assert.ok(onA.length > before + 50));
    const n = await s.stop();
    await new Promise((r) => setTimeout(r, 500));
    const second = onA.filter((k) => k.startsWith("jr/2/"));
    assertOnceInOrder(second, "jr/2", n);
    assertOnceInOrder(
      onA.filter((k) => k.startsWith("jr/1/")),
      "jr/1",
      Number(
        onA
          .filter((k) => k.startsWith("jr/1/"))
          .at(-1)!
          .split("/")[2],
      ) + 1,
    );
  });

  test("zest restarted: the router forgets its declarations, then has them again", async () => {
    const port = await freePort();
    const b = await zenohRouter(port);
    closing.push(b);
    const joinConfig = {
      listen: { endpoints: [] },
      connect: { endpoints: [`tcp/127.0.0.1:${port}`], retry: { period_init_ms: 50, period_max_ms: 200 } },
    };
    let a = await startRouter(joinConfig);
    a.session.declareSubscriber("jz/**", () => {});
    const declared = () => b.session.matchingKeys("jz/x", "subscribers").includes("jz/**");
    await untilPasses(() => assert.equal(declared(), true));
    await a.close();
    await untilPasses(() => assert.equal(declared(), false));
    a = await startRouter(joinConfig);
    closing.push(a);
    a.session.declareSubscriber("jz/**", () => {});
    await untilPasses(() => assert.equal(declared(), true));
  });
});
