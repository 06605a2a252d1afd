import assert from "node:assert/strict";
import { test } from "node:test";
import { ResumeLog } from "../../src/rest/sse-log.js";

const msg = (s: string): Buffer => Buffer.from(`event: PUT\ndata: ${s}\n\n`);
const text = (evs: Array<{ frame: Buffer }>): string[] => evs.map((e) => e.frame.toString());

test("the resume log frames each event once: the chunk holds the id line and the frame is a view into it", () => {
  const log = new ResumeLog({ entries: 4, bytes: 1 << 20 });
  const since = log.mark();
  const ev = log.append("a/b", msg("x"));
  assert.equal(ev.frame.toString(), `id: ${log.epoch}-${since + 1}\nevent: PUT\ndata: x\n\n`);
  assert.equal(ev.chunk.toString(), `${ev.frame.length.toString(16)}\r\n${ev.frame.toString()}\r\n`);
  assert.equal(ev.frame.buffer, ev.chunk.buffer, "one allocation");
});

test("the resume log replays the events after an id that match the key expression, skipping marks", () => {
  const log = new ResumeLog({ entries: 16, bytes: 1 << 20 });
  const since = log.mark();
  log.append("a/1", msg("1"));
  const last = log.lastId;
  log.append("b/1", msg("no"));
  log.mark();
  log.append("a/2", msg("2"));
  const r = log.since(last, "a/**", since);
  assert.ok("events" in r);
  assert.deepEqual(
    text(r.events).map((t) => t.split("data: ")[1]),
    ["2\n\n"],
  );
});

test("the resume log resets for another epoch, a future id, an unwatched gap and an evicted gap", () => {
  const log = new ResumeLog({ entries: 3, bytes: 1 << 20 });
  const since = log.mark();
  const first = log.lastId;
  assert.match((log.since("deadbeef-1", "a", since) as { reset: string }).reset, /another router/);
  assert.match((log.since(`${log.epoch}-99`, "a", since) as { reset: string }).reset, /newer/);
  assert.match((log.since("garbage", "a", since) as { reset: string }).reset, /not an event id/);
  assert.match((log.since(first, "a", undefined) as { reset: string }).reset, /not watching/);
  assert.match((log.since(first, "a", since + 1) as { reset: string }).reset, /not watching/);
  assert.deepEqual(log.since(first, "a", since), { events: [] });
  for (let i = 0; i < 4; i++) log.append("a", msg(String(i)));
  assert.match((log.since(first, "a", since) as { reset: string }).reset, /older than the resume log/);
  assert.equal(log.size, 3);
});

test("the resume log keeps to its byte bound, newest kept", () => {
  const log = new ResumeLog({ entries: 100, bytes: 200 });
  const since = log.mark();
  const start = log.lastId;
  for (let i = 0; i < 10; i++) log.append("k", msg("x".repeat(40)));
  assert.ok(log.size < 10 && log.size >= 1);
  assert.match((log.since(start, "k", since) as { reset: string }).reset, /older/);
});
