// The pico harness itself, inside the loopback-only namespace: multicast stays on lo, a pico
// program's lines are collected and awaited, and a program is always cleaned up.
import assert from "node:assert/strict";
import { createSocket } from "node:dgram";
import { once } from "node:events";
import { test } from "node:test";
import { interfaces, netnsSkip } from "./netns.js";
import { picoSkip, runPico } from "./pico.js";

test("the namespace holds only lo", { skip: netnsSkip() }, () => {
  assert.deepEqual(interfaces(), ["lo"]);
});

test("z_scout's SCOUT reaches a multicast listener on lo, and its verdict line is awaited", {
  skip: picoSkip("z_scout"),
}, async () => {
  const sock = createSocket({ type: "udp4", reuseAddr: true });
  try {
    sock.bind(7446);
    await once(sock, "listening");
    sock.addMembership("224.0.0.224", "127.0.0.1");
    const got = once(sock, "message") as Promise<[Buffer]>;
    const scout = runPico("z_scout");
    try {
      const [msg] = await got;
      // SCOUT (message id 0x01), protocol version 0x09.
      assert.equal(msg[0]! & 0x1f, 0x01);
      assert.equal(msg[1], 0x09);
      assert.match(await scout.waitFor(/Did not find any zenoh process/, 10_000), /Did not find/);
      assert.equal(await scout.exited(), 0);
      assert.ok(scout.lines().includes("Scouting..."), scout.lines().join("\n"));
    } finally {
      await scout.stop();
    }
  } finally {
    sock.close();
  }
});

test("waitFor rejects, quoting the output, when the program exits before the line", {
  skip: picoSkip("z_scout"),
}, async () => {
  const scout = runPico("z_scout");
  try {
    await assert.rejects(scout.waitFor(/never printed/, 10_000), /exited \(0\) before printing[\s\S]*Did not find/);
  } finally {
    await scout.stop();
  }
});

test("waitFor rejects after its timeout, and stop kills a running program", { skip: picoSkip("z_scout") }, async () => {
  const scout = runPico("z_scout");
  await assert.rejects(scout.waitFor(/never printed/, 100), /no line matching .* within 100 ms/);
  await scout.stop();
  // Killed by SIGTERM before its 1 s of scouting ended: no exit code.
  assert.equal(await scout.exited(), null);
  assert.equal(scout.proc.signalCode, "SIGTERM");
});
