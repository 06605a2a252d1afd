/**
 * Query deadlines on one shared timer (src/core/deadlines.ts): each fires once, not before its
 * time and at most a tick late; a cancelled one never fires.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { cancel, schedule } from "../../src/core/deadlines.js";

test("deadlines fire once each, not before their time; a cancelled one never", async () => {
  const fired: Array<[string, number]> = [];
  const start = performance.now();
  const at = (name: string) => () => fired.push([name, performance.now() - start]);
  schedule(60, at("60"));
  schedule(10, at("10"));
  const cancelled = schedule(30, at("cancelled"));
  cancel(cancelled);
  cancel(cancelled); // twice is harmless
  await sleep(400);
  // Two deadlines due in one tick fire in either order (a busy host can make a tick late).
  assert.deepEqual(fired.map(([name]) => name).sort(), ["10", "60"]);
  for (const [name, at] of fired) assert.ok(at >= Number(name), JSON.stringify(fired));
});

test("a deadline scheduled from another's expiry, and after the timer stopped, still fires", async () => {
  const fired: string[] = [];
  await new Promise<void>((resolve) => {
    schedule(5, () => {
      fired.push("first");
      schedule(5, () => {
        fired.push("second");
        resolve();
      });
    });
  });
  await sleep(100); // the ticker stops with nothing pending
  await new Promise<void>((resolve) => schedule(5, () => resolve()));
  assert.deepEqual(fired, ["first", "second"]);
});
