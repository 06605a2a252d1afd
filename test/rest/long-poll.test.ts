/**
 * Long-poll GETs (docs/long-poll.md) against a real router and server: the wake on a matching
 * write, the timeout (304), a client that leaves, the caps and malformed durations.
 */
import assert from "node:assert/strict";
import nodeHttp from "node:http";
import { after, before, describe, it } from "node:test";
import { silentLogger } from "../../src/core/log.js";
import { defaultStartOptions } from "../../src/defaults.js";
import { startZest, type Zest } from "../../src/runtime.js";
import { getJson, getWithBody, http } from "../support/http.js";
import { eventually } from "../support/wait.js";

const TEXT = { "content-type": "text/plain" };

describe("long-poll GETs (_wait with If-None-Match)", () => {
  let z: Zest;
  let url: string;
  before(async () => {
    z = await startZest(
      {
        plugins: {
          rest: {
            http_port: "127.0.0.1:0",
            long_poll: { max_wait_ms: 60_000, max_waits: 100, max_waits_per_address: 3 },
          },
        },
      },
      { ...defaultStartOptions(), logger: silentLogger },
    );
    url = z.restUrl!;
  });
  after(async () => {
    await z?.close();
  });

  const parked = async (): Promise<number> => {
    const { entries } = await getJson(url, "/@/router/local/status/plugins/rest/port");
    return (entries[0]!.value as { long_polls: number }).long_polls;
  };
  const poll = (path: string, etag: string, signal?: AbortSignal) =>
    fetch(url + path, { headers: { "if-none-match": etag }, signal }).then(async (r) => ({
      status: r.status,
      etag: r.headers.get("etag"),
      text: await r.text(),
    }));

  it("a write on the key wakes the wait, which answers the new value and ETag", async () => {
    await http(url, "PUT", "/lp/a", { body: "v1", headers: TEXT });
    const first = await http(url, "GET", "/lp/a?_wait=10s");
    assert.equal(first.status, 200, "no If-None-Match: answered at once");
    const etag = first.headers.get("etag")!;
    assert.ok(etag);
    const waiting = poll("/lp/a?_wait=10s", etag);
    await eventually(async () => (await parked()) === 1, 5000, "the GET to park");
    // A write elsewhere does not end it.
    await http(url, "PUT", "/lp/other", { body: "x", headers: TEXT });
    await new Promise((r) => setTimeout(r, 100));
    assert.equal(await parked(), 1, "a write on another key leaves the wait parked");
    const t0 = Date.now();
    await http(url, "PUT", "/lp/a", { body: "v2", headers: TEXT });
    const woke = await waiting;
    assert.ok(Date.now() - t0 < 2000, "woken by the write, not by the timer");
    assert.equal(woke.status, 200);
    assert.match(woke.text, /"v2"/);
    assert.notEqual(woke.etag, etag);
    assert.equal(await parked(), 0);
  });

  it("an ETag that no longer matches answers at once", async () => {
    await http(url, "PUT", "/lp/b", { body: "v1", headers: TEXT });
    const old = (await http(url, "GET", "/lp/b?_wait=1s")).headers.get("etag")!;
    await http(url, "PUT", "/lp/b", { body: "v2", headers: TEXT });
    const t0 = Date.now();
    const r = await poll("/lp/b?_wait=30s", old);
    assert.equal(r.status, 200);
    assert.ok(Date.now() - t0 < 1000);
  });

  it("on a key expression the ETag covers the whole answer: a delete wakes it, as does a new key", async () => {
    await http(url, "PUT", "/lpw/a", { body: "1", headers: TEXT });
    await http(url, "PUT", "/lpw/b", { body: "2", headers: TEXT });
    const first = await http(url, "GET", "/lpw/**?_wait=1s");
    const etag = first.headers.get("etag")!;
    assert.match(etag, /^"w2-[0-9a-f]{16}"$/);
    const waiting = poll("/lpw/**?_wait=10s", etag);
    await eventually(async () => (await parked()) === 1, 5000, "the GET to park");
    await http(url, "DELETE", "/lpw/a");
    const woke = await waiting;
    assert.equal(woke.status, 200);
    assert.equal((JSON.parse(woke.text) as unknown[]).length, 1);
    assert.match(woke.etag!, /^"w1-/);
    // A key nothing holds has the empty answer's ETag: a long-poll waits for it to appear.
    const none = await http(url, "GET", "/lpw/c?_wait=1s");
    const appear = poll("/lpw/c?_wait=10s", none.headers.get("etag")!);
    await eventually(async () => (await parked()) === 1, 5000, "the GET to park");
    await http(url, "PUT", "/lpw/c", { body: "3", headers: TEXT });
    assert.match((await appear).text, /"3"/);
    // Without _wait a key expression's GET keeps ignoring condition headers, as before.
    const plain = await http(url, "GET", "/lpw/**", { headers: { "if-none-match": "*" } });
    assert.equal(plain.status, 200);
    assert.equal(plain.headers.get("etag"), null);
    // `*` never matches the empty answer: a long-poll on nothing answers at once.
    const star = await http(url, "GET", "/lpw/none/**?_wait=5s", { headers: { "if-none-match": "*" } });
    assert.equal(star.status, 200);
    assert.equal(star.text.trim().replace(/\s/g, ""), "[]");
  });

  it("a wait that sees no change ends at its duration with 304 and the same ETag", async () => {
    await http(url, "PUT", "/lp/t", { body: "v", headers: TEXT });
    const etag = (await http(url, "GET", "/lp/t?_wait=1s")).headers.get("etag")!;
    const t0 = Date.now();
    const r = await poll("/lp/t?_wait=300ms", etag);
    const took = Date.now() - t0;
    assert.equal(r.status, 304);
    assert.equal(r.etag, etag);
    assert.ok(took >= 290 && took < 2000, `took ${took} ms`);
  });

  it("a client that leaves frees its wait at once", async () => {
    await http(url, "PUT", "/lp/gone", { body: "v", headers: TEXT });
    const etag = (await http(url, "GET", "/lp/gone?_wait=1s")).headers.get("etag")!;
    const ac = new AbortController();
    const waiting = poll("/lp/gone?_wait=60s", etag, ac.signal).catch(() => "aborted");
    await eventually(async () => (await parked()) === 1, 5000, "the GET to park");
    ac.abort();
    assert.equal(await waiting, "aborted");
    await eventually(async () => (await parked()) === 0, 1000, "the wait to be freed");
  });

  it("waits are capped per address: past the cap a 503 with a one-line reason, and the count holds", async () => {
    await http(url, "PUT", "/lp/cap", { body: "v", headers: TEXT });
    const etag = (await http(url, "GET", "/lp/cap?_wait=1s")).headers.get("etag")!;
    const ac = new AbortController();
    const held = [1, 2, 3].map(() => poll("/lp/cap?_wait=60s", etag, ac.signal).catch(() => undefined));
    await eventually(async () => (await parked()) === 3, 5000, "three GETs to park");
    const refused = await poll("/lp/cap?_wait=60s", etag);
    assert.equal(refused.status, 503);
    assert.match(refused.text, /^too many long-polls from .+ \(at most 3\); retry later\n$/);
    assert.equal(await parked(), 3);
    ac.abort();
    await Promise.all(held);
    await eventually(async () => (await parked()) === 0, 1000, "the waits to be freed");
  });

  it("malformed, oversized and too long durations are a 400", async () => {
    for (const [wait, reason] of [
      ["abc", /_wait takes a duration/],
      ["10h", /_wait takes a duration/],
      ["-1s", /_wait takes a duration/],
      ["1".repeat(40), /_wait takes a duration/],
      ["61s", /_wait is at most 60000 ms/],
      ["2m", /_wait is at most 60000 ms/],
    ] as const) {
      const r = await http(url, "GET", `/lp/a?_wait=${wait}`);
      assert.equal(r.status, 400, wait);
      assert.match(r.text, reason);
    }
    const body = await getWithBody(url, "/lp/a?_wait=1s", "x", TEXT);
    assert.equal(body.status, 400);
    assert.match(body.text, /takes no body/);
  });
});

describe("many parked long-polls", () => {
  let z: Zest;
  let url: string;
  before(async () => {
    z = await startZest(
      {
        plugins: {
          rest: { http_port: "127.0.0.1:0", long_poll: { max_waits: 1000, max_waits_per_address: 1000 } },
        },
      },
      { ...defaultStartOptions(), logger: silentLogger },
    );
    url = z.restUrl!;
  });
  after(async () => {
    await z?.close();
  });

  const timers = () => process.getActiveResourcesInfo().filter((r) => r === "Timeout").length;
  const parked = async (): Promise<number> => {
    const { entries } = await getJson(url, "/@/router/local/status/plugins/rest/port");
    return (entries[0]!.value as { long_polls: number }).long_polls;
  };

  it("share one deadline timer (no timer per wait), and each ends at its own duration, earliest first", async () => {
    await http(url, "PUT", "/lpm/k", { body: "v", headers: TEXT });
    const etag = (await http(url, "GET", "/lpm/k?_wait=1s")).headers.get("etag")!;
    const agent = new nodeHttp.Agent({ keepAlive: false, maxSockets: Number.POSITIVE_INFINITY });
    const before = timers();
    const ended: number[] = [];
    const t0 = Date.now();
    const polls = Array.from({ length: 200 }, (_, i) => {
      // Half wait 30 s, half 1.5 s: the short ones end first, at their own duration.
      const wait = i % 2 === 0 ? "30s" : "1500ms";
      return new Promise<number>((resolve, reject) => {
        const req = nodeHttp.request(
          `${url}/lpm/k?_wait=${wait}`,
          { agent, headers: { "if-none-match": etag } },
          (res) => {
            res.resume();
            res.on("end", () => {
              ended.push(Date.now() - t0);
              resolve(res.statusCode!);
            });
          },
        );
        req.on("error", reject);
        req.end();
      });
    });
    await eventually(async () => (await parked()) === 200, 10_000, "200 GETs to park");
    assert.ok(timers() - before <= 2, `${timers() - before} timers for 200 parked waits`);
    await eventually(() => ended.length === 100, 10_000, "the short waits to end");
    assert.ok(Math.min(...ended) >= 1400, `a 1.5 s wait ended after ${Math.min(...ended)} ms`);
    assert.equal(await parked(), 100, "the 30 s waits are still parked");
    await http(url, "PUT", "/lpm/k", { body: "w", headers: TEXT });
    const statuses = await Promise.all(polls);
    assert.deepEqual([statuses.filter((s) => s === 304).length, statuses.filter((s) => s === 200).length], [100, 100]);
    agent.destroy();
  });
});
