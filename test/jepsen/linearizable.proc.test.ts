/**
 * The short form of the Jepsen-style suite: clients on three routers over a three-node NATS
 * cluster record histories of reads, conditional writes, plain puts and deletes, and puts with a
 * lifetime (memory storages on every router, and a jetstream storage), one seed per fault; once
 * the fault is over, every router reads every key. Porcupine checks each history (with those last
 * reads) for linearizability per key, which is what "no acknowledged write lost", "no deleted key
 * coming back" and "a key with a TTL expires once and stays gone" mean here, and the memory
 * replicas' digests must agree (docs/cluster.md, "Faults").
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { rng } from "../support/rng.js";
import { FAULTS, type JepsenCluster, PROXIED, replicasConverge, startJepsenCluster } from "./cluster.js";
import { buildChecker, check, finalReads, type Recorded, recordHistory } from "./history.js";

const RUN_MS = 4_000;

/** What a hand-made history's operation defaults to. */
const op = (o: Partial<Recorded> & Pick<Recorded, "kind" | "call" | "return">): Recorded => ({
  client: 0,
  key: "k",
  value: "",
  expect: "",
  ttl: 0,
  status: "ok",
  answered: true,
  ...o,
});
const MS = 1_000_000;

describe("the checker", () => {
  let checker: string;
  before(() => {
    checker = buildChecker();
  });

  test("passes a linearizable history of conditional writes and finds a lost update", () => {
    const legal = [
      op({ kind: "create", value: "a", call: 0, return: 10 }),
      op({ client: 1, kind: "cas", value: "b", expect: "a", call: 20, return: 30 }),
      op({ client: 2, kind: "cas", value: "c", expect: "a", status: "fail", call: 25, return: 35 }),
      op({ client: 2, kind: "read", value: "b", call: 40, return: 50 }),
    ];
    assert.equal(check(checker, "legal", legal).result, "ok");
    // Two writers both answered 200 on version "a": one update is lost.
    const lost = [
      op({ kind: "create", value: "a", call: 0, return: 10 }),
      op({ client: 1, kind: "cas", value: "b", expect: "a", call: 20, return: 30 }),
      op({ client: 2, kind: "cas", value: "c", expect: "a", call: 20, return: 30 }),
    ];
    const verdict = check(checker, "lost", lost);
    assert.equal(verdict.result, "illegal");
    assert.deepEqual(verdict.illegal, ["k"]);
  });

  test("finds an acknowledged plain put lost and a deleted key back, and passes a racing one", () => {
    const put = op({ kind: "put", value: "a", call: 0, return: 10 });
    assert.equal(
      check(checker, "put-lost", [put, op({ kind: "read", value: "", call: 20, return: 30 })]).result,
      "illegal",
    );
    const del = op({ client: 1, kind: "delete", call: 20, return: 30 });
    assert.equal(
      check(checker, "delete-back", [put, del, op({ kind: "read", value: "a", call: 40, return: 50 })]).result,
      "illegal",
    );
    // The delete was still in flight: the read may come before it.
    const racing = op({ client: 1, kind: "delete", call: 20, return: 60 });
    assert.equal(
      check(checker, "racing", [put, racing, op({ kind: "read", value: "a", call: 40, return: 50 })]).result,
      "ok",
    );
    // A write that got no answer may apply at any later time.
    const unknown = op({ client: 1, kind: "put", value: "b", status: "unknown", call: 20, return: 30 });
    assert.equal(
      check(checker, "unknown", [put, unknown, op({ kind: "read", value: "b", call: 900, return: 910 })]).result,
      "ok",
    );
    // Left out of the search (nobody read it), it hides no violation: the deleted value still may not come back.
    const unread = op({ client: 2, kind: "put", value: "c", status: "unknown", call: 5, return: 8 });
    const after = op({ kind: "read", value: "a", call: 40, return: 50 });
    assert.equal(check(checker, "unread-unknown", [put, unread, del, after]).result, "illegal");
    assert.equal(check(checker, "unread-unknown-ok", [put, unread, after]).result, "ok");
  });

  test("finds a value shown past its lifetime, or back after it expired", () => {
    const put = op({ kind: "put", value: "a", ttl: 100, call: 0, return: 10 * MS });
    const read = (value: string, at: number): Recorded =>
      op({ client: 1, kind: "read", value, call: at * MS, return: (at + 5) * MS });
    assert.equal(check(checker, "ttl-ok", [put, read("a", 50), read("", 120), read("", 300)]).result, "ok");
    // Read 150 ms after a put of 100 ms answered at 10 ms: it had expired.
    assert.equal(check(checker, "ttl-late", [put, read("a", 150)]).result, "illegal");
    // Gone before its earliest deadline (100 ms).
    assert.equal(check(checker, "ttl-early", [put, read("", 40)]).result, "illegal");
    // Within the deadline's uncertainty (100 to 110 ms) it may show, then be gone, but not show again.
    assert.equal(check(checker, "ttl-twice", [put, read("", 102), read("a", 108)]).result, "illegal");
    assert.equal(check(checker, "ttl-edge", [put, read("a", 104), read("", 106)]).result, "ok");
  });
});

describe("Jepsen-style histories across three routers under faults, checked by Porcupine", () => {
  let checker: string;
  let c: JepsenCluster;

  before(async () => {
    checker = buildChecker();
    c = await startJepsenCluster();
  });
  after(async () => {
    await c?.stop();
  });

  /** Records a history under a fault, reads every key through every router once it is over, and checks both. */
  const runAndCheck = async (name: string, seed: number, target: number): Promise<void> => {
    const prefixes = [`mem/${name}`, `cas/${name}`];
    const t0 = process.hrtime.bigint();
    const recording = recordHistory({
      url: (i) => c.routers[i]!.url,
      routers: 3,
      clientsPerRouter: 2,
      prefixes,
      durationMs: RUN_MS,
      draw: rng(seed),
      t0,
    });
    await FAULTS[name]!(c, target, RUN_MS);
    const history = await recording;
    await c.met();
    const last = await finalReads((i) => c.routers[i]!.url, 3, prefixes, t0);
    const converged = await replicasConverge(c);
    const verdict = check(checker, name, [...history, ...last.reads]);
    const counts = { ok: 0, fail: 0, unknown: 0 };
    for (const o of history) counts[o.status]++;
    console.log(
      `# ${name}: ${verdict.operations} operations on ${verdict.keys} keys, ${JSON.stringify(counts)}: ${verdict.result} ${verdict.illegal.join(" ")}`,
    );
    const applied = (kind: Recorded["kind"], ttl = false): boolean =>
      history.some((o) => o.kind === kind && o.status === "ok" && o.ttl > 0 === ttl);
    assert.ok(
      applied("cas") && applied("put") && applied("put", true) && applied("delete"),
      "every kind of write applied",
    );
    assert.ok(
      history.some((o) => o.status === "fail"),
      "some conditional writes were refused (the clients raced)",
    );
    assert.equal(verdict.result, "ok", `the history is linearizable (see ${verdict.file})`);
    assert.ok(last.converged, "every router reads the same once the fault is over");
    assert.ok(converged, "the memory replicas' digests agree once the fault is over");
  };

  test("no fault", () => runAndCheck("none", 1, 0));

  test("a router killed with SIGKILL and restarted", () => runAndCheck("kill", 2, 2));

  test("a nats-server killed with SIGKILL and restarted", async () => {
    await runAndCheck("nats", 3, 1);
    await c.nats.waitReady();
  });

  test("a router paused (SIGSTOP) past its peers' timeout, then resumed", () => runAndCheck("pause", 4, 2));

  test("a router cut from NATS (TCP proxy) past its peers' timeout, then healed", () =>
    runAndCheck("partition", 5, PROXIED));
});
