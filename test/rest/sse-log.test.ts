import assert from "node:assert/strict";
import { test } from "node:test";
import { getHeapStatistics, setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { ResumeLog } from "../../src/rest/sse-log.js";
import { rng } from "../support/rng.js";

setFlagsFromString("--expose-gc");

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

test("an event larger than the byte bound goes out but is not kept: a client that missed it gets a reset", () => {
  const log = new ResumeLog({ entries: 100, bytes: 300 });
  const since = log.mark();
  log.append("k", msg("small"));
  const beforeBig = log.lastId;
  const big = log.append("k", msg("x".repeat(400)));
  assert.match(big.frame.toString(), /x{400}/);
  assert.match((log.since(beforeBig, "k", since) as { reset: string }).reset, /older/);
  const afterBig = log.lastId;
  log.append("k", msg("next"));
  const r = log.since(afterBig, "k", since);
  assert.ok("events" in r);
  assert.deepEqual(
    text(r.events).map((t) => t.split("data: ")[1]),
    ["next\n\n"],
  );
});

test("replayed events are copies: the log moving on does not change what a resuming client was given", () => {
  const log = new ResumeLog({ entries: 4, bytes: 1 << 20 });
  const since = log.mark();
  const start = log.lastId;
  log.append("k", msg("one"));
  const r = log.since(start, "k", since) as { events: Array<{ frame: Buffer; chunk: Buffer }> };
  const before = r.events[0]!.chunk.toString();
  for (let i = 0; i < 20; i++) log.append("k", msg(`overwrite ${i}`));
  assert.equal(r.events[0]!.chunk.toString(), before);
});

test("the resume log agrees with a plain list through growth, wrap-around, eviction by count and by bytes, and keys of every width", () => {
  const random = rng(0x5e1095);
  const keys = ["a", "a/b", "é/ü", "long/" + "k".repeat(300), "日本/語"];
  for (let round = 0; round < 40; round++) {
    const entries = 1 + (random() % 64);
    const bytes = 64 + (random() % 4096);
    const log = new ResumeLog({ entries, bytes });
    const since = log.mark();
    // The model: every id with its key and frame, or a mark (no event).
    const model: Array<{ id: string; key?: string; frame?: string }> = [{ id: log.lastId }];
    for (let op = 0; op < 400; op++) {
      if (random() % 8 === 0) {
        log.mark();
        model.push({ id: log.lastId });
        continue;
      }
      const key = keys[random() % keys.length]!;
      const ev = log.append(key, msg("v".repeat(random() % 200)));
      model.push({ id: log.lastId, key, frame: ev.frame.toString() });
      // Ask from a random earlier id: either a reset, or exactly the model's events after it.
      const from = model[random() % model.length]!;
      const r = log.since(from.id, "**", since);
      const after = model.slice(model.indexOf(from) + 1).filter((m) => m.frame !== undefined);
      if ("reset" in r) {
        assert.match(r.reset, /older than the resume log/);
        // Only when the count bound, or the bytes the model's events would need, forced it.
        const needed = after.reduce((n, m) => n + Buffer.byteLength(m.key!) + Buffer.byteLength(m.frame!), 0);
        const span = model.length - 1 - model.indexOf(from);
        assert.ok(span > entries - 1 || needed > bytes, `round ${round} op ${op}: reset with room left`);
      } else {
        assert.deepEqual(
          text(r.events),
          after.map((m) => m.frame),
          `round ${round} op ${op}`,
        );
      }
    }
  }
});

test("the resume log keeps its events as bytes, not as JS objects: 10,000 kept events add little to the JS heap", () => {
  const gc = runInNewContext("gc") as () => void;
  // One log filled first, so that what compiling the path allocates is not counted.
  const warm = new ResumeLog({ entries: 100, bytes: 1 << 20 });
  for (let i = 0; i < 1_000; i++) warm.append(`k/${i % 7}`, msg(`value ${i}`));
  const log = new ResumeLog({ entries: 10_000, bytes: 16 << 20 });
  gc();
  const before = getHeapStatistics().used_heap_size;
  for (let i = 0; i < 10_000; i++) log.append(`k/${i % 7}`, msg(`value ${i}`));
  gc();
  const grown = getHeapStatistics().used_heap_size - before;
  assert.equal(log.size, 10_000);
  // An object per event (the event, its two buffers) was about 2.5 MB here.
  assert.ok(grown < 256 * 1024, `the JS heap grew by ${grown} bytes`);
});
