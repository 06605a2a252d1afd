/**
 * The zenoh face alone (src/door/face.ts), driven with a recording sink and no socket: what both
 * zenoh doors get from it.
 */
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { test } from "node:test";
import { DEFAULT_ADMIN_PERMISSIONS } from "../../src/access/admin-permissions.js";
import { clientPolicy } from "../../src/access/client-policy.js";
import { AccessControl } from "../../src/access/access.js";
import { silentLogger } from "../../src/core/log.js";
import type { Query } from "../../src/core/query.js";
import type { Reply } from "../../src/core/reply.js";
import { Router } from "../../src/core/router.js";
import type { Sample } from "../../src/core/sample.js";
import { Session } from "../../src/core/session.js";
import { Face, type FaceOptions, type FaceSink } from "../../src/door/face.js";
import { DEFAULT_FACE_LIMITS } from "../../src/door/limits.js";

/** A sink that records every message the face sends its client. */
class Recorder implements FaceSink {
  readonly out: string[] = [];
  readonly queries: Array<{ queryId: number; query: Query }> = [];
  sample(id: number, s: Sample): void {
    this.out.push(`sample ${id} ${s.key}=${s.payload.toString()}`);
  }
  reply(id: number, r: Reply): void {
    this.out.push(
      r.kind === "ok" ? `reply ${id} ${r.sample.key}=${r.sample.payload.toString()}` : `err ${id} ${r.payload}`,
    );
  }
  final(id: number): void {
    this.out.push(`final ${id}`);
  }
  query(queryableId: number, queryId: number, query: Query): boolean {
    this.queries.push({ queryId, query });
    this.out.push(`query ${queryableId} ${query.key}`);
    return true;
  }
}

function face(options: Partial<FaceOptions> & { router?: Router } = {}) {
  const router = options.router ?? new Router({ logger: silentLogger });
  const sink = new Recorder();
  const f = new Face({
    session: new Session(router, "face"),
    policy: clientPolicy(undefined, undefined, DEFAULT_ADMIN_PERMISSIONS, true),
    limits: DEFAULT_FACE_LIMITS,
    logger: silentLogger,
    sink,
    redeclare: "refuse",
    ...options,
  });
  return { f, sink, router, other: new Session(router, "other") };
}

const tick = () => new Promise((r) => setImmediate(r));

test("routing once per face: two subscribers of one client matching a sample give one message", async () => {
  const { f, sink, other } = face({ oncePerFace: true });
  f.declareSubscriber(1, f.key("*/wildcard"));
  f.declareSubscriber(2, f.key("**/wildcard"));
  await other.put("a/wildcard", "1");
  await other.put("b/wildcard", "2");
  // Which subscriber's delivery carries it is the router's order; the client matches it to both.
  assert.deepEqual(
    sink.out.map((m) => m.replace(/^sample \d /, "sample ")),
    ["sample a/wildcard=1", "sample b/wildcard=2"],
  );
});

test("without routing once per face (the remote API), each subscriber gets its own message", async () => {
  const { f, sink, other } = face();
  f.declareSubscriber(1, f.key("*/w"));
  f.declareSubscriber(2, f.key("**/w"));
  await other.put("a/w", "1");
  assert.deepEqual(sink.out.sort(), ["sample 1 a/w=1", "sample 2 a/w=1"]);
});

test("keys are canonized with the router's limits, on every path into the face", () => {
  const { f } = face({ router: new Router({ logger: silentLogger, keyExprLimits: { maxChunks: 3 } }) });
  assert.equal(f.key("a/b/c"), "a/b/c");
  assert.throws(() => f.key("a/b/c/d"), /more than the limit of 3/);
});

test("a redeclared id is refused or replaces the earlier declaration, as the door says", async () => {
  const refusing = face();
  refusing.f.declareSubscriber(1, refusing.f.key("x/**"));
  assert.throws(() => refusing.f.declareSubscriber(1, refusing.f.key("y/**")), /id 1 is already declared/);
  const replacing = face({ redeclare: "replace" });
  replacing.f.declareSubscriber(1, replacing.f.key("x/**"));
  replacing.f.declareSubscriber(1, replacing.f.key("y/**"));
  await replacing.other.put("x/a", "old");
  await replacing.other.put("y/a", "new");
  assert.deepEqual(replacing.sink.out, ["sample 1 y/a=new"]);
  assert.equal(replacing.f.declarations, 1);
});

test("the declaration limit counts the door's own declarations too", () => {
  let own = 2;
  const { f } = face({ limits: { ...DEFAULT_FACE_LIMITS, maxDeclarations: 3 }, doorDeclarations: () => own });
  f.declareSubscriber(1, f.key("a"));
  assert.throws(() => f.declareSubscriber(2, f.key("b")), /already holds 3 declarations/);
  own = 1;
  f.declareSubscriber(2, f.key("b"));
});

test("a get: replies, then one final; past the gets-in-flight limit, an error reply and a final", async () => {
  const { f, sink, other } = face({ limits: { ...DEFAULT_FACE_LIMITS, maxPendingGets: 1 } });
  other.declareQueryable(
    "q/**",
    (q) =>
      new Promise<void>((resolve) =>
        setTimeout(() => {
          q.reply("q/a", "A");
          resolve();
        }, 20),
      ),
  );
  f.get(1, f.key("q/**"), { parameters: "", timeoutMs: 0 });
  f.get(2, f.key("q/**"), { parameters: "", timeoutMs: 0 });
  assert.equal(f.pendingGets, 1);
  await new Promise((r) => setTimeout(r, 80));
  assert.deepEqual(sink.out, [
    "err 2 unavailable: this client already has 1 gets in flight (the limit)",
    "final 2",
    "reply 1 q/a=A",
    "final 1",
  ]);
});

test("a client's reply is checked in one order: known query, valid key, within the query, allowed", async () => {
  const { f, sink, other } = face();
  f.declareQueryable(7, f.key("r/**"));
  const replies: string[] = [];
  const done = other.getStream("r/x", (r) => void replies.push(r.kind === "ok" ? r.sample.key : "err"), {
    timeoutMs: 500,
  });
  await tick();
  assert.deepEqual(sink.out, ["query 7 r/x"]);
  const { queryId } = sink.queries[0]!;
  assert.equal(
    f.replyTarget(queryId + 1, () => "r/x"),
    undefined,
    "an unknown query",
  );
  assert.equal(
    f.replyTarget(queryId, () => "r//x"),
    undefined,
    "an invalid key",
  );
  assert.equal(
    f.replyTarget(queryId, () => "elsewhere"),
    undefined,
    "outside the query",
  );
  const t = f.replyTarget(queryId, () => "r/x");
  assert.equal(t?.key, "r/x");
  t!.query.reply(t!.key, "ok");
  f.finishQuery(queryId);
  await done;
  assert.deepEqual(replies, ["r/x"]);
});

test("closing the face ends the queries waiting on the client and releases its declarations", async () => {
  const { f, other } = face();
  f.declareQueryable(1, f.key("c/**"));
  f.declareSubscriber(2, f.key("c/**"));
  f.declareToken(3, f.key("c/token"));
  assert.equal(other.livelinessGet("c/**").length, 1);
  const started = Date.now();
  const done = other.get("c/x", { timeoutMs: 5_000 });
  await tick();
  f.close();
  await done;
  assert.ok(Date.now() - started < 1_000, "the get ended when the client went, not at its timeout");
  assert.equal(other.matchingStatus("c/x", "subscribers"), false);
  assert.equal(other.livelinessGet("c/**").length, 0);
});

test("admin permissions: writes need write permission, reads read permission; the rest of the key space is untouched", () => {
  const ro = face({ policy: clientPolicy(undefined, undefined, { read: true, write: false }, true) }).f;
  assert.throws(
    () => ro.put(ro.key("@/router/x/config/a"), Buffer.from("{}"), {}),
    /writing the admin space is disabled/,
  );
  assert.throws(() => ro.declareQueryable(1, ro.key("@/router/x/**")), /writing the admin space is disabled/);
  assert.equal(ro.verdict("query", "@/router/x/**"), true);
  const remote = face({ policy: clientPolicy(undefined, undefined, DEFAULT_ADMIN_PERMISSIONS, false) }).f;
  assert.throws(() => remote.delete(remote.key("@/router/x/config/a"), {}), /from loopback clients only/);
  const blind = face({ policy: clientPolicy(undefined, undefined, { read: false, write: true }, true) }).f;
  assert.throws(() => blind.declareSubscriber(1, blind.key("@/router/x/**")), /reading the admin space is disabled/);
  blind.declareSubscriber(2, blind.key("demo/**"));
});

test("access control: a read allowed in part is filtered per key; a write allowed in part is refused whole", async () => {
  const access = AccessControl.fromConfig({
    enabled: true,
    default_permission: "deny",
    rules: [{ id: "r", messages: ["put", "declare_subscriber"], key_exprs: ["open/**"], permission: "allow" }],
    subjects: [{ id: "all", cidrs: ["127.0.0.0/8"] }],
    policies: [{ rules: ["r"], subjects: ["all"] }],
  });
  const principal = access.principalOf({ user: undefined, address: "127.0.0.1" });
  const { f, sink, other } = face({ policy: clientPolicy(access, principal, DEFAULT_ADMIN_PERMISSIONS, true) });
  f.declareSubscriber(1, f.key("**"));
  await other.put("open/a", "yes");
  await other.put("closed/a", "no");
  assert.deepEqual(sink.out, ["sample 1 open/a=yes"]);
  assert.throws(() => f.put(f.key("**"), Buffer.from("x"), {}), /may not put \*\*/);
  assert.throws(() => f.put(f.key("closed/a"), Buffer.from("x"), {}), /an anonymous client may not put closed\/a/);
});

test("a burst of gets pauses the client at the mark and resumes it when one ends, refusing none below the memory bound", async () => {
  const events: string[] = [];
  const { f, sink, other } = face({ limits: { ...DEFAULT_FACE_LIMITS, pauseAtPendingGets: 3, maxPendingGets: 5 } });
  Object.assign(sink, { pause: () => events.push("pause"), resume: () => events.push("resume") });
  const answers: Array<() => void> = [];
  other.declareQueryable(
    "b/**",
    (q) =>
      new Promise<void>((resolve) =>
        answers.push(() => {
          q.reply("b/x", "x");
          resolve();
        }),
      ),
  );
  for (let id = 1; id <= 6; id++) f.get(id, f.key("b/**"), { parameters: "", timeoutMs: 0 });
  await tick();
  assert.deepEqual(events, ["pause"]);
  assert.equal(f.pendingGets, 5);
  assert.ok(sink.out.includes("err 6 unavailable: this client already has 5 gets in flight (the limit)"));
  for (const answer of answers.splice(0)) answer();
  await tick();
  await tick();
  assert.deepEqual(events, ["pause", "resume"]);
  assert.equal(f.pendingGets, 0);
});

test("router queries past the pending bound on the client's queryables get an unavailable error reply; those within it reach the client", async () => {
  const { f, sink, other } = face({ limits: { ...DEFAULT_FACE_LIMITS, maxPendingQueries: 2 } });
  f.declareQueryable(1, f.key("pq/**"));
  const replies: string[] = [];
  const gets = [1, 2, 3].map((i) =>
    other.getStream(`pq/${i}`, (r) => void replies.push(r.kind === "err" ? r.payload.toString() : "ok"), {
      timeoutMs: 300,
    }),
  );
  await tick();
  assert.equal(sink.queries.length, 2);
  for (const { queryId } of sink.queries) f.finishQuery(queryId);
  await Promise.all(gets);
  assert.deepEqual(replies, ["unavailable: the queryable's client has 2 queries pending (the limit)"]);
});
