/**
 * SSE resume (docs/sse.md) against the real `zest` command over real HTTP, with an
 * EventSource-like client: ids on every event, replay of exactly the missed events that match
 * the selector (header and parameter forms), RESET when they are not known, and a router in a
 * NATS cluster replaying samples written on another router.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { http, openSse } from "../support/http.js";
import { startNatsCluster, type NatsCluster } from "../support/nats-cluster.js";
import { startZest, type ZestProcess } from "../support/zest-process.js";
import { type SseMessage, TestEventSource } from "../rest/event-source.js";
import { eventually } from "../support/wait.js";

const put = (url: string, key: string, value: string) =>
  http(url, "PUT", `/${key}`, { body: value, headers: { "content-type": "text/plain" } });
const values = (ms: readonly SseMessage[]): unknown[] =>
  ms.map((m) => (JSON.parse(m.data) as { value: unknown }).value);
const ID = /^[0-9a-f]{8}-\d+$/;
const seqOf = (id: string): number => Number(id.slice(id.lastIndexOf("-") + 1));

describe("SSE resume on one router", () => {
  let z: ZestProcess;
  /** A router whose log keeps 3 events. */
  let small: ZestProcess;
  before(async () => {
    [z, small] = await Promise.all([
      startZest(["--cfg", "plugins/rest/sse:{retry_ms:1500}"]),
      startZest(["--cfg", "plugins/rest/sse:{resume_log:3}"]),
    ]);
  });
  after(() => Promise.all([z.stop(), small.stop()]));

  test("every event carries an id, increasing; the stream starts with a retry hint", async () => {
    const es = await TestEventSource.open(`${z.url}/ids/**`);
    try {
      await put(z.url, "ids/a", "1");
      await put(z.url, "ids/b", "2");
      const [a, b] = await es.next(2);
      assert.match(a!.id, ID);
      assert.match(b!.id, ID);
      assert.ok(seqOf(b!.id) > seqOf(a!.id));
      assert.equal(es.retry, 1500);
    } finally {
      es.close();
    }
  });

  test("a client reconnecting with Last-Event-ID gets exactly the missed events that match its selector, in order, then the live stream", async () => {
    // Another stream keeps a wider selector watched, so the log also holds events this client must not get.
    const wide = await openSse(`${z.url}/r/**`);
    const es = await TestEventSource.open(`${z.url}/r/mine/**`);
    try {
      await put(z.url, "r/mine/a", "before");
      assert.deepEqual(values(await es.next(1)), ["before"]);
      es.disconnect();
      await put(z.url, "r/mine/a", "m1");
      await put(z.url, "r/other", "not mine");
      await put(z.url, "r/mine/b", "m2");
      await http(z.url, "DELETE", "/r/mine/a");
      await put(z.url, "r/mine/c", "m3");
      await es.reconnect();
      const missed = await es.next(4);
      assert.deepEqual(
        missed.map((m) => m.event),
        ["PUT", "PUT", "DELETE", "PUT"],
      );
      assert.deepEqual(values(missed), ["m1", "m2", "", "m3"]);
      assert.deepEqual(
        missed.map((m) => (JSON.parse(m.data) as { key: string }).key),
        ["r/mine/a", "r/mine/b", "r/mine/a", "r/mine/c"],
      );
      const seqs = missed.map((m) => seqOf(m.id));
      assert.deepEqual(
        [...seqs].sort((x, y) => x - y),
        seqs,
        "in order",
      );
      await put(z.url, "r/mine/d", "live");
      assert.deepEqual(values(await es.next(1)), ["live"]);
      assert.equal(es.pending().length, 0, "nothing twice");
    } finally {
      es.close();
      wide.close();
    }
  });

  test("the _last_event_id parameter resumes like the header", async () => {
    const es = await TestEventSource.open(`${z.url}/p/**`);
    await put(z.url, "p/a", "seen");
    const [seen] = await es.next(1);
    es.close();
    await put(z.url, "p/a", "missed1");
    await put(z.url, "p/b", "missed2");
    const again = await TestEventSource.open(`${z.url}/p/**?_last_event_id=${encodeURIComponent(seen!.id)}`);
    try {
      assert.deepEqual(values(await again.next(2)), ["missed1", "missed2"]);
    } finally {
      again.close();
    }
  });

  test("a client that saw no event before a blip still gets what happened meanwhile (the stream tells its position first)", async () => {
    const es = await TestEventSource.open(`${z.url}/quiet/**`);
    try {
      await eventually(() => es.lastEventId !== "", 2_000, "the position");
      es.disconnect();
      await put(z.url, "quiet/a", "while away");
      await es.reconnect();
      assert.deepEqual(values(await es.next(1)), ["while away"]);
    } finally {
      es.close();
    }
  });

  test("an id from another router or an earlier run gets an explicit RESET, with an id that resumes from now", async () => {
    const es = await TestEventSource.open(`${z.url}/reset/**`, { lastEventId: "0badc0de-12" });
    try {
      const [reset] = await es.next(1);
      assert.equal(reset!.event, "RESET");
      assert.match(reset!.id, ID);
      assert.equal((JSON.parse(reset!.data) as { last_event_id: string }).last_event_id, "0badc0de-12");
      es.disconnect();
      await put(z.url, "reset/a", "after the reset");
      await es.reconnect();
      assert.deepEqual(values(await es.next(1)), ["after the reset"], "the RESET's id is a valid position");
    } finally {
      es.close();
    }
  });

  test("an id older than the log gets RESET, not a silent gap", async () => {
    const es = await TestEventSource.open(`${small.url}/old/**`);
    try {
      await put(small.url, "old/a", "0");
      await es.next(1);
      es.disconnect();
      for (let i = 1; i <= 5; i++) await put(small.url, "old/a", String(i));
      await es.reconnect();
      const [first] = await es.next(1);
      assert.equal(first!.event, "RESET");
      assert.match(JSON.parse(first!.data).reason as string, /older than the resume log/);
      await put(small.url, "old/a", "live");
      assert.deepEqual(values(await es.next(1)), ["live"]);
    } finally {
      es.close();
    }
  });

  test("a key expression nobody watched during the gap gets RESET", async () => {
    const es = await TestEventSource.open(`${z.url}/watched/**`);
    await put(z.url, "watched/a", "1");
    const [seen] = await es.next(1);
    es.close();
    await put(z.url, "unwatched/a", "2");
    const other = await TestEventSource.open(`${z.url}/unwatched/**`, { lastEventId: seen!.id });
    try {
      const [first] = await other.next(1);
      assert.equal(first!.event, "RESET");
    } finally {
      other.close();
    }
  });
});

describe("SSE resume on a router in a NATS cluster", () => {
  let cluster: NatsCluster;
  let a: ZestProcess;
  let b: ZestProcess;
  before(async () => {
    cluster = await startNatsCluster({ size: 1, jetstream: false });
    [a, b] = await Promise.all([
      startZest(["--id", "A1", "--nats", cluster.urls[0]!]),
      startZest(["--id", "B1", "--nats", cluster.urls[0]!]),
    ]);
  });
  after(async () => {
    await Promise.all([a?.stop(), b?.stop()]);
    await cluster?.stop();
  });

  test("samples written on another router are replayed by the router the client reconnects to", async () => {
    const es = await TestEventSource.open(`${a.url}/cl/**`);
    try {
      await eventually(
        async () => (await put(b.url, "cl/probe", "p")).status === 200 && es.pending().length > 0,
        5_000,
        "B's samples to reach A",
      );
      await es.next(es.pending().length);
      es.disconnect();
      await put(b.url, "cl/x", "from B 1");
      await put(b.url, "cl/y", "from B 2");
      // B's put resolves once A acknowledged it, so A has logged both.
      await es.reconnect();
      assert.deepEqual(values(await es.next(2)), ["from B 1", "from B 2"]);
    } finally {
      es.close();
    }
  });
});
