import assert from "node:assert/strict";
import { test } from "node:test";
import { SerialQueue } from "../../src/core/serial-queue.js";

test("a serial queue runs tasks one at a time, in order, and a failure reaches its own caller only", async () => {
  const q = new SerialQueue();
  const log: string[] = [];
  let release!: () => void;
  const gate = new Promise<void>((r) => {
    release = r;
  });
  const first = q.run(async () => {
    log.push("first start");
    await gate;
    log.push("first end");
    return 1;
  });
  const second = q.run(() => {
    log.push("second");
    throw new Error("boom");
  });
  const third = q.run(() => {
    log.push("third");
    return "three";
  });
  await new Promise((r) => setImmediate(r));
  assert.deepEqual(log, ["first start"], "the second waits for the first");
  release();
  assert.equal(await first, 1);
  await assert.rejects(second, /boom/);
  assert.equal(await third, "three");
  assert.deepEqual(log, ["first start", "first end", "second", "third"]);
});
