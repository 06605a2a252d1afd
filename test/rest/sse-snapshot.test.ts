/**
 * SSE with `_snapshot=true` (docs/sse.md, "Snapshot then live") against a real router and
 * server: the current values first, `SNAPSHOT_END`, then the live changes, with no gap and no
 * duplicate under concurrent writes, and resume after a snapshot.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { Sample } from "../../src/core/sample.js";
import { Session } from "../../src/core/session.js";
import { forEachSseBlock, http, sseField } from "../support/http.js";
import { routerForSuite, TEXT } from "../support/router.js";

/** A PUT event's key and value (the values written are decimal counters, as text). */
function entry(e: Ev): { key: string; value: number } {
  const { key, value } = JSON.parse(e.data) as { key: string; value: string };
  return { key, value: Number(value) };
}

interface Ev {
  id: string | undefined;
  event: string;
  data: string;
}

/** An SSE stream read with fetch, keeping each event's own `id:` line. */
async function stream(url: string, headers: Record<string, string> = {}) {
  const ac = new AbortController();
  const res = await fetch(url, { headers: { accept: "text/event-stream", ...headers }, signal: ac.signal });
  const events: Ev[] = [];
  void forEachSseBlock(res, (block) => {
    let id: string | undefined;
    let event = "message";
    let data: string | undefined;
    for (const line of block.split("\n")) {
      const { field, value } = sseField(line);
      if (field === "id") id = value;
      else if (field === "event") event = value;
      else if (field === "data") data = value;
    }
    if (data !== undefined) events.push({ id, event, data });
  });
  return {
    status: res.status,
    events,
    async until(pred: (evs: Ev[]) => boolean, ms = 10_000): Promise<void> {
      const end = Date.now() + ms;
      while (!pred(events)) {
        if (Date.now() > end) throw new Error(`timed out with ${events.length} events`);
        await new Promise((r) => setTimeout(r, 20));
      }
    },
    close: () => ac.abort(),
  };
}

describe("SSE: snapshot then live", () => {
  const suite = routerForSuite();

  it("sends the current values as PUT events without ids, SNAPSHOT_END with the position, then live changes", async () => {
    await http(suite.url, "PUT", "/snap/a", { body: "1", headers: TEXT });
    await http(suite.url, "PUT", "/snap/b", { body: "2", headers: TEXT });
    const s = await stream(`${suite.url}/snap/**?_snapshot=true`);
    assert.equal(s.status, 200);
    await s.until((e) => e.some((x) => x.event === "SNAPSHOT_END"));
    const snap = s.events.splice(0);
    assert.deepEqual(
      snap
        .slice(0, 2)
        .map((e) => [e.event, e.id, (JSON.parse(e.data) as { key: string }).key])
        .sort(),
      [
        ["PUT", undefined, "snap/a"],
        ["PUT", undefined, "snap/b"],
      ],
    );
    assert.equal(snap[2]!.event, "SNAPSHOT_END");
    assert.deepEqual(JSON.parse(snap[2]!.data), { count: 2 });
    assert.match(snap[2]!.id ?? "", /^[0-9a-f]{8}-\d+$/);
    await http(suite.url, "DELETE", "/snap/a");
    await s.until((e) => e.length === 1);
    assert.equal(s.events[0]!.event, "DELETE");
    assert.ok(s.events[0]!.id, "live events carry ids");
    s.close();
  });

  it("an empty snapshot is just SNAPSHOT_END; a bad _snapshot is a 400", async () => {
    const s = await stream(`${suite.url}/snap-none/**?_snapshot=true`);
    await s.until((e) => e.length === 1);
    assert.equal(s.events[0]!.event, "SNAPSHOT_END");
    assert.deepEqual(JSON.parse(s.events[0]!.data), { count: 0 });
    s.close();
    const bad = await http(suite.url, "GET", "/snap/**?_snapshot=yes", { headers: { accept: "text/event-stream" } });
    assert.equal(bad.status, 400);
    assert.match(bad.text, /_snapshot takes true or false/);
  });

  it("Last-Event-ID after a snapshot resumes with the missed events only; an unknown id gets RESET then a snapshot", async () => {
    await http(suite.url, "PUT", "/resnap/a", { body: "1", headers: TEXT });
    const s = await stream(`${suite.url}/resnap/**?_snapshot=true`);
    await s.until((e) => e.some((x) => x.event === "SNAPSHOT_END"));
    await http(suite.url, "PUT", "/resnap/a", { body: "2", headers: TEXT });
    await s.until((e) => e.length === 3);
    const lastId = s.events[2]!.id!;
    s.close();
    await http(suite.url, "PUT", "/resnap/a", { body: "3", headers: TEXT });
    const again = await stream(`${suite.url}/resnap/**?_snapshot=true`, { "last-event-id": lastId });
    await again.until((e) => e.length >= 1);
    await new Promise((r) => setTimeout(r, 200));
    assert.deepEqual(
      again.events.map((e) => [e.event, (JSON.parse(e.data) as { value: unknown }).value]),
      [["PUT", "3"]],
      "only the missed event: no snapshot",
    );
    again.close();
    const reset = await stream(`${suite.url}/resnap/**?_snapshot=true`, { "last-event-id": "00000000-5" });
    await reset.until((e) => e.length >= 3);
    assert.deepEqual(
      reset.events.map((e) => e.event),
      ["RESET", "PUT", "SNAPSHOT_END"],
    );
    assert.equal(reset.events[0]!.id, undefined, "the RESET of a snapshot stream sets no position");
    reset.close();
  });

  it("a change the snapshot already holds, landing during the read, is not sent again; one it lacks is", async () => {
    // A queryable that answers late: while the stream's read runs, it writes late/a and late/b,
    // then answers with late/a as written (same timestamp) but not late/b.
    const app = new Session(suite.zest.router, "late");
    let written: Sample | undefined;
    const sub = app.declareSubscriber("late/a", (sample) => {
      written = sample;
    });
    const q = app.declareQueryable("late/**", async (query) => {
      await app.put("late/a", "1", { encoding: "text/plain" });
      await app.put("late/b", "2", { encoding: "text/plain" });
      query.replySample(written!);
    });
    const s = await stream(`${suite.url}/late/**?_snapshot=true`);
    await s.until((e) => e.length >= 3);
    await new Promise((r) => setTimeout(r, 200));
    assert.deepEqual(
      s.events.map((e) => [e.event, e.event === "PUT" ? entry(e).key : ""]),
      [
        ["PUT", "late/a"],
        ["SNAPSHOT_END", ""],
        ["PUT", "late/b"],
      ],
    );
    s.close();
    q.undeclare();
    sub.undeclare();
  });

  it("a live sample held during a snapshot goes out with the id the other streams got for it", async () => {
    const app = new Session(suite.zest.router, "held");
    const plain = await stream(`${suite.url}/held/**`);
    // Writes while the snapshot stream's read runs, and answers nothing.
    const q = app.declareQueryable("held/*", async () => {
      await app.put("held/a", "1", { encoding: "text/plain" });
    });
    const snap = await stream(`${suite.url}/held/*?_snapshot=true`);
    await snap.until((e) => e.some((x) => x.event === "PUT"));
    await plain.until((e) => e.some((x) => x.event === "PUT"));
    const fromSnap = snap.events.find((x) => x.event === "PUT")!;
    const fromPlain = plain.events.find((x) => x.event === "PUT")!;
    assert.match(fromPlain.id ?? "", /^[0-9a-f]{8}-\d+$/);
    assert.equal(fromSnap.id, fromPlain.id, "one sample, one id");
    assert.equal(snap.events.filter((x) => x.event === "PUT").length, 1);
    snap.close();
    plain.close();
    q.undeclare();
  });

  it("under 10,000 concurrent writes: every key's versions arrive once each, in order, with no gap", async () => {
    const KEYS = 50;
    const VERSIONS = 200;
    const writer = new Session(suite.zest.router, "writer");
    let written = 0;
    const writeKey = async (k: number): Promise<void> => {
      for (let v = 0; v < VERSIONS; v++) {
        await writer.put(`load/k${k}`, String(v), { encoding: "text/plain" });
        written++;
        if (v % 20 === 0) await new Promise((r) => setImmediate(r));
      }
    };
    const writes = Promise.all(Array.from({ length: KEYS }, (_, k) => writeKey(k)));
    // Open mid-way, while the writers run.
    while (written < 2_000) await new Promise((r) => setImmediate(r));
    const s = await stream(`${suite.url}/load/**?_snapshot=true`);
    await writes;
    assert.equal(written, KEYS * VERSIONS);
    const last = (evs: Ev[]) => {
      const seen = new Map<string, number>();
      for (const e of evs)
        if (e.event === "PUT") {
          const { key, value } = entry(e);
          seen.set(key, value);
        }
      return seen;
    };
    await s.until((evs) => {
      const seen = last(evs);
      return seen.size === KEYS && [...seen.values()].every((v) => v === VERSIONS - 1);
    }, 30_000);
    s.close();
    const end = s.events.findIndex((e) => e.event === "SNAPSHOT_END");
    assert.ok(end !== -1);
    const snapshot = new Map<string, number>();
    for (const e of s.events.slice(0, end)) {
      const { key, value } = entry(e);
      assert.ok(!snapshot.has(key), `${key} twice in the snapshot`);
      snapshot.set(key, value);
    }
    assert.ok(snapshot.size > 0, "the stream opened after writes began");
    const live = new Map<string, number[]>();
    for (const e of s.events.slice(end + 1)) {
      assert.equal(e.event, "PUT");
      const { key, value } = entry(e);
      let vs = live.get(key);
      if (vs === undefined) {
        vs = [];
        live.set(key, vs);
      }
      vs.push(value);
    }
    let liveCount = 0;
    for (let k = 0; k < KEYS; k++) {
      const key = `load/k${k}`;
      const from = snapshot.has(key) ? snapshot.get(key)! + 1 : 0;
      const expected = Array.from({ length: VERSIONS - from }, (_, i) => from + i);
      assert.deepEqual(live.get(key) ?? [], expected, `${key}: after the snapshot's ${snapshot.get(key)}`);
      liveCount += expected.length;
    }
    assert.ok(liveCount > 0, "some writes landed after the stream opened");
  });
});
