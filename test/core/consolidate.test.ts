import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { test } from "node:test";
import { ReplyCollector } from "../../src/core/consolidate.js";
import { Encoding } from "../../src/core/encoding.js";
import type { Reply } from "../../src/core/reply.js";
import { Parameters, type Selector } from "../../src/core/selector.js";
import { Timestamp } from "../../src/core/timestamp.js";

const SELECTOR: Selector = { key: "c/**", parameters: new Parameters("") };

function ok(key: string, value: string, time?: number, id = "0A"): Reply {
  const sample = {
    key,
    kind: "put" as const,
    payload: Buffer.from(value),
    encoding: Encoding.TEXT_PLAIN,
    ...(time === undefined ? {} : { timestamp: new Timestamp(BigInt(time), id) }),
  };
  return { kind: "ok", sample };
}

function err(message: string): Reply {
  return { kind: "err", errorKind: "timeout", encoding: Encoding.TEXT_PLAIN, payload: Buffer.from(message) };
}

/** What a test compares: key=value, or err:message. */
function view(replies: readonly Reply[] | undefined): string[] | undefined {
  return replies?.map((r) =>
    r.kind === "ok" ? `${r.sample.key}=${r.sample.payload.toString()}` : `err:${r.payload.toString()}`,
  );
}

function collect(replies: readonly Reply[], consolidation: "latest" | "none"): ReplyCollector {
  const c = new ReplyCollector(SELECTOR, consolidation);
  for (const r of replies) c.add(r);
  return c;
}

test("resultNow consolidates a small answer at once: sorted by key, the newest of each key, ties to the first, errors last", () => {
  const replies = [
    err("router 0C did not answer"),
    ok("c/b", "b-old", 10),
    ok("c/a", "a-untimed"),
    ok("c/b", "b-new", 20),
    ok("c/a", "a-timed", 5),
    ok("c/c", "c-first", 7, "0A"),
    ok("c/c", "c-second", 7, "0A"),
    ok("c/d", "d-low-id", 7, "0A"),
    ok("c/d", "d-high-id", 7, "0B"),
    ok("other/x", "outside the query"),
  ];
  assert.deepEqual(view(collect(replies, "latest").resultNow()), [
    "c/a=a-timed",
    "c/b=b-new",
    "c/c=c-first",
    "c/d=d-high-id",
    "err:router 0C did not answer",
  ]);
  // `none` keeps every reply of a key, in arrival order.
  assert.deepEqual(view(collect(replies, "none").resultNow()), [
    "c/a=a-untimed",
    "c/a=a-timed",
    "c/b=b-old",
    "c/b=b-new",
    "c/c=c-first",
    "c/c=c-second",
    "c/d=d-low-id",
    "c/d=d-high-id",
    "err:router 0C did not answer",
  ]);
  assert.deepEqual(view(collect([], "latest").resultNow()), []);
  assert.deepEqual(view(collect([ok("c/one", "v", 1)], "latest").resultNow()), ["c/one=v"]);
});

test("resultNow gives what result() gives, and leaves a large answer to result()", async () => {
  // A fixed pseudo-random sequence: the same replies in both collectors, many keys repeated.
  let seed = 7;
  const next = (n: number): number => {
    seed = (seed * 1103515245 + 12345) % 2147483648;
    return seed % n;
  };
  for (const size of [2, 3, 17, 100, 256, 257, 600]) {
    const replies: Reply[] = [];
    for (let i = 0; i < size; i++) {
      const untimed = next(5) === 0;
      replies.push(ok(`c/k${next(size)}`, `v${i}`, untimed ? undefined : next(4), next(2) === 0 ? "0A" : "0B"));
      if (next(20) === 0) replies.push(err(`e${i}`));
    }
    for (const consolidation of ["latest", "none"] as const) {
      const now = collect(replies, consolidation).resultNow();
      const later = await collect(replies, consolidation).result();
      if (size > 256) assert.equal(now, undefined, `${size} replies`);
      else assert.deepEqual(view(now), view(later), `${size} replies, ${consolidation}`);
    }
  }
});
