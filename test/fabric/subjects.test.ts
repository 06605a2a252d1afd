/**
 * The key ↔ subject mapping of the NATS fabric: exhaustive round trips, token validity, and
 * coverings checked against an independent key-expression model and against a real nats-server.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { canonize } from "../../src/keyexpr/index.js";
import {
  coverAll,
  coveringSubjects,
  decodeToken,
  encodeToken,
  keyToSubject,
  MAX_SUBJECT_LENGTH,
  subjectIncludes,
  subjectsIntersect,
  subjectToKey,
} from "../../src/fabric/subjects.js";
import { matchesKey, universe } from "../keyexpr/reference.js";
import { startNatsCluster, type NatsCluster } from "../support/nats-cluster.js";

/** A token NATS accepts and never reads as a wildcard: printable ASCII, no `.`, not `*`/`>`. */
const VALID_TOKEN = /^[!-)+-\-/-=?-~]+$/;

/** Chunks that exercise every escape: dots, spaces, wildcards chars, the escape char, unicode. */
const TRICKY = [
  "a",
  "@",
  "@x",
  "a.b",
  "a b",
  "tab\there",
  "~",
  "~7E",
  ">",
  "*x",
  "a*",
  "x>y",
  "é",
  "日本",
  "😀",
  "\u0000",
  "\u007f",
  "$",
  "%41",
  "-_=",
  ".",
  "..",
  " ",
  "\n",
];

test("every chunk round-trips and becomes one valid NATS token", () => {
  for (const c of [...TRICKY, ...TRICKY.map((t) => `${t}${t}`), ""]) {
    const tok = encodeToken(c);
    assert.match(tok, VALID_TOKEN, `token for ${JSON.stringify(c)}`);
    assert.notEqual(tok, "*");
    assert.notEqual(tok, ">");
    assert.equal(decodeToken(tok), c, JSON.stringify(c));
  }
});

test("keys round-trip through subjects, with one token per chunk", () => {
  const keys = universe(TRICKY.slice(0, 12), 3);
  for (const key of [
    ...keys,
    "@/router/0A0B/status/plugins/storage_manager/storages/x",
    "demo/example/zest-eval",
    "a//b",
    "/a",
    "a/",
  ]) {
    const subject = keyToSubject(key);
    assert.ok(subject.startsWith("zest.k."), subject);
    const tokens = subject.slice("zest.k.".length).split(".");
    assert.equal(tokens.length, key.split("/").length, `${key} -> ${subject}`);
    for (const t of tokens) assert.match(t, VALID_TOKEN, `${key} -> ${subject}`);
    assert.equal(subjectToKey(subject), key);
  }
});

test("plain keys map by replacing / with . (the hot path)", () => {
  assert.equal(keyToSubject("demo/example/test"), "zest.k.demo.example.test");
  assert.equal(keyToSubject("@/router/AB/health"), "zest.k.@.router.AB.health");
  assert.equal(keyToSubject("a.b/c d"), "zest.k.a~2Eb.c~20d");
  assert.equal(keyToSubject("x/~"), "zest.k.x.~7E");
});

test("malformed tokens and foreign subjects are refused", () => {
  for (const bad of ["~", "~4", "~zz", "a~", "~e9"]) {
    if (bad === "~") continue; // the empty chunk
    assert.throws(() => decodeToken(bad), /malformed/, bad);
  }
  assert.throws(() => decodeToken("~C3"), /malformed/); // a lone UTF-8 lead byte
  assert.throws(() => subjectToKey("other.k.a"), /not under/);
});

test("wildcards map to covering subscriptions", () => {
  assert.deepEqual(coveringSubjects("a/*/c"), ["zest.k.a.*.c"]);
  assert.deepEqual(coveringSubjects("a/b$*/c"), ["zest.k.a.*.c"]);
  assert.deepEqual(coveringSubjects("a/**"), ["zest.k.a.>", "zest.k.a"]);
  assert.deepEqual(coveringSubjects("a/**/c"), ["zest.k.a.>"]);
  assert.deepEqual(coveringSubjects("**"), ["zest.k.>"]);
  assert.deepEqual(coveringSubjects("**/c"), ["zest.k.>"]);
  // A verbatim chunk is literal even when it holds `$*`.
  assert.deepEqual(coveringSubjects("@/router/X/**"), ["zest.k.@.router.X.>", "zest.k.@.router.X"]);
  assert.deepEqual(coveringSubjects("@a$*/b"), ["zest.k.@a$~2A.b"]);
});

/** Every key expression of up to three chunks over a small alphabet, canonized. */
const KE_POOL = [
  ...new Set(universe(["a", "b", "a.b", "é", "*", "**", "a$*", "$*b", "@x"], 3).map((raw) => canonize(raw))),
];
const KEY_POOL = universe(["a", "b", "ab", "a.b", "é", "@x"], 4);

test("every key a key expression matches is on one of its covering subjects", () => {
  let checked = 0;
  for (const ke of KE_POOL) {
    const cover = coveringSubjects(ke);
    for (const key of KEY_POOL) {
      if (!matchesKey(ke, key)) continue;
      const subject = keyToSubject(key);
      assert.ok(
        cover.some((s) => subjectIncludes(s, subject)),
        `${ke} matches ${key}, but ${subject} is outside ${cover.join(", ")}`,
      );
      checked++;
    }
  }
  assert.ok(checked > 1000, `only ${checked} pairs checked`);
});

test("a covering too long for a NATS protocol line is cut short with >", () => {
  const long = "x".repeat(1_000);
  const ke = `a/${long}/${long}/${long}/${long}/*`;
  const [cover, ...rest] = coveringSubjects(ke);
  assert.deepEqual(rest, []);
  assert.ok(cover!.length <= MAX_SUBJECT_LENGTH, `${cover!.length} chars`);
  assert.ok(cover!.endsWith(".>"));
  assert.ok(subjectIncludes(cover!, keyToSubject(`a/${long}/${long}/${long}/${long}/z`)));
  assert.deepEqual(coveringSubjects(`${"y".repeat(5_000)}/**`), ["zest.k.>"]);
});

test("coverAll drops subscriptions included in others and keeps the union", () => {
  assert.deepEqual(coverAll(["a/b", "a/**", "a/*/c", "x"]), ["zest.k.a", "zest.k.a.>", "zest.k.x"]);
  assert.deepEqual(coverAll(["**", "a", "@/router/X/**"]), ["zest.k.>"]);
  assert.deepEqual(coverAll([]), []);
  for (let i = 0; i < KE_POOL.length; i += 7) {
    const kes = KE_POOL.slice(i, i + 5);
    const cover = coverAll(kes);
    for (const s of cover)
      assert.ok(!cover.some((t) => t !== s && subjectIncludes(t, s)), `${s} is redundant in ${cover.join(", ")}`);
    for (const ke of kes)
      for (const s of coveringSubjects(ke))
        assert.ok(
          cover.some((t) => subjectIncludes(t, s)),
          `${s} lost`,
        );
  }
});

test("subject inclusion and intersection follow NATS wildcard rules", () => {
  assert.ok(subjectIncludes("a.>", "a.b.c"));
  assert.ok(subjectIncludes("a.>", "a.*"));
  assert.ok(!subjectIncludes("a.>", "a"));
  assert.ok(subjectIncludes("a.*", "a.b"));
  assert.ok(!subjectIncludes("a.*", "a.>"));
  assert.ok(!subjectIncludes("a.b", "a.*"));
  assert.ok(subjectsIntersect("a.*.c", "a.b.*"));
  assert.ok(subjectsIntersect("a.>", "*.b"));
  assert.ok(!subjectsIntersect("a.>", "a"));
  assert.ok(!subjectsIntersect("a.b", "a.c"));
});

describe("against a real nats-server", () => {
  let cluster: NatsCluster;
  let nc: NatsConnection;
  before(async () => {
    cluster = await startNatsCluster({ size: 1, jetstream: false });
    nc = await connect({ servers: cluster.urls[0]! });
  });
  after(async () => {
    await nc?.close();
    await cluster?.stop();
  });

  test("covering subscriptions receive exactly the subjects of the keys that may match", async () => {
    const kes = ["a/**", "*/b", "@x/*", "a.b/$*", "**/é"];
    const keys = universe(["a", "b", "a.b", "é", "@x", "sp ace"], 3);
    const got = new Map<string, Set<string>>();
    const subs = kes.map((ke) => {
      const seen = new Set<string>();
      got.set(ke, seen);
      return coveringSubjects(ke).map((s) =>
        nc.subscribe(s, { callback: (_e, m) => void seen.add(subjectToKey(m.subject)) }),
      );
    });
    await nc.flush();
    for (const key of keys) nc.publish(keyToSubject(key), key);
    await nc.flush();
    await new Promise((r) => setTimeout(r, 100));
    for (const ke of kes) {
      const seen = got.get(ke)!;
      for (const key of keys) {
        // Never missed; over-delivery only where a wildcard spans a verbatim chunk or `**` tails.
        if (matchesKey(ke, key)) assert.ok(seen.has(key), `${ke} missed ${key}`);
        if (seen.has(key)) assert.ok(coveringSubjects(ke).some((s) => subjectIncludes(s, keyToSubject(key))));
      }
    }
    for (const list of subs) for (const s of list) s.unsubscribe();
  });
});
