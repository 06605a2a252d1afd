/**
 * The fabric's acknowledgement, resend and forget rules (docs/fabric-protocol.md), with fabrics
 * on an in-memory bus and a clock moved by hand: no NATS, no sleeping, milliseconds per test.
 */
import assert from "node:assert/strict";
import { beforeEach, describe, test } from "node:test";
import { ZestError } from "../../src/core/errors.js";
import { errorMessage } from "../../src/core/errors.js";
import { Parameters } from "../../src/core/selector.js";
import { ManualClock } from "../../src/fabric/clock.js";
import { MemoryHub } from "../../src/fabric/memory-transport.js";
import { cluster, FakeRouter, sample, settle, TIMINGS, track } from "./harness.js";

let hub: MemoryHub;
let clock: ManualClock;

beforeEach(() => {
  hub = new MemoryHub();
  clock = new ManualClock();
});

/** Moves the clock in steps, letting messages through between them. */
async function advance(ms: number, step = 25): Promise<void> {
  for (let t = 0; t < ms; t += step) {
    clock.advance(Math.min(step, ms - t));
    await settle();
  }
}

describe("acknowledged writes", () => {
  test("a write resolves once every router with a matching subscriber has it", async () => {
    const [a, b, c] = await cluster(hub, clock, [
      { zid: "A1" },
      { zid: "B1", subs: ["k/**"] },
      { zid: "C1", subs: ["other/**"] },
    ]);
    const w = track(a!.fabric.publish(sample("k/x", "hello")));
    await settle();
    assert.equal(w.state, "resolved");
    assert.deepEqual(
      b!.delivered.map((s) => s.payload.toString()),
      ["hello"],
    );
    assert.equal(c!.delivered.length, 0, "C declared no matching subscriber: the bus sends it nothing");
  });

  test("a write nobody is known to want resolves at once, without waiting for anyone", async () => {
    const [a] = await cluster(hub, clock, [{ zid: "A1" }, { zid: "B1" }]);
    const w = track(a!.fabric.publish(sample("nobody/x")));
    await settle(1);
    assert.equal(w.state, "resolved");
  });

  test("an error acknowledgement rejects the write with the receiver's error kind and reason", async () => {
    const [a, b] = await cluster(hub, clock, [{ zid: "A1" }, { zid: "B1", subs: ["k/**"] }]);
    b!.deliver = async () => {
      throw ZestError.conflict("bucket has another replica count");
    };
    await assert.rejects(a!.fabric.publish(sample("k/x")), (err: unknown) => {
      assert.ok(err instanceof ZestError);
      assert.equal(err.kind, "conflict");
      assert.equal(err.message, "router B1: bucket has another replica count");
      return true;
    });
  });

  test("acknowledgements of one turn travel in one message per publisher", async () => {
    const [a, b] = await cluster(hub, clock, [{ zid: "A1" }, { zid: "B1", subs: ["k/**"] }]);
    const before = b!.transport!.published;
    await Promise.all(Array.from({ length: 20 }, (_, i) => a!.fabric.publish(sample(`k/${i}`))));
    assert.equal(b!.delivered.length, 20);
    assert.ok(b!.transport!.published - before <= 2, `B sent ${b!.transport!.published - before} messages for 20 acks`);
    assert.equal(b!.detail().acksSent, 20);
  });

  test("a turn that acknowledges writes and sends its own puts both in one socket write", async () => {
    const [a, b] = await cluster(hub, clock, [
      { zid: "A1", subs: ["a/**"] },
      { zid: "B1", subs: ["k/**"] },
    ]);
    // B writes on a key A wants while it takes A's writes: its acks and its sample share a turn.
    const own: Array<Promise<void>> = [];
    b!.deliver = async (s) => {
      b!.delivered.push(s);
      own.push(b!.fabric.publish(sample(`a/${s.key}`, "from B")));
    };
    await settle();
    const before = { published: b!.transport!.published, writes: b!.transport!.writes };
    await Promise.all(["k/1", "k/2", "k/3"].map((k) => a!.fabric.publish(sample(k))));
    await Promise.all(own);
    assert.equal(b!.delivered.length, 3);
    assert.equal(a!.delivered.length, 3);
    assert.equal(b!.transport!.published - before.published, 2, "one ACKS and one SAMPLES message");
    assert.equal(b!.transport!.writes - before.writes, 1, "both in one write");
  });

  test("samples published in one turn on one key travel as one message, in order", async () => {
    const [a, b] = await cluster(hub, clock, [{ zid: "A1" }, { zid: "B1", subs: ["k/**"] }]);
    const before = a!.transport!.published;
    await Promise.all(["1", "2", "3", "4"].map((v) => a!.fabric.publish(sample("k/same", v))));
    assert.equal(a!.transport!.published - before, 1);
    assert.deepEqual(
      b!.delivered.map((s) => s.payload.toString()),
      ["1", "2", "3", "4"],
    );
  });

  test("writes on many keys in one turn travel as one message per router that wants them", async () => {
    const [a, b, c] = await cluster(hub, clock, [
      { zid: "A1" },
      { zid: "B1", subs: ["k/**"] },
      { zid: "C1", subs: ["k/1", "k/2", "j/**"] },
    ]);
    const data: string[] = [];
    hub.filter = (subject, _data, from) => {
      if (from === a!.transport && !subject.startsWith("zest.in.") && !subject.startsWith("zest.d."))
        data.push(subject);
      return true;
    };
    const keys = [...Array.from({ length: 20 }, (_, i) => `k/${i}`), "j/x"];
    await Promise.all(keys.map((k) => a!.fabric.publish(sample(k, k))));
    assert.deepEqual(data.sort(), ["zest.w.B1", "zest.w.C1"]);
    assert.deepEqual(
      b!.delivered.map((s) => s.key),
      keys.filter((k) => k.startsWith("k/")),
    );
    assert.deepEqual(
      c!.delivered.map((s) => s.key),
      ["k/1", "k/2", "j/x"],
    );
  });

  test("a write nobody is known to want stays on its key's subject, after the turn's writes sent to each router", async () => {
    const [a, b] = await cluster(hub, clock, [{ zid: "A1" }, { zid: "B1", subs: ["k/**"] }]);
    // C subscribes on the bus, but A never hears its declarations (its hello and announcements are lost).
    const data: string[] = [];
    hub.filter = (subject, _d, from) => {
      if (from.name === "C1")
        return !(subject === "zest.hello" || subject.startsWith("zest.d.") || subject.startsWith("zest.in.A1."));
      if (from === a!.transport && !subject.startsWith("zest.in.") && !subject.startsWith("zest.d."))
        data.push(subject);
      return true;
    };
    const [c] = await cluster(hub, clock, [{ zid: "C1", subs: ["n/**"] }]);
    data.length = 0;
    assert.deepEqual(a!.fabric.interest("n/x", "subscriber"), []);
    await Promise.all(["k/1", "n/x", "k/2"].map((k) => a!.fabric.publish(sample(k, k))));
    await settle();
    assert.deepEqual(data, ["zest.w.B1", "zest.k.n.x"]);
    assert.deepEqual(
      b!.delivered.map((s) => s.key),
      ["k/1", "k/2"],
    );
    assert.deepEqual(
      c!.delivered.map((s) => s.key),
      ["n/x"],
      "NATS still forwards the write to a router whose subscription is newer than its announcement",
    );
  });

  test("a router known to want some writes of a turn, and subscribed unannounced to another, gets every write it is waited for", async () => {
    const [a, , c] = await cluster(hub, clock, [
      { zid: "A1" },
      { zid: "B1", subs: ["k/**"] },
      { zid: "C1", subs: ["k/**"] },
    ]);
    hub.filter = (subject, d) => !(subject === "zest.d.C1" && d[0] === 4); // C's new declarations are lost
    await c!.declare({ subs: ["k/**", "n/**"] });
    assert.deepEqual(a!.fabric.interest("n/x", "subscriber"), []);
    const keys = ["k/1", "k/2", "n/x", "k/3", "k/4"];
    const writes = keys.map((k) => track(a!.fabric.publish(sample(k, k))));
    await settle();
    assert.deepEqual(
      writes.map((w) => w.state),
      keys.map(() => "resolved"),
    );
    assert.deepEqual(
      c!.delivered.filter((s) => s.key.startsWith("k/")).map((s) => s.key),
      ["k/1", "k/2", "k/3", "k/4"],
    );
  });

  test("samples on several keys keep their order for a subscriber of all of them", async () => {
    const [a, b] = await cluster(hub, clock, [{ zid: "A1" }, { zid: "B1", subs: ["k/**"] }]);
    const keys = ["k/x", "k/x", "k/y", "k/x", "k/**", "k/y"];
    await Promise.all(keys.map((k, i) => a!.fabric.publish(sample(k, String(i), k === "k/**" ? "delete" : "put"))));
    assert.deepEqual(
      b!.delivered.map((s) => `${s.key}=${s.payload}`),
      keys.map((k, i) => `${k}=${i}`),
    );
  });

  test("a batch that reaches nobody is resent whole when the router comes back", async () => {
    const [a, b] = await cluster(hub, clock, [{ zid: "A1" }, { zid: "B1", subs: ["k/**"] }]);
    b!.transport!.disconnect();
    const writes = ["1", "2", "3"].map((v) => track(a!.fabric.publish(sample("k/same", v))));
    await advance(100);
    assert.deepEqual(
      writes.map((w) => w.state),
      ["pending", "pending", "pending"],
    );
    b!.transport!.reconnect();
    await advance(50);
    assert.deepEqual(
      writes.map((w) => w.state),
      ["resolved", "resolved", "resolved"],
    );
    assert.deepEqual(
      b!.delivered.map((s) => s.payload.toString()),
      ["1", "2", "3"],
    );
  });

  test("wildcard and very long keys go straight to each router that wants them, plain keys on their subject, every time", async () => {
    const [a, b] = await cluster(hub, clock, [{ zid: "A1" }, { zid: "B1", subs: ["w/**"] }]);
    const subjects: string[] = [];
    hub.filter = (subject) => {
      if (!subject.startsWith("zest.in.") && !subject.startsWith("zest.d.")) subjects.push(subject);
      return true;
    };
    const long = `w/${"x".repeat(3_100)}`;
    for (let i = 0; i < 2; i++) {
      for (const key of ["w/*", "w/k", long]) {
        const w = track(a!.fabric.publish(sample(key, `v${i}`)));
        await settle();
        assert.equal(w.state, "resolved", key);
      }
    }
    assert.deepEqual(subjects, ["zest.w.B1", "zest.k.w.k", "zest.w.B1", "zest.w.B1", "zest.k.w.k", "zest.w.B1"]);
    assert.deepEqual(
      b!.delivered.map((s) => s.key.slice(0, 5)),
      ["w/*", "w/k", "w/xxx", "w/*", "w/k", "w/xxx"],
    );
  });

  test("a router whose subscriptions overlap gets each sample once", async () => {
    const [a, b] = await cluster(hub, clock, [{ zid: "A1" }, { zid: "B1", subs: ["a/*/c", "a/b/*"] }]);
    await a!.fabric.publish(sample("a/b/c"));
    await settle();
    assert.equal(b!.delivered.length, 1);
    assert.equal(hub.delivered > 0, true);
  });

  test("a write waits for a router that lost its connection, and is resent when it reconnects", async () => {
    const [a, b] = await cluster(hub, clock, [{ zid: "A1" }, { zid: "B1", subs: ["k/**"] }]);
    b!.transport!.disconnect();
    const w = track(a!.fabric.publish(sample("k/x", "late")));
    await advance(TIMINGS.peerTimeoutMs / 2);
    assert.equal(w.state, "pending", "B may be reconnecting: the write waits");
    assert.equal(b!.delivered.length, 0);
    b!.transport!.reconnect();
    await advance(50);
    assert.equal(w.state, "resolved");
    assert.deepEqual(
      b!.delivered.map((s) => s.payload.toString()),
      ["late"],
    );
    assert.ok(Number(a!.detail().samplesResent) >= 1);
  });

  test("a write lost on the way is resent when the router that missed it says hello again", async () => {
    const [a, b] = await cluster(hub, clock, [{ zid: "A1" }, { zid: "B1", subs: ["k/**"] }]);
    // The sample vanishes (a NATS node died with it in flight); nobody tells A.
    hub.filter = (subject) => !subject.startsWith("zest.k.");
    const w = track(a!.fabric.publish(sample("k/x", "lost once")));
    await advance(100);
    assert.equal(w.state, "pending");
    hub.filter = undefined;
    // B's connection failed over: it reconnects and says hello.
    b!.transport!.disconnect();
    b!.transport!.reconnect();
    await advance(50);
    assert.equal(w.state, "resolved");
    assert.deepEqual(
      b!.delivered.map((s) => s.payload.toString()),
      ["lost once"],
    );
  });

  test("a dead router holds a write until it is forgotten after peer_timeout_ms of silence, then the write resolves", async () => {
    const [a, b, c] = await cluster(hub, clock, [
      { zid: "A1" },
      { zid: "B1", subs: ["k/**"] },
      { zid: "C1", subs: ["k/**"] },
    ]);
    b!.transport!.kill();
    const w = track(a!.fabric.publish(sample("k/x")));
    await advance(TIMINGS.peerTimeoutMs - 100);
    assert.equal(w.state, "pending");
    assert.deepEqual(a!.fabric.peers(), ["B1", "C1"]);
    await advance(200);
    assert.equal(w.state, "resolved");
    assert.deepEqual(a!.fabric.peers(), ["C1"]);
    assert.equal(c!.delivered.length, 1);
  });

  test("a goodbye releases the writes waiting for that router at once", async () => {
    const [a, b] = await cluster(hub, clock, [{ zid: "A1" }, { zid: "B1", subs: ["k/**"] }]);
    b!.deliver = () => new Promise(() => undefined); // never stored
    const w = track(a!.fabric.publish(sample("k/x")));
    await settle();
    assert.equal(w.state, "pending");
    await b!.fabric.close();
    await settle();
    assert.equal(w.state, "resolved");
    assert.deepEqual(a!.fabric.peers(), []);
  });

  test("a router that stays alive but never acknowledges fails the write with a timeout at ack_timeout_ms", async () => {
    const [a, b] = await cluster(hub, clock, [{ zid: "A1" }, { zid: "B1", subs: ["k/**"] }]);
    b!.deliver = () => new Promise(() => undefined);
    const w = track(a!.fabric.publish(sample("k/x")));
    await advance(TIMINGS.ackTimeoutMs - 50);
    assert.equal(w.state, "pending");
    await advance(100);
    assert.equal(w.state, "rejected");
    assert.equal((w.error as ZestError).kind, "timeout");
    assert.match(errorMessage(w.error), /router\(s\) B1 did not acknowledge the write on k\/x within 600 ms/);
    assert.deepEqual(a!.fabric.peers(), ["B1"], "heartbeats kept B known");
  });

  test("a write stops waiting for a router that drops its matching subscriber", async () => {
    const [a, b] = await cluster(hub, clock, [{ zid: "A1" }, { zid: "B1", subs: ["k/**"] }]);
    b!.deliver = () => new Promise(() => undefined);
    const w = track(a!.fabric.publish(sample("k/x")));
    await settle();
    await b!.declare({ subs: [] });
    assert.equal(w.state, "resolved");
  });

  test("a restarted publisher (same id, new epoch) is not taken for a duplicate", async () => {
    const [a, b] = await cluster(hub, clock, [{ zid: "A1" }, { zid: "B1", subs: ["k/**"] }]);
    for (let i = 0; i < 3; i++) await a!.fabric.publish(sample(`k/${i}`));
    a!.transport!.kill();
    const again = new FakeRouter("A1", hub, clock);
    await again.start();
    await settle();
    await again.fabric.publish(sample("k/after-restart"));
    assert.deepEqual(
      b!.delivered.map((s) => s.key),
      ["k/0", "k/1", "k/2", "k/after-restart"],
    );
  });

  test("a receiver that restarts (same id, new epoch) gets the writes its previous life did not acknowledge", async () => {
    const [a, b] = await cluster(hub, clock, [{ zid: "A1" }, { zid: "B1", subs: ["k/**"] }]);
    b!.deliver = () => new Promise(() => undefined); // received, never stored
    const w = track(a!.fabric.publish(sample("k/x", "again")));
    await settle();
    b!.transport!.kill();
    // A learns the new epoch from the declarations alone (the hello is lost).
    hub.filter = (subject) => subject !== "zest.hello";
    const reborn = new FakeRouter("B1", hub, clock);
    reborn.subs = ["k/**"];
    await reborn.start();
    await settle();
    assert.equal(w.state, "resolved");
    assert.deepEqual(
      reborn.delivered.map((s) => s.payload.toString()),
      ["again"],
    );
  });

  test("while disconnected, a write that known routers want fails as unavailable; pending ones fail too", async () => {
    const [a, b] = await cluster(hub, clock, [{ zid: "A1" }, { zid: "B1", subs: ["k/**"] }]);
    b!.deliver = () => new Promise(() => undefined);
    const pending = track(a!.fabric.publish(sample("k/pending")));
    await settle();
    a!.transport!.disconnect();
    await settle();
    assert.equal(pending.state, "rejected");
    assert.equal((pending.error as ZestError).kind, "unavailable");
    await assert.rejects(
      a!.fabric.publish(sample("k/x")),
      (e: ZestError) => e.kind === "unavailable" && /router\(s\) B1 with a matching subscriber/.test(e.message),
    );
    await a!.fabric.publish(sample("nobody/x"));
    // Our silence is not theirs: B stays known past peer_timeout_ms while we are away.
    await advance(TIMINGS.peerTimeoutMs * 2);
    assert.deepEqual(a!.fabric.peers(), ["B1"]);
    assert.equal(a!.fabric.status().connected, false);
  });
});

describe("queries across routers", () => {
  const answerWith =
    (value: string) =>
    async (selector: { key: string }, onReply: (r: import("../../src/core/reply.js").Reply) => void): Promise<void> => {
      onReply({ kind: "ok", sample: sample(selector.key, value) });
    };

  test("a query gathers the replies of every router with a matching queryable", async () => {
    const [a, b, c] = await cluster(hub, clock, [
      { zid: "A1" },
      { zid: "B1", qbls: [{ key: "q/**", complete: false }] },
      { zid: "C1", qbls: [{ key: "q/**", complete: true }] },
    ]);
    b!.answer = answerWith("from B");
    c!.answer = answerWith("from C");
    const replies: string[] = [];
    await a!.fabric.query({ key: "q/x", parameters: new Parameters("a=1") }, 1_000, (r) =>
      replies.push(r.kind === "ok" ? r.sample.payload.toString() : "err"),
    );
    assert.deepEqual(replies.sort(), ["from B", "from C"]);
  });

  test("a router that does not answer in time adds a timeout error entry; what arrived is kept", async () => {
    const [a, b, c] = await cluster(hub, clock, [
      { zid: "A1" },
      { zid: "B1", qbls: [{ key: "q/**", complete: false }] },
      { zid: "C1", qbls: [{ key: "q/**", complete: false }] },
    ]);
    b!.answer = answerWith("from B");
    c!.answer = () => new Promise(() => undefined);
    const replies: string[] = [];
    const q = track(
      a!.fabric.query({ key: "q/x", parameters: new Parameters("") }, 300, (r) =>
        replies.push(r.kind === "ok" ? r.sample.payload.toString() : r.payload.toString()),
      ),
    );
    await advance(350);
    assert.equal(q.state, "resolved");
    assert.deepEqual(replies, ["from B", "Timeout: router C1 did not answer within 300 ms"]);
  });

  test("a default query on a key the target reads synchronously is answered without running its queryables", async () => {
    const [a, b] = await cluster(hub, clock, [{ zid: "A1" }, { zid: "B1", qbls: [{ key: "q/**", complete: false }] }]);
    const reads: string[] = [];
    b!.read = (key) => {
      reads.push(key);
      return key === "q/held" ? [{ kind: "ok", sample: sample(key, "read") }] : undefined;
    };
    b!.answer = answerWith("queried");
    const ask = async (key: string, parameters = "", extra: object = {}): Promise<string[]> => {
      const replies: string[] = [];
      await a!.fabric.query(
        { key, parameters: new Parameters(parameters) },
        1_000,
        (r) => replies.push(r.kind === "ok" ? r.sample.payload.toString() : "err"),
        extra,
      );
      return replies;
    };
    assert.deepEqual(await ask("q/held"), ["read"]);
    assert.equal(b!.answered, 0);
    // The host cannot read it that way: the queryables answer, as before.
    assert.deepEqual(await ask("q/other"), ["queried"]);
    assert.equal(b!.answered, 1);
    // Parameters, content or another target need the queryables themselves: no read is tried.
    assert.deepEqual(await ask("q/held", "x=1"), ["queried"]);
    assert.deepEqual(await ask("q/held", "", { target: "best_matching" }), ["queried"]);
    assert.deepEqual(await ask("q/held", "", { content: { payload: Buffer.from("p") } }), ["queried"]);
    assert.equal(b!.answered, 4);
    assert.deepEqual(reads, ["q/held", "q/other"]);
    // No reply read that way: still a final batch, so the query ends at once, not at its timeout.
    b!.read = () => [];
    const q = track(ask("q/held"));
    await settle();
    assert.equal(q.state, "resolved");
  });

  test("an unreachable router adds an unavailable error entry at once; a silent one a timeout when forgotten", async () => {
    const [a, b] = await cluster(hub, clock, [{ zid: "A1" }, { zid: "B1", qbls: [{ key: "q/**", complete: false }] }]);
    b!.transport!.kill();
    const errors: string[] = [];
    await a!.fabric.query({ key: "q/x", parameters: new Parameters("") }, 5_000, (r) =>
      errors.push(r.kind === "err" ? `${r.errorKind}: ${r.payload}` : "ok"),
    );
    assert.deepEqual(errors, ["unavailable: router B1 is unreachable (no responders on NATS)"]);
  });
});

describe("declarations", () => {
  test("interest(key, kind) tells which routers declared a subscriber, a queryable or a liveliness token", async () => {
    const [a, b, c] = await cluster(hub, clock, [
      { zid: "A1" },
      { zid: "B1", subs: ["s/**"] },
      { zid: "C1", qbls: [{ key: "s/q", complete: true }] },
    ]);
    await c!.declare({ tokens: ["alive/c"] });
    assert.deepEqual(a!.fabric.interest("s/q", "subscriber"), ["B1"]);
    assert.deepEqual(a!.fabric.interest("s/**", "queryable"), ["C1"]);
    assert.deepEqual(a!.fabric.interest("alive/**", "token"), ["C1"]);
    assert.deepEqual(b!.fabric.interest("alive/c", "token"), ["C1"]);
    await c!.declare({ tokens: ["alive/c", "alive/c2"] });
    // A token dies with its router.
    c!.transport!.kill();
    await advance(TIMINGS.peerTimeoutMs + 100);
    assert.deepEqual(a!.fabric.interest("alive/**", "token"), []);
    assert.deepEqual(
      a!.declarationChanges.filter((c) => c.includes("token")),
      ["C1 token +alive/c", "C1 token +alive/c2", "C1 token -alive/c -alive/c2"],
    );
  });

  test("interest answers for a key asked before follow every declaration change, join and forget (remembered answers are dropped)", async () => {
    const [a, b] = await cluster(hub, clock, [{ zid: "A1" }, { zid: "B1", subs: ["m/**"] }]);
    assert.deepEqual(a!.fabric.interest("m/k", "subscriber"), ["B1"]);
    // A write on the same key then waits for exactly the routers that want it now.
    await b!.declare({ subs: ["other/**"] });
    assert.deepEqual(a!.fabric.interest("m/k", "subscriber"), []);
    const none = track(a!.fabric.publish(sample("m/k")));
    await settle();
    assert.equal(none.state, "resolved");
    assert.equal(b!.delivered.length, 0);
    await b!.declare({ subs: ["m/k"] });
    assert.deepEqual(a!.fabric.interest("m/k", "subscriber"), ["B1"]);
    const c = new FakeRouter("C1", hub, clock);
    c.subs = ["m/*"];
    await c.start();
    await settle();
    assert.deepEqual(a!.fabric.interest("m/k", "subscriber"), ["B1", "C1"]);
    const both = track(a!.fabric.publish(sample("m/k")));
    await settle();
    assert.equal(both.state, "resolved");
    assert.deepEqual([b!.delivered.length, c.delivered.length], [1, 1]);
    // The answer handed out is a copy: changing it changes nothing in the fabric.
    a!.fabric.interest("m/k", "subscriber").pop();
    assert.deepEqual(a!.fabric.interest("m/k", "subscriber"), ["B1", "C1"]);
    c.transport!.kill();
    await advance(TIMINGS.peerTimeoutMs + 100);
    assert.deepEqual(a!.fabric.interest("m/k", "subscriber"), ["B1"]);
  });

  test("a missed declaration change is fetched when a heartbeat shows a newer version", async () => {
    const [a, b] = await cluster(hub, clock, [{ zid: "A1" }, { zid: "B1", subs: ["old/**"] }]);
    hub.filter = (subject, data) => !(subject === "zest.d.B1" && data[0] === 4); // B's announcement is lost
    await b!.declare({ subs: ["new/**"] });
    assert.deepEqual(a!.fabric.interest("new/x", "subscriber"), []);
    hub.filter = undefined;
    await advance(TIMINGS.heartbeatMs * 2);
    assert.deepEqual(a!.fabric.interest("new/x", "subscriber"), ["B1"]);
    assert.deepEqual(a!.fabric.interest("old/x", "subscriber"), []);
  });

  test("malformed messages are dropped and counted, and the fabric keeps working", async () => {
    const [a, b] = await cluster(hub, clock, [{ zid: "A1" }, { zid: "B1", subs: ["k/**"] }]);
    const rogue = hub.connect("rogue");
    const junk = [
      Buffer.alloc(0),
      Buffer.of(4, 0, 0),
      Buffer.of(99),
      Buffer.of(1, 7, 0, 0, 0, 0),
      Buffer.from('{"t":"decl"}'),
    ];
    for (const j of junk) {
      rogue.publish("zest.d.EE", j);
      rogue.publish("zest.hello", j);
      rogue.publish("zest.q.B1", j, "zest.in.EE.p.B1");
      rogue.publish("zest.w.B1", j);
      rogue.publish("zest.k.k.x", j);
      rogue.publish("zest.in.A1.k", j);
      rogue.publish("zest.in.A1.zz.1", j);
    }
    await settle();
    assert.ok(Number(b!.detail().malformedDropped) >= 15, `B dropped ${String(b!.detail().malformedDropped)}`);
    assert.ok(Number(a!.detail().malformedDropped) >= 10);
    await a!.fabric.publish(sample("k/still-works"));
    assert.deepEqual(
      b!.delivered.map((s) => s.key),
      ["k/still-works"],
    );
  });
});
