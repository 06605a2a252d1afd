/**
 * The zenoh-python test harness itself (test/support/zenoh-python.ts and clients/agent.py): its
 * failures are reported, not hung on.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import type { ZestProcess } from "../support/zest-process.js";
import { type Agent, pattern, pythonSkip, sha256, startAgent, startZestForPython } from "../support/zenoh-python.js";

describe("the zenoh-python agent", { skip: pythonSkip() }, () => {
  let zest: ZestProcess;
  let ep: string;
  let a: Agent;

  before(async () => {
    ({ zest, ep } = await startZestForPython());
    a = await startAgent("client", ep);
  });
  after(async () => {
    await a?.stop();
    await zest?.stop();
  });

  test("an unknown command and a failing one are answered with their error", async () => {
    await assert.rejects(a.call("no_such_op"), /unknown op 'no_such_op'/);
    await assert.rejects(a.call("put", { key: "py//empty-chunk", payload: "x" }), /zenoh-python put failed/);
    // The agent goes on.
    assert.equal((await a.call<{ zid: string }>("info")).zid, a.zid);
  });

  test("the large values it builds are the ones the tests expect", async () => {
    await a.call("sub", { name: "p", key: "py/agent/p" });
    const b = await startAgent("client", ep);
    try {
      await b.call("put", { key: "py/agent/p", payload_size: 1_000, payload_seed: 7 });
    } finally {
      await b.stop();
    }
    const s = await a.waitSample("p", "py/agent/p");
    assert.equal(s.payload.len, 1_000);
    assert.equal(s.payload.sha256, sha256(pattern(1_000, 7)));
    assert.equal(Buffer.from(s.payload.b64!, "base64").compare(pattern(1_000, 7)), 0);
  });

  test("an agent that cannot connect fails to start, quoting why, without hanging", async () => {
    const started = Date.now();
    await assert.rejects(startAgent("client", "tcp/127.0.0.1:1"), /exited \(\d+\) before open session/);
    assert.ok(Date.now() - started < 15_000);
  });
});
