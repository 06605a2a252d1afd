/**
 * The start-up alignment of a storage created on a running router (docs/replication.md,
 * "Start-up alignment"): when its start resolves, it holds what the storages already on its key
 * expression hold, writes made a moment before included, within a bounded deadline.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { silentLogger } from "../../../src/core/log.js";
import { Session } from "../../../src/core/session.js";
import { Timestamp, unixNanosToNtp64 } from "../../../src/core/timestamp.js";
import { MemoryHub } from "../../../src/fabric/memory-transport.js";
import { NatsFabric } from "../../../src/fabric/nats-fabric.js";
import type { ReplicationSettings } from "../../../src/storage/replication/config.js";
import { ReplicationLog } from "../../../src/storage/replication/log.js";
import { replicaSpace } from "../../../src/storage/replication/replicator.js";
import { decodeDigest, encodeDigest, encodeSubsReply, Op } from "../../../src/storage/replication/wire.js";
import { StorageService } from "../../../src/storage/service.js";
import { MemoryBackend } from "../../../src/storage/volumes/memory.js";
import { eventually } from "../../support/wait.js";

/** No test here waits for a router to be forgotten: timings that a loaded machine never trips. */
const TIMINGS = { heartbeatMs: 250, peerTimeoutMs: 4_000, ackTimeoutMs: 5_000, helloWaitMs: 200 };
/**
 * One sub-interval per interval of 1 s, and a propagation delay of 900 ms: a write made at the
 * start of a sub-interval stays "maybe on its way" for 900 ms, longer than a storage takes to start.
 */
const SETTINGS: ReplicationSettings = {
  intervalMs: 1_000,
  subIntervals: 1,
  hot: 3,
  warm: 5,
  propagationDelayMs: 900,
  tombstoneRetentionMs: 60_000,
};

/** A router of its own (a session over a fabric on `hub`), without any storage yet. */
async function router(hub: MemoryHub, zid: string): Promise<Session> {
  const fabric = new NatsFabric({
    servers: [],
    ...TIMINGS,
    logger: silentLogger,
    transport: async () => hub.connect(zid),
  });
  return Session.open({ zid, fabric });
}

/** Starts a memory storage `d` on `keyExpr` on the router of `session`. */
async function storage(
  session: Session,
  keyExpr: string,
  alignTimeoutMs = 2_000,
): Promise<{ service: StorageService; backend: MemoryBackend }> {
  const backend = new MemoryBackend("d");
  const service = new StorageService("d", keyExpr, backend, session, silentLogger, { replication: SETTINGS });
  await service.start({ alignTimeoutMs });
  return { service, backend };
}

/** Every key the backend holds under `keyExpr` as `key=value`, deletions as `key deleted`, sorted. */
async function held(backend: MemoryBackend, keyExpr = "d/**"): Promise<string[]> {
  const out = (await backend.query(keyExpr)).map((e) => `${e.key}=${e.payload.toString()}`);
  for (const key of ["d/gone", "d/x/gone"]) if ((await backend.lookup(key))?.deleted) out.push(`${key} deleted`);
  return out.sort();
}

/** Waits (in steps under a second) until a sub-interval of SETTINGS has just begun. */
async function subIntervalStart(): Promise<void> {
  const subMs = SETTINGS.intervalMs / SETTINGS.subIntervals;
  for (;;) {
    const into = Date.now() % subMs;
    if (into < 20) return;
    await new Promise((r) => setTimeout(r, Math.min(subMs - into, 900)));
  }
}

describe("a storage created on a running router, next to storages that hold its keys", () => {
  const closers: Array<() => Promise<void>> = [];
  // The fabric's and the replicas' timers never keep a process alive; this test's must.
  let keepAlive: NodeJS.Timeout | undefined;
  before(() => {
    keepAlive = setInterval(() => undefined, 1_000);
  });
  after(async () => {
    for (const close of closers.splice(0).reverse()) await close();
    clearInterval(keepAlive);
  });
  const opened = async (hub: MemoryHub, zid: string): Promise<Session> => {
    const s = await router(hub, zid);
    closers.push(async () => {
      s.close();
      await s.router.close();
    });
    return s;
  };
  const started = async (
    session: Session,
    keyExpr: string,
    alignTimeoutMs?: number,
  ): Promise<{ service: StorageService; backend: MemoryBackend }> => {
    const s = await storage(session, keyExpr, alignTimeoutMs);
    closers.push(() => s.service.stop(false));
    return s;
  };

  test("holds the writes made just before it started (within the propagation delay) once its start resolves, every time", async () => {
    const hub = new MemoryHub();
    const a = await opened(hub, "A1");
    const b = await opened(hub, "B1");
    await started(a, "d/**");
    for (let round = 0; round < 3; round++) {
      await subIntervalStart();
      await a.put(`d/${round}/k`, `v${round}`);
      await a.put("d/gone", "soon gone");
      await a.delete("d/gone");
      const late = await storage(b, "d/**");
      try {
        const expected = [...Array(round + 1).keys()].map((i) => `d/${i}/k=v${i}`);
        assert.deepEqual(await held(late.backend), [...expected, "d/gone deleted"].sort(), `round ${round}`);
        assert.equal(late.service.replicationStatus()?.behind, false);
      } finally {
        await late.service.stop(false);
      }
    }
  });

  test("next to a wider storage (d/** there, d/x/** here), holds the writes made just before it started", async () => {
    const hub = new MemoryHub();
    const a = await opened(hub, "A2");
    const b = await opened(hub, "B2");
    await started(a, "d/**");
    for (let round = 0; round < 2; round++) {
      await subIntervalStart();
      await a.put(`d/x/${round}`, `v${round}`);
      await a.put("d/other", "not under d/x");
      const late = await storage(b, "d/x/**");
      try {
        const expected = [...Array(round + 1).keys()].map((i) => `d/x/${i}=v${i}`);
        assert.deepEqual(await held(late.backend, "d/x/**"), expected, `round ${round}`);
      } finally {
        await late.service.stop(false);
      }
    }
  });

  test("next to an intersecting storage (d/x/* there, d/*/k here), holds the writes made just before it started on the keys both cover", async () => {
    const hub = new MemoryHub();
    const a = await opened(hub, "A4");
    const b = await opened(hub, "B4");
    await started(a, "d/x/*");
    for (let round = 0; round < 2; round++) {
      await subIntervalStart();
      await a.put("d/x/k", `v${round}`);
      await a.put("d/x/other", "not d/*/k");
      const late = await storage(b, "d/*/k");
      try {
        assert.deepEqual(await held(late.backend, "d/*/k"), [`d/x/k=v${round}`], `round ${round}`);
      } finally {
        await late.service.stop(false);
      }
    }
  });

  test("a replica that is slow to align does not hold the start past its deadline: the storage has the others' writes, says it is behind the slow one, and catches up", async () => {
    const hub = new MemoryHub();
    const a = await opened(hub, "A3");
    const b = await opened(hub, "B3");
    const slow = await opened(hub, "C3");
    await started(a, "d/**");
    // C3 plays a replica of d/** that claims a difference and answers every pull 3 s late.
    const space = replicaSpace("d/**");
    const address = `${space}/align/C3/d`;
    const log = new ReplicationLog(SETTINGS);
    const ms = Date.now() - 2_000;
    log.record("d/only-c", new Timestamp(unixNanosToNtp64(BigInt(ms) * 1_000_000n), "C3"), false);
    slow.declareQueryable(address, async (q) => {
      if (q.payload?.[0] === Op.digest) {
        const theirs = decodeDigest(q.payload).digest;
        q.reply(address, encodeDigest({ zid: "C3", storage: "d", digest: log.digest(Date.now(), theirs.current) }));
        return;
      }
      await new Promise((r) => setTimeout(r, 3_000));
      // Then it holds nothing after all: the difference settles without a value.
      for (const m of encodeSubsReply([])) q.reply(address, m);
    });
    slow.declareLivelinessToken(`${space}/live/C3/d`);
    await subIntervalStart();
    await a.put("d/k", "from a");
    const t0 = Date.now();
    const late = await started(b, "d/**", 500);
    const took = Date.now() - t0;
    assert.ok(took < 2_000, `start took ${took} ms, past its 500 ms deadline`);
    assert.deepEqual(await held(late.backend), ["d/k=from a"], "the prompt replica's writes are there");
    const status = late.service.replicationStatus()!;
    assert.equal(status.behind, true);
    assert.match(status.behind_reason ?? "", /C3\/d/);
    await eventually(
      async () => late.service.replicationStatus()?.behind === false,
      10_000,
      "the slow replica to settle",
    );
  });
});
