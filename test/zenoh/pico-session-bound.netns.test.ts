/**
 * Session-bound values with the real zenoh-pico programs (issue 27, docs/ttl-and-leases.md),
 * inside a loopback-only network namespace: the router's `session_bound.key_exprs` binds their
 * puts (pico's examples cannot choose an attachment), and an SSE client sees the DELETE when the
 * pico session ends: at once when the program exits or is killed (its socket closes), at the
 * lease pico announced (10 s) when it is frozen with its socket open.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { silentLogger } from "../../src/core/log.js";
import { startZest, type Zest } from "../../src/runtime.js";
import { TestEventSource } from "../rest/event-source.js";
import { picoSkip, picoPut, runPico } from "../support/pico.js";

const skip = picoSkip("z_put", "z_pub");
const LEASE_MS = 2000;
/** The lease pico announces in its OPEN (its `Z_TRANSPORT_LEASE`), by which zest expires it. */
const PICO_LEASE_MS = 10_000;

describe("session-bound values written by pico", { skip }, () => {
  let zest: Zest;
  let ep: string;
  let sse: TestEventSource;

  before(async () => {
    zest = await startZest(
      {
        plugins: { rest: { http_port: "127.0.0.1:0" } },
        listen: { endpoints: ["tcp/127.0.0.1:0"] },
        session_bound: { key_exprs: ["pico/bound/**"] },
        transport: { link: { tx: { lease: LEASE_MS } } },
      } as never,
      { logger: silentLogger },
    );
    ep = zest.zenohLocators[0]!;
    sse = await TestEventSource.open(`${zest.restUrl}/pico/**`);
  });
  after(async () => {
    sse?.close();
    await zest?.close();
  });

  /** The SSE events up to and including the first DELETE of `key`, as `PUT key` / `DELETE key`. */
  async function eventsUntilDelete(key: string, timeoutMs: number): Promise<string[]> {
    const out: string[] = [];
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const [m] = await sse.next(1, Math.max(1, deadline - Date.now()));
      const k = (JSON.parse(m!.data) as { key: string }).key;
      out.push(`${m!.event} ${k}`);
      if (m!.event === "DELETE" && k === key) return out;
    }
  }

  async function get(key: string): Promise<unknown[]> {
    const res = await fetch(`${zest.restUrl}/${key}`);
    return (await res.json()) as unknown[];
  }

  test("z_put exits at once: its bound key is deleted right after, an unbound one stays", async () => {
    for (const [key, value] of [
      ["pico/free/put", "stays"],
      ["pico/bound/put", "goes"],
    ]) {
      await picoPut(["-e", ep, "-k", key!, "-v", value!]);
    }
    const events = await eventsUntilDelete("pico/bound/put", 10_000);
    assert.deepEqual(events.slice(-2), ["PUT pico/bound/put", "DELETE pico/bound/put"]);
    assert.deepEqual(await get("pico/bound/put"), []);
    assert.equal((await get("pico/free/put")).length, 1);
  });

  test("z_pub killed with SIGKILL: its key is deleted as its socket closes", async () => {
    const pub = runPico("z_pub", ["-e", ep, "-k", "pico/bound/killed", "-v", "alive"]);
    try {
      await pub.waitFor(/Press CTRL-C to quit/, 10_000);
      const before = await eventsUntilPut(sse, "pico/bound/killed");
      assert.ok(before);
      pub.proc.kill("SIGKILL");
      const start = Date.now();
      await eventsUntilDelete("pico/bound/killed", 5_000);
      assert.ok(Date.now() - start < LEASE_MS, "deleted before the lease could expire: the socket closed");
      assert.deepEqual(await get("pico/bound/killed"), []);
    } finally {
      await pub.stop();
    }
  });

  test("z_pub frozen with SIGSTOP (socket open, silent): its key is deleted when the lease it announced expires", async () => {
    const pub = runPico("z_pub", ["-e", ep, "-k", "pico/bound/frozen", "-v", "alive"]);
    try {
      await pub.waitFor(/Press CTRL-C to quit/, 10_000);
      await eventsUntilPut(sse, "pico/bound/frozen");
      pub.proc.kill("SIGSTOP");
      const start = Date.now();
      await eventsUntilDelete("pico/bound/frozen", PICO_LEASE_MS + 4_000);
      const waited = Date.now() - start;
      // pico's lease, not the router's shorter one: pico keeps itself alive at a quarter of its own.
      assert.ok(waited >= PICO_LEASE_MS - 3_000, `deleted after ${waited} ms: not before pico's lease`);
      assert.deepEqual(await get("pico/bound/frozen"), []);
    } finally {
      pub.proc.kill("SIGCONT");
      await pub.stop();
    }
  });
});

/** Reads SSE events until a PUT of `key`. */
async function eventsUntilPut(sse: TestEventSource, key: string): Promise<true> {
  for (;;) {
    const [m] = await sse.next(1, 10_000);
    if (m!.event === "PUT" && (JSON.parse(m!.data) as { key: string }).key === key) return true;
  }
}
