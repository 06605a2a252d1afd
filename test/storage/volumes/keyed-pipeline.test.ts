/** KeyedPipeline: tasks of one key in order, one at a time; different keys concurrently, within the limit. */
import assert from "node:assert/strict";
import { test } from "node:test";
import { KeyedPipeline } from "../../../src/storage/volumes/keyed-pipeline.js";

/** A task that finishes when `release()` is called, recording when it started. */
function gate(log: string[], name: string): { task: () => Promise<string>; release: (fail?: boolean) => void } {
  let done!: (fail?: boolean) => void;
  const settled = new Promise<boolean | undefined>((r) => {
    done = r;
  });
  return {
    task: async () => {
      log.push(name);
      if (await settled) throw new Error(`${name} failed`);
      return name;
    },
    release: (fail) => done(fail),
  };
}

const turn = (): Promise<void> => new Promise((r) => setImmediate(r));

test("tasks of one key run one at a time in the order added; a failure does not stop the next", async () => {
  const p = new KeyedPipeline(10);
  const log: string[] = [];
  const [a1, a2, a3] = [gate(log, "a1"), gate(log, "a2"), gate(log, "a3")];
  const r1 = p.run("a", a1.task);
  const r2 = p.run("a", a2.task);
  const r3 = p.run("a", a3.task);
  await turn();
  assert.deepEqual(log, ["a1"]);
  assert.equal(p.running, 1);
  assert.equal(p.waiting, 2);
  a1.release(true);
  await assert.rejects(r1, /a1 failed/);
  await turn();
  assert.deepEqual(log, ["a1", "a2"]);
  a3.release();
  a2.release();
  assert.equal(await r2, "a2");
  assert.equal(await r3, "a3");
  assert.deepEqual(log, ["a1", "a2", "a3"]);
  assert.equal(p.running, 0);
  assert.equal(p.peak, 1);
});

test("tasks of different keys overlap up to the limit; the others start in arrival order as slots free", async () => {
  const p = new KeyedPipeline(2);
  const log: string[] = [];
  const gates = ["a", "b", "c", "d"].map((k) => gate(log, k));
  const runs = gates.map((g, i) => p.run(["a", "b", "c", "d"][i]!, g.task));
  await turn();
  assert.deepEqual(log, ["a", "b"]);
  assert.equal(p.running, 2);
  gates[1]!.release();
  await runs[1];
  await turn();
  assert.deepEqual(log, ["a", "b", "c"]);
  for (const g of gates) g.release();
  assert.deepEqual(await Promise.all(runs), ["a", "b", "c", "d"]);
  assert.equal(p.peak, 2);
  assert.equal(p.running, 0);
  assert.equal(p.waiting, 0);
});

test("a key's next task waits behind ready tasks of other keys when the limit is reached", async () => {
  const p = new KeyedPipeline(1);
  const log: string[] = [];
  const [a1, b1, a2] = [gate(log, "a1"), gate(log, "b1"), gate(log, "a2")];
  const runs = [p.run("a", a1.task), p.run("b", b1.task), p.run("a", a2.task)];
  a1.release();
  b1.release();
  a2.release();
  await Promise.all(runs);
  assert.deepEqual(log, ["a1", "b1", "a2"]);
});

test("a task that throws synchronously rejects its run and frees its slot", async () => {
  const p = new KeyedPipeline(1);
  await assert.rejects(
    p.run("a", () => {
      throw new Error("sync");
    }),
    /sync/,
  );
  assert.equal(await p.run("a", async () => 1), 1);
  assert.equal(p.running, 0);
  assert.throws(() => new KeyedPipeline(0), RangeError);
});
