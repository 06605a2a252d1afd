/**
 * `streamLayout` (src/rest/layout.ts): the chunks it writes make exactly `layoutBody`'s text, and
 * it gives the event loop back even when the sink drains at once.
 */
import assert from "node:assert/strict";
import { EventEmitter } from "node:events";
import { test } from "node:test";
import { CHUNK_CHARS, layoutBody, streamLayout, type Layout } from "../../src/rest/layout.js";

function layoutOf(n: number, empty?: string): Layout {
  return {
    contentType: "application/json",
    open: "[\n",
    separator: ",\n",
    close: "\n]\n",
    empty,
    count: n,
    entry: (i) => `{ "i": ${i}, "pad": "${"x".repeat(i % 50)}" }`,
  };
}

/** A sink like a socket that takes every chunk at once but reports it full: `drain` on the next tick. */
class EagerSink extends EventEmitter {
  readonly chunks: string[] = [];
  destroyed = false;
  write(chunk: string): boolean {
    this.chunks.push(chunk);
    process.nextTick(() => this.emit("drain"));
    return false;
  }
}

test("the streamed chunks make the same text as the body built at once, at every size", async () => {
  for (const [n, empty] of [
    [0, undefined],
    [0, "[]"],
    [1, undefined],
    [2048, undefined],
    [30_000, "[]"],
  ] as const) {
    const layout = layoutOf(n, empty);
    const sink = new EagerSink();
    assert.equal(await streamLayout(layout, sink), true);
    assert.equal(sink.chunks.join(""), await layoutBody(layout), `n = ${n}`);
    for (const c of sink.chunks.slice(0, -1)) assert.ok(c.length <= CHUNK_CHARS + 100, `a chunk of ${c.length}`);
  }
});

test("a sink that drains on the next tick does not keep timers and I/O waiting until the end", async () => {
  const sink = new EagerSink();
  let ticks = 0;
  let streaming = true;
  const timer = setInterval(() => {
    if (streaming) ticks++;
  }, 0);
  try {
    // Large enough to take many slices (each a few milliseconds).
    const layout = { ...layoutOf(300_000), entry: (i: number) => JSON.stringify({ i, s: "y".repeat(200) }) };
    assert.equal(await streamLayout(layout, sink), true);
    streaming = false;
  } finally {
    clearInterval(timer);
  }
  assert.ok(ticks > 0, "no timer ran while the body was streamed");
});

test("a sink destroyed mid-stream stops it", async () => {
  const sink = new EagerSink();
  let rendered = 0;
  const layout = {
    ...layoutOf(100_000),
    entry: (i: number) => {
      rendered++;
      if (i === 5000) sink.destroyed = true;
      return `"${"z".repeat(100)}"`;
    },
  };
  assert.equal(await streamLayout(layout, sink), false);
  assert.ok(rendered < 100_000, `${rendered} entries rendered`);
});
