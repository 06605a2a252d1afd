// Outside the loopback-only namespace (the ordinary test run) the pico harness refuses to start
// a program, so that no test can scout on a real network.
import assert from "node:assert/strict";
import { test } from "node:test";
import { interfaces, loopbackOnly } from "./netns.js";
import { runPico } from "./pico.js";

test("runPico refuses to run a program outside a loopback-only namespace", {
  skip: loopbackOnly() ? "this machine has only lo: nothing to refuse" : false,
}, () => {
  assert.ok(interfaces().length > 1);
  assert.throws(() => runPico("z_scout"), /runs only inside a loopback-only network namespace/);
});
