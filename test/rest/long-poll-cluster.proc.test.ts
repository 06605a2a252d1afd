/**
 * Long-poll GETs across routers (docs/long-poll.md, "Waking"): two real `zest` routers over a
 * real `nats-server`, the storage on A only; a wait parked on B is woken by A's writes.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { getValues, memoryStorage, NO_STORAGES, putText, sleep } from "../fabric/helpers.js";
import { getJson, http } from "../support/http.js";
import { eventually } from "../support/wait.js";
import { routerPairOverNats } from "../support/router-pair.js";

describe("long-poll across two routers over NATS", () => {
  /** a: a memory storage on lpc/**; b: no storage. */
  const pair = routerPairOverNats(
    (nats) => [
      ["--id", "a280", "--nats", nats, ...NO_STORAGES, ...memoryStorage("lpc_a", "lpc/**")],
      ["--id", "b280", "--nats", nats, ...NO_STORAGES],
    ],
    (_a, b) =>
      eventually(
        async () =>
          (await putText(b.url, "lpc/ready", "1")).status === 200 &&
          "lpc/ready" in (await getValues(b.url, "lpc/ready")).values,
        10_000,
        "the routers to meet",
      ),
  );

  const parkedOn = async (url: string): Promise<number> => {
    const { entries } = await getJson(url, "/@/router/local/status/plugins/rest/port");
    return (entries[0]!.value as { long_polls: number }).long_polls;
  };
  const poll = (url: string, path: string, etag: string) => {
    const t0 = Date.now();
    return fetch(url + path, { headers: { "if-none-match": etag } }).then(async (r) => ({
      status: r.status,
      etag: r.headers.get("etag"),
      text: await r.text(),
      ms: Date.now() - t0,
    }));
  };

  test("a wait on B is woken by a matching write on A, answers A's value with a new ETag; other keys leave it parked", async () => {
    await putText(pair.a.url, "lpc/k", "v1");
    const first = await http(pair.b.url, "GET", "/lpc/k?_wait=1s");
    assert.equal(first.status, 200);
    assert.match(first.text, /"v1"/);
    const etag = first.headers.get("etag")!;
    assert.ok(etag);
    const waiting = poll(pair.b.url, "/lpc/k?_wait=20s", etag);
    await eventually(async () => (await parkedOn(pair.b.url)) === 1, 5_000, "the GET to park on B");
    // A write on A of a key the wait does not cover leaves it parked.
    assert.equal((await putText(pair.a.url, "lpc/other", "x")).status, 200);
    await sleep(300);
    assert.equal(await parkedOn(pair.b.url), 1, "a non-matching write on A does not wake B's wait");
    assert.equal((await putText(pair.a.url, "lpc/k", "v2")).status, 200);
    const woke = await waiting;
    assert.equal(woke.status, 200);
    assert.ok(woke.ms < 10_000, `woken by the write, not the timer (${woke.ms} ms)`);
    assert.match(woke.text, /"v2"/, "B's answer after the wake holds A's write");
    assert.notEqual(woke.etag, etag);
    assert.equal(await parkedOn(pair.b.url), 0);
  });

  test("a wait on a key expression on B is woken by a new key written on A; its ETag covers the write", async () => {
    await putText(pair.a.url, "lpc/w/1", "one");
    const first = await http(pair.b.url, "GET", "/lpc/w/**?_wait=1s");
    const etag = first.headers.get("etag")!;
    assert.match(etag, /^"w1-/);
    const waiting = poll(pair.b.url, "/lpc/w/**?_wait=20s", etag);
    await eventually(async () => (await parkedOn(pair.b.url)) === 1, 5_000, "the GET to park on B");
    await putText(pair.a.url, "lpc/x/1", "elsewhere");
    await sleep(300);
    assert.equal(await parkedOn(pair.b.url), 1, "a write outside the expression leaves it parked");
    await putText(pair.a.url, "lpc/w/2", "two");
    const woke = await waiting;
    assert.equal(woke.status, 200);
    assert.ok(woke.ms < 10_000, `woken by the write (${woke.ms} ms)`);
    assert.match(woke.etag!, /^"w2-/);
    assert.match(woke.text, /"two"/);
    // Polling again with the new ETag parks; a delete on A wakes it.
    const again = poll(pair.b.url, "/lpc/w/**?_wait=20s", woke.etag!);
    await eventually(async () => (await parkedOn(pair.b.url)) === 1, 5_000, "the GET to park again");
    assert.equal((await http(pair.a.url, "DELETE", "/lpc/w/1")).status, 200);
    const deleted = await again;
    assert.equal(deleted.status, 200);
    assert.match(deleted.etag!, /^"w1-/);
  });
});
