/**
 * Replicas of one storage on routers in one process, joined by NATS fabrics over a `MemoryHub`
 * whose connections the test cuts and restores: exchange and repair, without processes.
 */
import assert from "node:assert/strict";
import { after, afterEach, before, describe, test } from "node:test";
import { silentLogger } from "../../../src/core/log.js";
import { Session } from "../../../src/core/session.js";
import { MemoryHub, type MemoryTransport } from "../../../src/fabric/memory-transport.js";
import { NatsFabric } from "../../../src/fabric/nats-fabric.js";
import type { ReplicationSettings } from "../../../src/storage/replication/config.js";
import { pairSpace, replicaSpace } from "../../../src/storage/replication/replicator.js";
import { ANNOUNCE_SPACE, MAX_OVERLAPS } from "../../../src/storage/replication/overlaps.js";
import { Buffer } from "node:buffer";
import { Timestamp, unixNanosToNtp64 } from "../../../src/core/timestamp.js";
import {
  decodeDigest,
  encodeDigest,
  encodeEventsReply,
  encodeSubsReply,
  encodeValuesReply,
  Op,
} from "../../../src/storage/replication/wire.js";
import type { StoredEntry } from "../../../src/storage/backend.js";
import { StorageService } from "../../../src/storage/service.js";
import { MemoryBackend } from "../../../src/storage/volumes/memory.js";
import { eventually } from "../../support/wait.js";

const TIMINGS = { heartbeatMs: 100, peerTimeoutMs: 500, ackTimeoutMs: 800, helloWaitMs: 200 };
/** Short intervals, so that the periodic exchange runs within a test. */
const SETTINGS: ReplicationSettings = {
  intervalMs: 1_000,
  subIntervals: 5,
  hot: 3,
  warm: 5,
  propagationDelayMs: 50,
  tombstoneRetentionMs: 60_000,
};

interface Replica {
  session: Session;
  transport: MemoryTransport;
  service: StorageService;
  backend: MemoryBackend;
  close(): Promise<void>;
}

async function replica(
  hub: MemoryHub,
  zid: string,
  settings: ReplicationSettings | "off" = SETTINGS,
  keyExpr = "d/**",
  /** What the storage holds already, as a durable one does after a restart. */
  kept: readonly StoredEntry[] = [],
): Promise<Replica> {
  let transport: MemoryTransport | undefined;
  const fabric = new NatsFabric({
    servers: [],
    ...TIMINGS,
    logger: silentLogger,
    transport: async () => {
      transport = hub.connect(zid);
      return transport;
    },
  });
  const session = await Session.open({ zid, fabric });
  const backend = new MemoryBackend("d");
  for (const e of kept)
    await backend.put({ key: e.key, payload: e.payload, encoding: e.encoding, timestamp: e.timestamp });
  const service = new StorageService(
    "d",
    keyExpr,
    backend,
    session,
    silentLogger,
    settings === "off" ? {} : { replication: settings },
  );
  await service.start({ alignTimeoutMs: 1_000 });
  return {
    session,
    transport: transport!,
    service,
    backend,
    async close() {
      await service.stop(false);
      session.close();
      await session.router.close();
    },
  };
}

/** Lets the fabric's outbox send what was queued this turn (samples leave at the end of a turn). */
async function flushed(): Promise<void> {
  for (let i = 0; i < 3; i++) await new Promise((r) => setImmediate(r));
}

/** Every key the backend holds (under `keyExpr`), with value and timestamp, sorted. */
async function held(r: Replica, keyExpr = "d/**"): Promise<string[]> {
  return (await r.backend.query(keyExpr))
    .map((e) => `${e.key}=${e.payload.toString()}@${e.timestamp.toString()}`)
    .sort();
}

/**
 * A replica that lies: at `address` it answers every digest with one hot sub-interval (a second
 * old) that differs, holding `events` there (stamped a second ago) and answering `values` for the
 * keys asked, whatever they are.
 */
function lyingReplica(
  c: Session,
  address: string,
  zid: string,
  events: ReadonlyArray<{ key: string; deleted: boolean }>,
  values: readonly string[],
): void {
  const ms = Date.now() - 1_000;
  const ts = new Timestamp(unixNanosToNtp64(BigInt(ms) * 1_000_000n), zid);
  const interval = Math.floor(ms / SETTINGS.intervalMs);
  const sub = Math.floor((ms - interval * SETTINGS.intervalMs) / (SETTINGS.intervalMs / SETTINGS.subIntervals));
  c.declareQueryable(address, (q) => {
    const op = q.payload?.[0];
    if (op === Op.digest) {
      const theirs = decodeDigest(q.payload!).digest;
      q.reply(
        address,
        encodeDigest({
          zid,
          storage: "d",
          digest: {
            ...theirs,
            cold: { hi: 0, lo: 0 },
            warmIntervals: [],
            hotSubs: [{ interval, sub, fp: { hi: 1, lo: 1 } }],
          },
        }),
      );
    } else if (op === Op.subs) {
      for (const b of encodeSubsReply([{ interval, sub, fp: { hi: 1, lo: 1 } }])) q.reply(address, b);
    } else if (op === Op.events) {
      for (const b of encodeEventsReply(
        0,
        events.map((e) => ({ key: e.key, timestamp: ts, deleted: e.deleted })),
      ))
        q.reply(address, b);
    } else if (op === Op.values) {
      const v = (key: string) => ({
        key,
        timestamp: ts,
        deleted: false,
        encoding: "text/plain",
        payload: Buffer.from(key),
      });
      for (const b of encodeValuesReply(values.map(v))) q.reply(address, b);
    }
  });
}

describe("replicas in one process", () => {
  const open: Replica[] = [];
  // The fabric's and the replicas' timers never keep a process alive; this test's must.
  let keepAlive: NodeJS.Timeout | undefined;
  before(() => {
    keepAlive = setInterval(() => undefined, 1_000);
  });
  after(() => clearInterval(keepAlive));
  afterEach(async () => {
    for (const r of open.splice(0)) await r.close();
  });

  test("writes one replica missed while cut off reach it after the heal, deletes included, and nothing deleted comes back", async () => {
    const hub = new MemoryHub();
    const a = await replica(hub, "A1");
    const b = await replica(hub, "B1");
    open.push(a, b);
    await a.session.put("d/keep", "1");
    await a.session.put("d/gone", "1");
    await eventually(async () => (await held(b)).length === 2, 3_000, "b to get the first writes");
    b.transport.disconnect();
    await eventually(async () => a.session.router.fabric!.peers!().length === 0, 3_000, "a to forget b");
    for (let i = 0; i < 50; i++) await a.session.put(`d/new/${i}`, `v${i}`);
    await a.session.delete("d/gone");
    await a.session.put("d/keep", "2");
    await flushed();
    assert.equal((await held(b)).length, 2);
    assert.equal(b.service.replicationStatus()?.behind, true);
    b.transport.reconnect();
    assert.equal(b.service.replicationStatus()?.behind, true, "healed but not repaired yet: still behind");
    await eventually(async () => (await held(b)).join() === (await held(a)).join(), 5_000, "b to converge");
    assert.equal((await held(b)).length, 51);
    assert.equal((await b.backend.lookup("d/gone"))?.deleted, true);
    await eventually(async () => b.service.replicationStatus()?.behind === false, 3_000, "b to be up to date");
    assert.ok(b.service.replicationStatus()!.keys_repaired >= 51);
  });

  test("writes on both sides of a cut converge to the newest per key on both", async () => {
    const hub = new MemoryHub();
    const a = await replica(hub, "A2");
    const b = await replica(hub, "B2");
    open.push(a, b);
    await a.session.put("d/x", "a0");
    await a.session.put("d/y", "a0");
    await eventually(async () => (await held(b)).length === 2, 3_000, "b to get the first writes");
    b.transport.disconnect();
    await eventually(async () => a.session.router.fabric!.peers!().length === 0, 3_000, "a to forget b");
    await a.session.put("d/x", "a1");
    // b writes alone: only its own storage takes it (the write says so).
    await assert.rejects(b.session.put("d/y", "b1"), /reached this router's subscribers only/);
    await assert.rejects(b.session.put("d/only-b", "b"), /reached this router's subscribers only/);
    await a.session.delete("d/y"); // newer than b's put: the delete wins
    await a.session.put("d/only-a", "a");
    await flushed();
    b.transport.reconnect();
    await eventually(async () => (await held(a)).join() === (await held(b)).join(), 5_000, "both to converge");
    const values = (await held(a)).map((s) => s.slice(0, s.indexOf("@")));
    assert.deepEqual(values, ["d/only-a=a", "d/only-b=b", "d/x=a1"]);
  });

  test("a sample lost on the way, with both replicas connected all along, is repaired by the periodic exchange", async () => {
    const hub = new MemoryHub();
    const a = await replica(hub, "A7");
    const b = await replica(hub, "B7");
    open.push(a, b);
    // Every sample to B (and the resends) is lost: only the safety net can bring it.
    hub.filter = (subject) => !(subject.startsWith("zest.k.") || subject.startsWith("zest.w."));
    // It may time out waiting for b's acknowledgement, which never comes.
    const put = a.session.put("d/lost", "1").catch(() => undefined);
    // Samples stay lost: only an alignment query (which the filter lets through) can bring it.
    await eventually(
      async () => (await held(b)).join() === (await held(a)).join(),
      5_000,
      "the periodic exchange to repair b",
    );
    assert.equal((await held(b)).length, 1);
    assert.equal(b.service.replicationStatus()!.keys_repaired, 1);
    hub.filter = undefined;
    await put;
  });

  test("a replica away longer than the tombstone retention gives up a value the others deleted and forgot, and nobody brings it back", async () => {
    const hub = new MemoryHub();
    const settings = { ...SETTINGS, tombstoneRetentionMs: 10_000 };
    const a = await replica(hub, "A8", settings);
    const b = await replica(hub, "B8", settings);
    open.push(a, b);
    const past = (ms: number) => new Timestamp(unixNanosToNtp64(BigInt(Date.now() - ms) * 1_000_000n), "A8");
    await a.session.put("d/old", "1", { timestamp: past(100_000) });
    await a.session.put("d/kept", "1", { timestamp: past(100_000) });
    await eventually(async () => (await held(b)).length === 2, 3_000, "b to get the old values");
    b.transport.disconnect();
    await eventually(async () => a.session.router.fabric!.peers!().length === 0, 3_000, "a to forget b");
    await a.session.delete("d/old", { timestamp: past(50_000) });
    await flushed();
    // The deletion is older than the retention: a forgets it at its next purge.
    await (a.service as unknown as { purge(): Promise<void> }).purge();
    assert.equal(a.service.replicationStatus()!.log.tombstones, 0);
    b.transport.reconnect();
    await eventually(
      async () => b.service.replicationStatus()!.keys_dropped === 1 && (await held(b)).length === 1,
      5_000,
      "b to drop the value a deleted and forgot",
    );
    console.log(
      JSON.stringify(a.service.replicationStatus()),
      JSON.stringify(b.service.replicationStatus()),
      await held(a),
      await held(b),
    );
    // Both settle: same fingerprint, neither behind (a repair the storage finds outdated is not
    // pulled again at every exchange).
    await eventually(
      async () => {
        const [sa, sb] = [a.service.replicationStatus()!, b.service.replicationStatus()!];
        return !sa.behind && !sb.behind && sa.log.fingerprint === sb.log.fingerprint;
      },
      5_000,
      "both replicas to settle",
    );
    assert.deepEqual(
      (await held(a)).map((e) => e.slice(0, e.indexOf("@"))),
      ["d/kept=1"],
    );
    assert.deepEqual(
      (await held(b)).map((e) => e.slice(0, e.indexOf("@"))),
      ["d/kept=1"],
    );
  });

  test("a replica started after the others took writes catches up before it answers", async () => {
    const hub = new MemoryHub();
    const a = await replica(hub, "A3");
    open.push(a);
    for (let i = 0; i < 20; i++) await a.session.put(`d/k/${i}`, `${i}`);
    await a.session.delete("d/k/0");
    const b = await replica(hub, "B3");
    open.push(b);
    assert.equal((await held(b)).length, 19);
    assert.equal((await b.backend.lookup("d/k/0"))?.deleted, true);
    assert.equal(b.service.replicationStatus()?.behind, false);
  });

  test("a replica alone and known to be behind says so in its answer", async () => {
    const hub = new MemoryHub();
    const a = await replica(hub, "A4");
    const b = await replica(hub, "B4");
    open.push(b);
    await a.session.put("d/x", "1");
    await eventually(async () => (await held(b)).length === 1, 3_000, "b to get the write");
    b.transport.disconnect();
    // Cut off while a is alive: a may take writes b never hears of.
    await eventually(
      async () => b.service.replicationStatus()?.behind_reason === "cut off from the fabric while A4/d was alive",
      3_000,
      "b to know it is behind",
    );
    await a.close(); // a dies meanwhile: b comes back alone
    b.transport.reconnect();
    await eventually(
      async () => b.session.router.fabric!.peers!().length === 0 && b.service.replicationStatus()?.peers.length === 0,
      5_000,
      "b to forget a",
    );
    const replies = await b.session.get("d/**");
    assert.deepEqual(
      replies.filter((r) => r.kind === "ok").map((r) => (r.kind === "ok" ? r.sample.key : "")),
      ["d/x"],
    );
    const err = replies.find((r) => r.kind === "err");
    assert.ok(err && err.kind === "err");
    assert.equal(err.errorKind, "unavailable");
    assert.match(err.payload.toString(), /storage d on router B4 may be behind its replicas/);
  });

  test("a replica whose only peer vanished while the two were in sync is not behind, and its answers alone carry no notice", async () => {
    const hub = new MemoryHub();
    const a = await replica(hub, "A9");
    const b = await replica(hub, "B9");
    open.push(b);
    try {
      await a.session.put("d/x", "1");
      await eventually(
        async () => {
          const [sa, sb] = [a.service.replicationStatus()!, b.service.replicationStatus()!];
          return sb.log.fingerprint === sa.log.fingerprint && !sb.behind && sb.exchanges >= 1;
        },
        3_000,
        "b in sync with a",
      );
      // a vanishes without a word, as a killed router does; b stays connected throughout, and
      // exchanges every second (with a while it is still known, then alone).
      a.transport.disconnect();
      // An exchange while b still knows a: a cannot answer it.
      const exchanged = (b.service as unknown as { replicator: { exchange(): Promise<number> } }).replicator.exchange();
      const reasons = new Set<string>();
      const end = Date.now() + 3_000;
      while (Date.now() < end) {
        const s = b.service.replicationStatus()!;
        if (s.behind) reasons.add(s.behind_reason ?? "");
        await new Promise((r) => setTimeout(r, 20));
      }
      assert.equal(await exchanged, 0, "a did not answer");
      assert.equal(b.session.router.fabric!.peers!().length, 0, "b has forgotten a");
      assert.deepEqual([...reasons], [], "b was never behind");
      const replies = await b.session.get("d/**");
      assert.deepEqual(
        replies.map((r) => (r.kind === "ok" ? r.sample.key : `error: ${r.payload.toString()}`)),
        ["d/x"],
      );
    } finally {
      await a.close();
    }
  });

  test("a replica whose peer died in the middle of a repair, both connected until then, is not left behind by it", async () => {
    const hub = new MemoryHub();
    const a = await replica(hub, "AB");
    const b = await replica(hub, "BA");
    open.push(b);
    try {
      // A write b never gets, as one in flight when its router dies: never acknowledged by b.
      hub.filter = (subject) => !(subject.startsWith("zest.k.") || subject.startsWith("zest.w."));
      const put = a.session.put("d/late", "1").catch(() => undefined);
      // a dies once it answered b's digest query, as b asks it for what differs: b's repair fails.
      let answered = false;
      let died = false;
      hub.filter = (subject, _data, from) => {
        if (subject.startsWith("zest.k.") || subject.startsWith("zest.w.")) return false;
        if (from === a.transport && subject.startsWith("zest.in.BA.r.")) answered = true;
        else if (from === b.transport && subject === "zest.q.AB" && answered && !died) {
          died = true;
          a.transport.disconnect();
        }
        return true;
      };
      // Past the propagation delay, the write's sub-interval is compared at b's next exchange.
      await eventually(() => died, 5_000, "b to ask a for what differs");
      const reasons = new Set<string>();
      const end = Date.now() + 5_000;
      let behind = true;
      while (Date.now() < end && (reasons.size === 0 || behind)) {
        const s = b.service.replicationStatus()!;
        behind = s.behind;
        if (s.behind) reasons.add(s.behind_reason ?? "");
        await new Promise((r) => setTimeout(r, 20));
      }
      assert.match([...reasons].join("; "), /^repair from AB\/d failed/, "b owed a while the repair failed");
      assert.equal(behind, false, `b still behind: ${[...reasons].join("; ")}`);
      assert.equal(b.session.router.fabric!.peers!().length, 0, "b has forgotten a");
      // What b answers alone carries no notice: every write a acknowledged reached b.
      const replies = await b.session.get("d/**");
      assert.ok(
        replies.every((r) => r.kind === "ok"),
        "no error reply",
      );
      await put;
    } finally {
      hub.filter = undefined;
      await a.close();
    }
  });

  test("nested storages (d/** here, d/x/** there) converge on the keys both cover after a cut, both ways, and nothing else crosses", async () => {
    const hub = new MemoryHub();
    const a = await replica(hub, "AA10");
    const b = await replica(hub, "BB10", SETTINGS, "d/x/**");
    open.push(a, b);
    await eventually(
      async () => a.service.replicationStatus()?.nested?.[0]?.peers.join() === "BB10/d",
      3_000,
      "a to replicate with b on d/x/**",
    );
    await a.session.put("d/x/gone", "1");
    await eventually(async () => (await held(b)).length === 1, 3_000, "b to get the first write");
    b.transport.disconnect();
    await eventually(async () => a.session.router.fabric!.peers!().length === 0, 3_000, "a to forget b");
    for (let i = 0; i < 20; i++) await a.session.put(`d/x/${i}`, `v${i}`);
    for (let i = 0; i < 5; i++) await a.session.put(`d/y/${i}`, `outside b ${i}`);
    await a.session.delete("d/x/gone");
    // b writes alone meanwhile: only its own storage takes it.
    await assert.rejects(b.session.put("d/x/from-b", "b"), /reached this router's subscribers only/);
    await flushed();
    assert.equal((await held(b)).length, 2, "b holds its first key and its own write only");
    b.transport.reconnect();
    await eventually(
      async () =>
        (await held(b)).join() === (await held(a, "d/x/**")).join() && (await held(a, "d/x/**")).length === 21,
      5_000,
      "the keys both cover to converge",
    );
    assert.equal((await b.backend.lookup("d/x/gone"))?.deleted, true, "the delete reached b");
    assert.ok(
      (await held(a, "d/x/**")).some((e) => e.startsWith("d/x/from-b=b@")),
      "b's write reached a",
    );
    assert.deepEqual(await held(b, "d/y/**"), [], "nothing outside d/x/** reached b");
    // a's nested log holds the keys under d/x/** only: its digest never covers d/y/**.
    await eventually(
      async () => {
        const nested = a.service.replicationStatus()!.nested![0]!;
        const main = b.service.replicationStatus()!;
        return !nested.behind && !main.behind && nested.log.fingerprint === main.log.fingerprint;
      },
      3_000,
      "both sides to settle",
    );
    const nested = a.service.replicationStatus()!.nested![0]!;
    assert.equal(nested.key_expr, "d/x/**");
    assert.equal(nested.log.keys, 22);
    assert.ok(b.service.replicationStatus()!.keys_repaired >= 21);
    assert.ok(nested.keys_repaired >= 1);
  });

  test("a sample lost between nested storages is repaired by the periodic exchange", async () => {
    const hub = new MemoryHub();
    const a = await replica(hub, "AA11");
    const b = await replica(hub, "BB11", SETTINGS, "d/x/**");
    open.push(a, b);
    await eventually(
      async () => a.service.replicationStatus()?.nested?.[0]?.peers.length === 1,
      3_000,
      "a to replicate with b on d/x/**",
    );
    hub.filter = (subject) => !(subject.startsWith("zest.k.") || subject.startsWith("zest.w."));
    const put = a.session.put("d/x/lost", "1").catch(() => undefined);
    await eventually(async () => (await held(b)).length === 1, 5_000, "the periodic exchange to repair b");
    assert.equal(b.service.replicationStatus()!.keys_repaired, 1);
    hub.filter = undefined;
    await put;
  });

  test("intersecting storages (x/**/y here, x/a/** there) converge on the keys both cover after a cut, both ways, deletes included, and no other key crosses", async () => {
    const hub = new MemoryHub();
    const a = await replica(hub, "AA14", SETTINGS, "x/**/y");
    const b = await replica(hub, "BB14", SETTINGS, "x/a/**");
    open.push(a, b);
    // What each router's subscribers see: a repair is delivered to them too.
    const seenA: string[] = [];
    const seenB: string[] = [];
    a.session.declareSubscriber("x/**", (s) => void seenA.push(s.key));
    b.session.declareSubscriber("x/**", (s) => void seenB.push(s.key));
    await eventually(
      async () =>
        a.service.replicationStatus()?.intersecting?.[0]?.peers.join() === "BB14/d" &&
        b.service.replicationStatus()?.intersecting?.[0]?.peers.join() === "AA14/d",
      3_000,
      "a and b to replicate the keys both cover",
    );
    const both = "x/a/**/y"; // the keys both storages cover
    await a.session.put("x/a/gone/y", "1");
    await eventually(async () => (await held(b, both)).length === 1, 3_000, "b to get the first write");
    b.transport.disconnect();
    await eventually(async () => a.session.router.fabric!.peers!().length === 0, 3_000, "a to forget b");
    for (let i = 0; i < 20; i++) await a.session.put(`x/a/${i}/y`, `v${i}`);
    await a.session.put("x/b/y", "outside b");
    await a.session.delete("x/a/gone/y");
    // b writes alone meanwhile: one key both cover, one only b covers.
    await assert.rejects(b.session.put("x/a/from-b/y", "b"), /reached this router's subscribers only/);
    await assert.rejects(b.session.put("x/a/only-b", "b"), /reached this router's subscribers only/);
    await flushed();
    assert.equal((await held(b, both)).length, 2, "b holds its first key and its own write only");
    seenA.length = 0;
    seenB.length = 0;
    b.transport.reconnect();
    await eventually(
      async () => (await held(b, both)).join() === (await held(a, both)).join() && (await held(a, both)).length === 21,
      5_000,
      "the keys both cover to converge",
    );
    assert.equal((await b.backend.lookup("x/a/gone/y"))?.deleted, true, "the delete reached b");
    assert.ok(
      (await held(a, both)).some((e) => e.startsWith("x/a/from-b/y=b@")),
      "b's write reached a",
    );
    await eventually(
      async () => {
        const [sa, sb] = [a.service.replicationStatus()!, b.service.replicationStatus()!];
        const [ia, ib] = [sa.intersecting![0]!, sb.intersecting![0]!];
        return !ia.behind && !ib.behind && ia.log.fingerprint === ib.log.fingerprint;
      },
      3_000,
      "both sides to settle",
    );
    // Nothing outside the keys both cover crossed, to a storage or to a subscriber.
    assert.deepEqual(await held(b, "x/b/**"), []);
    assert.equal(await b.backend.lookup("x/b/y"), undefined);
    assert.equal(await a.backend.lookup("x/a/only-b"), undefined);
    assert.ok(!seenB.includes("x/b/y"), seenB.join());
    assert.ok(!seenA.includes("x/a/only-b"), seenA.join());
    assert.ok(seenA.includes("x/a/from-b/y"), "a's subscribers saw the repair as a change");
    const [ia, ib] = [
      a.service.replicationStatus()!.intersecting![0]!,
      b.service.replicationStatus()!.intersecting![0]!,
    ];
    assert.equal(ia.key_expr, "x/a/**");
    assert.equal(ib.key_expr, "x/**/y");
    assert.equal(ia.log.keys, 22, "a's second log holds the keys both cover only (a tombstone included)");
    assert.equal(ib.log.keys, 22);
    assert.equal(a.service.replicationStatus()!.nested, undefined);
  });

  test("intersecting storages (a/*/c here, a/b/* there) repair each other's writes and deletes made during cuts", async () => {
    const hub = new MemoryHub();
    const a = await replica(hub, "AA15", SETTINGS, "a/*/c");
    const b = await replica(hub, "BB15", SETTINGS, "a/b/*");
    open.push(a, b);
    await eventually(
      async () =>
        a.service.replicationStatus()?.intersecting?.[0]?.peers.length === 1 &&
        b.service.replicationStatus()?.intersecting?.[0]?.peers.length === 1,
      3_000,
      "a and b to replicate a/b/c",
    );
    await a.session.put("a/b/c", "1");
    await eventually(async () => (await held(b, "a/b/c")).length === 1, 3_000, "b to get the first write");
    const cut = async () => {
      b.transport.disconnect();
      await eventually(async () => a.session.router.fabric!.peers!().length === 0, 3_000, "a to forget b");
    };
    // A delete on a while b is away reaches b after the heal.
    await cut();
    await a.session.delete("a/b/c");
    await a.session.put("a/x/c", "only a");
    await flushed();
    b.transport.reconnect();
    await eventually(async () => (await b.backend.lookup("a/b/c"))?.deleted === true, 5_000, "the delete to reach b");
    // A put on b while cut off reaches a after the heal; nothing only b covers does.
    await eventually(
      async () => a.session.router.fabric!.peers!().length === 1 && b.session.router.fabric!.peers!().length === 1,
      3_000,
      "a and b to see each other again",
    );
    await cut();
    // Offline: nothing leaves b (the put says so when b still knows a's subscribers).
    await b.session.put("a/b/c", "2").catch(() => undefined);
    await b.session.put("a/b/x", "only b").catch(() => undefined);
    b.transport.reconnect();
    await eventually(
      async () =>
        (await held(a, "a/b/c")).join() === (await held(b, "a/b/c")).join() &&
        (await held(a, "a/b/c")).some((e) => e.startsWith("a/b/c=2@")),
      5_000,
      "b's write to reach a",
    );
    assert.deepEqual(
      (await held(a, "a/**")).map((e) => e.slice(0, e.indexOf("@"))),
      ["a/b/c=2", "a/x/c=only a"],
    );
    assert.deepEqual(
      (await held(b, "a/**")).map((e) => e.slice(0, e.indexOf("@"))),
      ["a/b/c=2", "a/b/x=only b"],
    );
  });

  test("an intersecting storage restarted after missing a delete and a put has caught up when its start resolves", async () => {
    const hub = new MemoryHub();
    const a = await replica(hub, "AA16", SETTINGS, "x/**/y");
    let b = await replica(hub, "BB16", SETTINGS, "x/a/**");
    open.push(a);
    try {
      await eventually(
        async () => a.service.replicationStatus()?.intersecting?.[0]?.peers.join() === "BB16/d",
        3_000,
        "a to replicate with b",
      );
      await a.session.put("x/a/1/y", "1");
      await a.session.put("x/a/2/y", "2");
      await eventually(async () => (await held(b, "x/a/**")).length === 2, 3_000, "b to get the writes");
      const kept = await b.backend.query("x/a/**");
      await b.close();
      await eventually(async () => a.session.router.fabric!.peers!().length === 0, 3_000, "a to forget b");
      await a.session.delete("x/a/1/y");
      await a.session.put("x/a/3/y", "3");
      b = await replica(hub, "BB16", SETTINGS, "x/a/**", kept);
      // No waiting: the start-up exchange with a, in the pair's space, ran before start resolved.
      assert.equal((await b.backend.lookup("x/a/1/y"))?.deleted, true, "the delete made while b was down");
      assert.deepEqual(
        (await held(b, "x/a/**")).map((e) => e.slice(0, e.indexOf("@"))),
        ["x/a/2/y=2", "x/a/3/y=3"],
      );
    } finally {
      await b.close();
    }
  });

  test("a front door's session neither queries nor answers under @repl/**; the router's own sessions do", async () => {
    const hub = new MemoryHub();
    const a = await replica(hub, "AA12");
    open.push(a);
    const door = new Session(a.session.router, "rest");
    try {
      const align = `${replicaSpace("d/**")}/align/**`;
      await assert.rejects(door.get(align, { payload: Buffer.from([Op.digest]) }), { kind: "forbidden" });
      await assert.rejects(door.get("@repl/**"), { kind: "forbidden" });
      assert.throws(() => door.declareQueryable(`${replicaSpace("d/**")}/align/FF/d`, () => undefined), {
        kind: "forbidden",
      });
      // `**` does not reach `@repl` (verbatim chunks): an ordinary query is not refused.
      assert.deepEqual(await door.get("**"), []);
      assert.equal((await a.session.get(align, { allowedDestination: "remote" })).length, 0);
    } finally {
      door.close();
    }
  });

  test("storage announcements are checked: malformed, non-canonical, disjoint, equal, wider and one too many (nested and intersecting together) are ignored", async () => {
    const hub = new MemoryHub();
    const a = await replica(hub, "AA13");
    open.push(a);
    const fabric = new NatsFabric({
      servers: [],
      ...TIMINGS,
      logger: silentLogger,
      transport: async () => hub.connect("CC13"),
    });
    const c = await Session.open({ zid: "CC13", fabric });
    const announce = (name: string, keyExpr: string) =>
      c.declareLivelinessToken(`${ANNOUNCE_SPACE}/CC13/${name}/${Buffer.from(keyExpr).toString("base64url")}`);
    try {
      announce("bad", "d/x/*$"); // not a key expression
      announce("wide", "d/x/**/**"); // not canonical (d/x/**)
      announce("other", "e/**"); // no key in common with d/**
      announce("same", "d/**"); // a replica: the main replicator's business
      announce("wider", "**"); // wider: the other side replicates on d/**
      c.declareLivelinessToken(`${ANNOUNCE_SPACE}/CC13/extra/${Buffer.from("d/v/**").toString("base64url")}/x`);
      announce("inter", "**/z"); // intersects d/** without nesting: one overlap of the bound
      await eventually(
        async () => a.service.replicationStatus()?.intersecting?.[0]?.key_expr === "**/z",
        3_000,
        "a to replicate the keys both cover with **/z",
      );
      for (let i = 0; i < MAX_OVERLAPS; i++) announce(`n${i}`, `d/n${i}/**`);
      await eventually(
        async () => (a.service.replicationStatus()?.nested?.length ?? 0) === MAX_OVERLAPS - 1,
        5_000,
        "a to replicate with as many overlapping key expressions as allowed",
      );
      await new Promise((r) => setTimeout(r, 200));
      const status = a.service.replicationStatus()!;
      const nested = status.nested!.map((n) => n.key_expr);
      assert.equal(nested.length, MAX_OVERLAPS - 1);
      assert.deepEqual(
        status.intersecting!.map((n) => n.key_expr),
        ["**/z"],
      );
      assert.ok(
        nested.every((k) => /^d\/n[0-9]+\/\*\*$/.test(k)),
        nested.join(),
      );
    } finally {
      c.close();
      await c.router.close();
    }
  });

  test("replication off: nothing is exchanged, and a missed write stays missed", async () => {
    const hub = new MemoryHub();
    const a = await replica(hub, "A5", "off");
    const b = await replica(hub, "B5", "off");
    open.push(a, b);
    assert.equal(a.service.replicationStatus(), undefined);
    b.transport.disconnect();
    await eventually(async () => a.session.router.fabric!.peers!().length === 0, 3_000, "a to forget b");
    await a.session.put("d/x", "1");
    await flushed();
    b.transport.reconnect();
    await new Promise((r) => setTimeout(r, 800));
    assert.deepEqual(await held(b), []);
    assert.equal(b.session.livelinessGet(`${replicaSpace("d/**")}/**`).length, 0);
  });

  test("what a replica sends is checked: events outside the key expression and values not asked for are dropped, a malformed query gets an error", async () => {
    const hub = new MemoryHub();
    const a = await replica(hub, "A6");
    open.push(a);
    // A liar on router C6: it claims a difference, then offers keys outside d/** and values nobody asked for.
    const fabric = new NatsFabric({
      servers: [],
      ...TIMINGS,
      logger: silentLogger,
      transport: async () => hub.connect("C6"),
    });
    const c = await Session.open({ zid: "C6", fabric });
    const address = `${replicaSpace("d/**")}/align/C6/d`;
    lyingReplica(
      c,
      address,
      "C6",
      [
        { key: "x/outside", deleted: false },
        { key: "d/ok", deleted: false },
      ],
      ["d/ok", "d/sneaky", "x/outside"],
    );
    try {
      await eventually(async () => (await held(a)).length > 0, 5_000, "a to pull from c");
      await new Promise((r) => setTimeout(r, 300));
      assert.deepEqual(
        (await held(a)).map((e) => e.slice(0, e.indexOf("@"))),
        ["d/ok=d/ok"],
      );
      assert.ok(a.service.replicationStatus()!.malformed_dropped >= 1);
      // A malformed alignment query is answered with an error, and counted.
      const before = a.service.replicationStatus()!.malformed_dropped;
      const replies = await c.get(`${replicaSpace("d/**")}/align/A6/d`, { payload: Buffer.from([Op.subs, 0xff]) });
      assert.equal(replies.length, 1);
      assert.equal(replies[0]!.kind === "err" && replies[0]!.errorKind, "bad_input");
      assert.equal(a.service.replicationStatus()!.malformed_dropped, before + 1);
    } finally {
      c.close();
      await c.router.close();
    }
  });

  test("in an intersecting pair's space, an event or value on a key the other storage covers and this one does not is dropped, never delivered", async () => {
    const hub = new MemoryHub();
    const a = await replica(hub, "AA17", SETTINGS, "x/**/y");
    open.push(a);
    const seen: string[] = [];
    a.session.declareSubscriber("x/**", (s) => void seen.push(s.key));
    const fabric = new NatsFabric({
      servers: [],
      ...TIMINGS,
      logger: silentLogger,
      transport: async () => hub.connect("CC17"),
    });
    const c = await Session.open({ zid: "CC17", fabric });
    // A liar that announces a storage on x/a/**, then claims keys only it covers.
    const space = pairSpace("x/**/y", "x/a/**");
    const address = `${space}/align/CC17/d`;
    lyingReplica(
      c,
      address,
      "CC17",
      [
        { key: "x/a/only-c", deleted: false },
        { key: "x/a/gone", deleted: true },
        { key: "x/a/both/y", deleted: false },
      ],
      ["x/a/both/y", "x/a/only-c"],
    );
    c.declareLivelinessToken(`${space}/live/CC17/d`);
    c.declareLivelinessToken(`${ANNOUNCE_SPACE}/CC17/d/${Buffer.from("x/a/**").toString("base64url")}`);
    try {
      await eventually(async () => (await held(a, "x/**")).length > 0, 5_000, "a to pull from c");
      await new Promise((r) => setTimeout(r, 300));
      assert.deepEqual(
        (await held(a, "x/**")).map((e) => e.slice(0, e.indexOf("@"))),
        ["x/a/both/y=x/a/both/y"],
      );
      assert.deepEqual(seen, ["x/a/both/y"], "only the key both cover reached a's subscribers");
      assert.ok(a.service.replicationStatus()!.intersecting![0]!.malformed_dropped >= 2);
    } finally {
      c.close();
      await c.router.close();
    }
  });
});
