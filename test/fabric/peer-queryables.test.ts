/**
 * The other routers' declarations by kind, router and key expression, queryables with their
 * completeness (docs/zenoh-network.md, "Clusters": what a joined router declares for them to the
 * zenoh network), which routers want a key, and the change events when only a queryable's
 * completeness changed.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { pino } from "pino";
import type { RemoteDeclarationChange } from "../../src/core/fabric.js";
import { ManualClock } from "../../src/fabric/clock.js";
import type { Declaration, DeclarationKind, DeclarationsMessage } from "../../src/fabric/envelope.js";
import { PeerTable } from "../../src/fabric/peer-table.js";

const qbl = (key: string, complete: boolean): Declaration => ({ kind: "queryable", key, complete });
const sub = (key: string): Declaration => ({ kind: "subscriber", key, complete: false });

function table() {
  const changes: RemoteDeclarationChange[] = [];
  const events = {
    alive() {},
    changed() {},
    forgotten() {},
    declarations: (c: RemoteDeclarationChange) => void changes.push(c),
  };
  return { t: new PeerTable(new ManualClock(), 1000, events, pino({ level: "silent" })), changes };
}

const tok = (key: string): Declaration => ({ kind: "token", key, complete: false });

const listed = (t: PeerTable, key: string, kind: DeclarationKind = "queryable") =>
  t
    .declarations(key, kind)
    .map((q) => `${q.zid} ${q.key} ${q.complete}`)
    .sort();

describe("the other routers' queryables", () => {
  test("are listed by router, key expression and completeness, intersecting the key asked", () => {
    const { t } = table();
    t.ingest({ zid: "E1", epoch: 1, ver: 1, decls: [qbl("a/**", true), qbl("b/x", false), sub("a/**")] });
    t.ingest({ zid: "E2", epoch: 1, ver: 1, decls: [qbl("a/**", false)] });
    assert.deepEqual(listed(t, "**"), ["E1 a/** true", "E1 b/x false", "E2 a/** false"]);
    assert.deepEqual(listed(t, "b/*"), ["E1 b/x false"]);
    assert.deepEqual(listed(t, "c/**"), []);
  });

  test("newer declarations replace a router's entries, and a forgotten router's go", () => {
    const { t } = table();
    t.ingest({ zid: "E1", epoch: 1, ver: 1, decls: [qbl("a/**", true)] });
    t.ingest({ zid: "E1", epoch: 1, ver: 2, decls: [qbl("a/**", false), qbl("c", true)] });
    assert.deepEqual(listed(t, "**"), ["E1 a/** false", "E1 c true"]);
    t.forget("E1", "left");
    assert.deepEqual(listed(t, "**"), []);
  });

  test("a queryable whose completeness alone changed is reported removed and added again", () => {
    const { t, changes } = table();
    t.ingest({ zid: "E1", epoch: 1, ver: 1, decls: [qbl("a/**", true), qbl("b", false)] });
    changes.length = 0;
    t.ingest({ zid: "E1", epoch: 1, ver: 2, decls: [qbl("a/**", false), qbl("b", false)] });
    assert.deepEqual(changes, [{ zid: "E1", kind: "queryable", added: ["a/**"], removed: ["a/**"] }]);
    changes.length = 0;
    t.ingest({ zid: "E1", epoch: 1, ver: 3, decls: [qbl("a/**", false), qbl("b", false)] });
    assert.deepEqual(changes, []);
  });
});

describe("the other routers' subscribers and tokens", () => {
  test("are listed by router and key expression, apart from the other kinds, and go with their router", () => {
    const { t } = table();
    t.ingest({ zid: "E1", epoch: 1, ver: 1, decls: [sub("a/**"), sub("b/x"), qbl("q/**", true), tok("live/1")] });
    t.ingest({ zid: "E2", epoch: 1, ver: 1, decls: [sub("a/**"), tok("live/2")] });
    assert.deepEqual(listed(t, "**", "subscriber"), ["E1 a/** false", "E1 b/x false", "E2 a/** false"]);
    assert.deepEqual(listed(t, "a/y", "subscriber"), ["E1 a/** false", "E2 a/** false"]);
    assert.deepEqual(listed(t, "**", "token"), ["E1 live/1 false", "E2 live/2 false"]);
    assert.deepEqual(listed(t, "**"), ["E1 q/** true"]);
    // Which routers want a key, and whether one does: answered from the same entries.
    assert.deepEqual(t.interest("a/y", "subscriber"), ["E1", "E2"]);
    assert.equal(t.wants("E2", "b/x", "subscriber"), false);
    assert.equal(t.wants("E1", "b/x", "subscriber"), true);
    assert.deepEqual(t.complete("q/z"), ["E1"]);
    t.ingest({ zid: "E1", epoch: 1, ver: 2, decls: [sub("c")] });
    assert.deepEqual(listed(t, "**", "subscriber"), ["E1 c false", "E2 a/** false"]);
    assert.deepEqual(t.interest("a/y", "subscriber"), ["E2"]);
    assert.deepEqual(t.complete("q/z"), []);
    t.forget("E2", "silent");
    assert.deepEqual(listed(t, "**", "subscriber"), ["E1 c false"]);
    assert.deepEqual(listed(t, "**", "token"), []);
  });
});

describe("who wants a key, when an index is empty", () => {
  const store = (key: string, name: string): DeclarationsMessage["decls"][number] => ({
    kind: "store",
    key,
    complete: false,
    store: name,
  });

  test("nobody, at once; and a declaration made afterwards is found, none left behind once it goes", () => {
    const { t } = table();
    assert.deepEqual(t.interest("a/b", "subscriber"), []);
    assert.deepEqual(t.ackTargets("a/b", ["jetstream/b"]), []);
    // Only storages of shared stores elsewhere: no plain subscriber to walk.
    t.ingest({ zid: "E1", epoch: 1, ver: 1, decls: [store("a/**", "jetstream/b")] });
    assert.deepEqual(t.interest("a/b", "subscriber"), ["E1"]);
    assert.deepEqual(t.interest("a/b", "queryable"), []);
    assert.deepEqual(t.ackTargets("a/b", ["jetstream/b"]), []);
    assert.deepEqual(t.ackTargets("a/b", ["jetstream/c"]), ["E1"]);
    t.ingest({ zid: "E2", epoch: 1, ver: 1, decls: [sub("a/**")] });
    assert.deepEqual(t.ackTargets("a/b", ["jetstream/b"]), ["E2"]);
    t.forget("E1", "left");
    assert.deepEqual(t.ackTargets("a/b", ["jetstream/b"]), ["E2"]);
    t.forget("E2", "left");
    assert.deepEqual(t.interest("a/b", "subscriber"), []);
    assert.deepEqual(t.ackTargets("a/b", ["jetstream/b"]), []);
  });
});
