/**
 * The storage contract (docs/storage-contract.md) as one test suite, run on every volume:
 * `runStorageContract({ name, open, badOptions })` from one test file per volume.
 */
import assert from "node:assert/strict";
import { it } from "node:test";
import { silentLogger } from "../../src/core/log.js";
import { Router } from "../../src/core/router.js";
import { Session } from "../../src/core/session.js";
import { nowUnixNanos, Timestamp, unixNanosToNtp64 } from "../../src/core/timestamp.js";
import { versionOf, type StorageBackend, type StoredEntry, type WriteCondition } from "../../src/storage/backend.js";
import { StorageService } from "../../src/storage/service.js";
import { MemoryBackend } from "../../src/storage/volumes/memory.js";
import { rejectsWith } from "../support/assert.js";
import { expiryTimestamp, timestampMs } from "../../src/core/lifetime.js";
import { eventually } from "../support/wait.js";

/** What the suite needs to know about a volume. */
export interface StorageContractTarget {
  /** Shown in the test names. */
  readonly name: string;
  /**
   * Opens storage `storage` (a fresh one for a name not used before; the same data again for a
   * name opened and closed before, when the volume is durable).
   */
  open(storage: string, options?: Record<string, unknown>): Promise<StorageBackend>;
  /** A second handle onto the same storage, as another router sharing the backend would have. */
  openShared?(storage: string): Promise<StorageBackend>;
  /** Storage options the volume must refuse with `bad_input`, and what the message must say. */
  readonly badOptions: ReadonlyArray<{ readonly options: Record<string, unknown>; readonly message: RegExp }>;
}

/** Sample times one second apart, an hour ago (inside any time-series retention and range). */
export const BASE_NS = ((nowUnixNanos() - 3_600_000_000_000n) / 1_000_000_000n) * 1_000_000_000n;
export const SECOND = 1_000_000_000n;
/** Unix nanoseconds of second `s` after `BASE_NS`. */
export const at = (s: number): bigint => BASE_NS + BigInt(s) * SECOND;
/** The timestamp of second `s`. */
export const ts = (s: number): Timestamp => new Timestamp(unixNanosToNtp64(at(s)), "AB");
/** An entry written at second `s`. */
export const entry = (key: string, value: string | Buffer, s: number, encoding = "text/plain"): StoredEntry => ({
  key,
  payload: typeof value === "string" ? Buffer.from(value) : value,
  encoding,
  timestamp: ts(s),
});
export const values = (es: StoredEntry[]): string[] => es.map((e) => e.payload.toString());
export const keysOf = (es: StoredEntry[]): string[] => es.map((e) => e.key).sort();

let counter = 0;
/** A storage name no test used before (in this process). */
const fresh = (): string => `c${process.pid}_${counter++}`;

/** Runs the storage contract's tests on one volume; call it inside the volume's `describe`. */
export function runStorageContract(target: StorageContractTarget): void {
  const n = target.name;
  /** Opens a fresh storage, runs `body`, and closes it whatever happens. */
  async function withStorage(body: (s: StorageBackend, name: string) => Promise<void>): Promise<void> {
    const name = fresh();
    const s = await target.open(name);
    try {
      await body(s, name);
    } finally {
      await s.close(false);
    }
  }

  it(`${n}: a put is read back by lookup and query, with encoding, timestamp and version`, () =>
    withStorage(async (s) => {
      assert.equal(await s.lookup("a/b"), undefined);
      assert.equal(await s.put(entry("a/b", "hello", 10, "application/json")), "inserted");
      const found = await s.lookup("a/b");
      assert.deepEqual(found && { t: found.timestamp.encode(), d: found.deleted, v: found.version }, {
        t: ts(10).encode(),
        d: false,
        v: versionOf(ts(10)),
      });
      const [e, ...rest] = await s.query("a/b");
      assert.equal(rest.length, 0);
      assert.deepEqual(e && [e.key, e.payload.toString(), e.encoding, e.timestamp.encode()], [
        "a/b",
        "hello",
        "application/json",
        ts(10).encode(),
      ]);
      assert.deepEqual(await s.query("a/c"), []);
    }));

  it(`${n}: last writer wins: the newest put stays, an older one never replaces it`, () =>
    withStorage(async (s) => {
      assert.equal(await s.put(entry("k", "two", 2)), "inserted");
      const older = await s.put(entry("k", "one", 1));
      // A time series keeps every point, so an older one is stored too; either way the latest is the newest.
      assert.equal(older, s.capability.history === "latest" ? "outdated" : "inserted");
      assert.equal(
        await s.put(entry("k", "two again", 2)),
        s.capability.history === "latest" ? "outdated" : "inserted",
      );
      // A time series writes a second sample with the same timestamp over the first.
      assert.deepEqual(values(await s.query("k")), [s.capability.history === "latest" ? "two" : "two again"]);
      assert.equal((await s.lookup("k"))?.version, versionOf(ts(2)));
      assert.equal(await s.put(entry("k", "three", 3, "")), "inserted");
      assert.deepEqual(
        (await s.query("k")).map((e) => [e.payload.toString(), e.encoding]),
        [["three", ""]],
      );
    }));

  it(`${n}: concurrent puts on one key leave the newest, whatever order they land in`, () =>
    withStorage(async (s) => {
      const order = [5, 3, 9, 1, 7, 2, 8, 4, 6];
      await Promise.all(order.map((i) => s.put(entry("race", `v${i}`, i))));
      assert.deepEqual(values(await s.query("race")), ["v9"]);
      assert.equal((await s.lookup("race"))?.version, versionOf(ts(9)));
    }));

  it(`${n}: a delete leaves a tombstone that queries hide and lookup shows; older writes are outdated`, () =>
    withStorage(async (s) => {
      await s.put(entry("t/a", "A", 1));
      await s.put(entry("t/b", "B", 2));
      assert.equal(await s.delete("t/a", ts(3)), "inserted");
      assert.equal(await s.delete("t/never", ts(4)), "inserted");
      assert.deepEqual(await s.query("t/a"), []);
      assert.deepEqual(keysOf(await s.query("t/**")), ["t/b"]);
      const tomb = await s.lookup("t/a");
      assert.deepEqual(tomb && [tomb.deleted, tomb.timestamp.encode(), tomb.version], [
        true,
        ts(3).encode(),
        versionOf(ts(3)),
      ]);
      assert.equal((await s.lookup("t/never"))?.deleted, true);
      assert.equal(await s.put(entry("t/a", "late", 2)), "outdated", "an older put does not bring the key back");
      assert.equal(await s.delete("t/a", ts(2)), "outdated");
      assert.deepEqual(await s.query("t/a"), []);
      // A newer put revives the key.
      assert.equal(await s.put(entry("t/a", "A2", 5)), "inserted");
      assert.deepEqual(values(await s.query("t/a")), ["A2"]);
      assert.equal((await s.lookup("t/a"))?.deleted, false);
    }));

  it(`${n}: tombstones expire: purgeTombstones drops those older than the bound, never values`, () =>
    withStorage(async (s) => {
      await s.put(entry("p/live", "x", 1));
      await s.delete("p/old", ts(5));
      await s.delete("p/edge", ts(10));
      await s.delete("p/new", ts(20));
      await s.purgeTombstones(ts(10).time);
      assert.equal(await s.lookup("p/old"), undefined);
      assert.equal((await s.lookup("p/edge"))?.deleted, true, "a tombstone at exactly the bound is kept");
      assert.equal((await s.lookup("p/new"))?.deleted, true);
      assert.equal((await s.lookup("p/live"))?.deleted, false, "values are never purged");
      // Once expired, a tombstone no longer refuses older writes.
      assert.equal(await s.put(entry("p/old", "back", 4)), "inserted");
      assert.deepEqual(values(await s.query("p/old")), ["back"]);
    }));

  it(`${n}: wildcard queries return every intersecting key, a/** includes a itself`, () =>
    withStorage(async (s) => {
      for (const [i, k] of ["a", "a/b", "a/b/c", "a/x/c", "ab", "a-b", "b", "b/a", "c/b"].entries())
        await s.put(entry(k, k, i + 1));
      assert.deepEqual(keysOf(await s.query("a/**")), ["a", "a/b", "a/b/c", "a/x/c"]);
      assert.deepEqual(keysOf(await s.query("a/*")), ["a/b"]);
      assert.deepEqual(keysOf(await s.query("a/*/c")), ["a/b/c", "a/x/c"]);
      assert.deepEqual(keysOf(await s.query("*/b")), ["a/b", "c/b"]);
      assert.deepEqual(keysOf(await s.query("**/a")), ["a", "b/a"]);
      assert.deepEqual(keysOf(await s.query("a$*")), ["a", "a-b", "ab"]);
      assert.deepEqual(keysOf(await s.query("**")), ["a", "a-b", "a/b", "a/b/c", "a/x/c", "ab", "b", "b/a", "c/b"]);
      assert.deepEqual(await s.query("z/**"), []);
    }));

  it(`${n}: binary payloads round-trip byte for byte; an empty payload is a value`, () =>
    withStorage(async (s) => {
      const bytes = Buffer.from(Array.from({ length: 256 }, (_, i) => 255 - i));
      await s.put(entry("bin", bytes, 1, "application/octet-stream"));
      await s.put(entry("empty", Buffer.alloc(0), 2, ""));
      assert.ok((await s.query("bin"))[0]?.payload.equals(bytes));
      const [empty] = await s.query("empty");
      assert.deepEqual(empty && [empty.payload.length, empty.encoding], [0, ""]);
      assert.equal((await s.lookup("empty"))?.deleted, false);
    }));

  it(`${n}: conditional writes: ifAbsent creates once, ifVersion applies only on that version`, () =>
    withStorage(async (s) => {
      const failed = /write condition failed/;
      assert.equal(await s.put(entry("c/k", "first", 1), { ifAbsent: true }), "inserted");
      await rejectsWith(
        Promise.resolve().then(() => s.put(entry("c/k", "again", 2), { ifAbsent: true })),
        "precondition_failed",
        failed,
      );
      await rejectsWith(
        Promise.resolve().then(() => s.put(entry("c/none", "x", 2), { ifVersion: versionOf(ts(1)) })),
        "precondition_failed",
        failed,
      );
      const v1 = (await s.lookup("c/k"))!.version;
      assert.equal(await s.put(entry("c/k", "second", 3), { ifVersion: v1 }), "inserted");
      await rejectsWith(
        Promise.resolve().then(() => s.put(entry("c/k", "stale", 4), { ifVersion: v1 })),
        "precondition_failed",
        failed,
      );
      assert.deepEqual(values(await s.query("c/k")), ["second"], "a refused write changes nothing");
      const v3 = (await s.lookup("c/k"))!.version;
      await rejectsWith(
        Promise.resolve().then(() => s.delete("c/k", ts(5), { ifVersion: v1 })),
        "precondition_failed",
        failed,
      );
      assert.equal(await s.delete("c/k", ts(5), { ifVersion: v3 }), "inserted");
      assert.deepEqual(await s.query("c/k"), []);
      // A deleted key is absent for ifAbsent, and its tombstone has a version for ifVersion.
      const tomb = (await s.lookup("c/k"))!.version;
      assert.equal(await s.put(entry("c/k", "reborn", 6), { ifAbsent: true }), "inserted");
      await s.delete("c/k", ts(7));
      await rejectsWith(
        Promise.resolve().then(() => s.put(entry("c/k", "x", 8), { ifVersion: tomb })),
        "precondition_failed",
        failed,
      );
      assert.equal(await s.put(entry("c/k", "from the tombstone", 8), { ifVersion: versionOf(ts(7)) }), "inserted");
      assert.deepEqual(values(await s.query("c/k")), ["from the tombstone"]);
    }));

  it(`${n}: two concurrent conditional writers on one version: exactly one wins, every time`, async () => {
    const name = fresh();
    const a = await target.open(name);
    const b = target.openShared ? await target.openShared(name) : a;
    try {
      await a.put(entry("race/k", "start", 1));
      for (let round = 0; round < 10; round++) {
        const current = (await a.lookup("race/k"))!;
        const t = 2 + round * 2;
        const cond: WriteCondition = { ifVersion: current.version };
        const outcomes = await Promise.allSettled([
          Promise.resolve().then(() => a.put(entry("race/k", `a${round}`, t), cond)),
          Promise.resolve().then(() => b.put(entry("race/k", `b${round}`, t + 1), cond)),
        ]);
        const won = outcomes.filter((o) => o.status === "fulfilled");
        const lost = outcomes.filter((o): o is PromiseRejectedResult => o.status === "rejected");
        assert.equal(
          won.length,
          1,
          `round ${round}: ${JSON.stringify(outcomes.map((o) => (o.status === "fulfilled" ? o.value : String(o.reason))))}`,
        );
        assert.equal((won[0] as PromiseFulfilledResult<string>).value, "inserted");
        assert.equal((lost[0]!.reason as { kind?: string }).kind, "precondition_failed");
        const winner = outcomes[0]!.status === "fulfilled" ? `a${round}` : `b${round}`;
        assert.deepEqual(values(await a.query("race/k")), [winner]);
      }
      // ifAbsent the same way: two creators, one wins.
      const creators = await Promise.allSettled([
        Promise.resolve().then(() => a.put(entry("race/new", "a", 1), { ifAbsent: true })),
        Promise.resolve().then(() => b.put(entry("race/new", "b", 2), { ifAbsent: true })),
      ]);
      assert.equal(creators.filter((o) => o.status === "fulfilled").length, 1);
    } finally {
      if (b !== a) await b.close(false);
      await a.close(false);
    }
  });

  it(`${n}: bad options are refused with bad_input naming the option`, async (t) => {
    if (target.badOptions.length === 0) {
      t.skip("the volume takes no options");
      return;
    }
    for (const { options, message } of target.badOptions)
      await rejectsWith(target.open(fresh(), options), "bad_input", message);
  });

  it(`${n}: an unknown storage option is refused with bad_input naming it`, async () => {
    await rejectsWith(
      target.open(fresh(), { no_such_option: 1 }),
      "bad_input",
      /unknown option "no_such_option" of \S+ storage \S+ \(known options: [a-z_, ]+\)/,
    );
  });

  it(`${n}: the storage service applies wildcard writes to every matching key, and remembers wildcard deletes`, async () => {
    const session = new Session(new Router({ zid: "0C" }));
    const backend = await target.open(fresh());
    const svc = new StorageService("wild", "w/**", backend, session, silentLogger);
    await svc.start({ align: false });
    const changes: string[] = [];
    const stop = session.changes.subscribe((e) => changes.push(`${e.kind} ${e.key}`));
    const put = (key: string, value: string, s: number): Promise<void> =>
      session.put(key, value, { timestamp: ts(s), encoding: "text/plain" });
    try {
      await put("w/a", "a", 1);
      await put("w/b", "b", 1);
      await put("w/c/d", "d", 1);
      assert.deepEqual(changes, ["put w/a", "put w/b", "put w/c/d"], "each applied write publishes a change event");
      await put("w/*", "star", 2);
      const latest = async (): Promise<Record<string, string>> =>
        Object.fromEntries((await backend.query("w/**")).map((e) => [e.key, e.payload.toString()]));
      assert.deepEqual(await latest(), { "w/a": "star", "w/b": "star", "w/c/d": "d" });
      await session.delete("w/**", { timestamp: ts(5) });
      assert.deepEqual(await latest(), {});
      // An older put arriving after the wildcard delete is refused, on a key it never held too.
      await put("w/a", "late", 4);
      await put("w/new", "late", 4);
      assert.deepEqual(await latest(), {});
      await put("w/new", "newer", 6);
      assert.deepEqual(await latest(), { "w/new": "newer" });
    } finally {
      stop();
      await svc.stop(false);
    }
  });

  it(`${n}: through a Session, a failed condition is precondition_failed and changes nothing`, async () => {
    const session = new Session(new Router({ zid: "0D" }));
    const backend = await target.open(fresh());
    const svc = new StorageService("cond", "cond/**", backend, session, silentLogger);
    await svc.start({ align: false });
    try {
      await session.put("cond/k", "v1", { ifAbsent: true });
      await rejectsWith(
        session.put("cond/k", "v2", { ifAbsent: true }),
        "precondition_failed",
        /write condition failed/,
      );
      const v1 = (await backend.lookup("cond/k"))!.version;
      await session.put("cond/k", "v2", { ifVersion: v1 });
      await rejectsWith(session.delete("cond/k", { ifVersion: v1 }), "precondition_failed", /write condition failed/);
      assert.deepEqual(values(await backend.query("cond/k")), ["v2"]);
      await rejectsWith(session.put("cond/*", "x", { ifAbsent: true }), "bad_input", /names one key/);
      await rejectsWith(session.put("elsewhere/k", "x", { ifAbsent: true }), "not_supported", /needs a storage/);
    } finally {
      await svc.stop(false);
    }
  });

  it(`${n}: a new storage aligns from the storages already holding its keys`, async () => {
    const session = new Session(new Router({ zid: "0F" }));
    const first = new StorageService("first", "al/**", new MemoryBackend(), session, silentLogger);
    await first.start({ align: false });
    const backend = await target.open(fresh());
    const second = new StorageService("second", "al/**", backend, session, silentLogger);
    try {
      await session.put("al/a", "A", { timestamp: ts(1), encoding: "text/plain" });
      await session.put("al/b/c", "C", { timestamp: ts(2), encoding: "text/plain" });
      await second.start({ alignTimeoutMs: 2_000 });
      assert.deepEqual(
        (await backend.query("al/**")).map((e) => [e.key, e.payload.toString(), e.timestamp.encode()]).sort(),
        [
          ["al/a", "A", ts(1).encode()],
          ["al/b/c", "C", ts(2).encode()],
        ],
      );
    } finally {
      await second.stop(false);
      await first.stop(false);
    }
  });

  it(`${n}: a _time range returns every point in it when the storage keeps history, the latest otherwise`, () =>
    withStorage(async (s) => {
      for (const i of [1, 2, 3]) await s.put(entry("ts/k", String(i), i));
      const range = (a: number, ai: boolean, b: number, bi: boolean) => ({
        start: { ns: at(a), inclusive: ai },
        end: { ns: at(b), inclusive: bi },
      });
      if (s.capability.history === "all") {
        assert.deepEqual(values(await s.query("ts/k", range(0, true, 10, true))), ["1", "2", "3"]);
        assert.deepEqual(values(await s.query("ts/k", range(1, false, 3, true))), ["2", "3"]);
        assert.deepEqual(values(await s.query("ts/k", range(1, true, 3, false))), ["1", "2"]);
        assert.deepEqual(values(await s.query("ts/k", range(2, true, 2, true))), ["2"]);
        assert.deepEqual(values(await s.query("ts/k", { start: { ns: at(5), inclusive: true } })), []);
      } else {
        // One value per key: the service keeps it when its time falls in the range.
        assert.deepEqual(values(await s.query("ts/k", range(0, true, 10, true))), ["3"]);
      }
      assert.deepEqual(values(await s.query("ts/k")), ["3"]);
    }));

  /** A session over a fresh storage of this volume behind a storage service on `prefix/**`. */
  async function withService(
    prefix: string,
    body: (session: Session, backend: StorageBackend, svc: StorageService) => Promise<void>,
    options: { defaultTtlMs?: number; name?: string } = {},
  ): Promise<void> {
    const session = new Session(new Router({ zid: "1A" }));
    const backend = await target.open(options.name ?? fresh());
    const svc = new StorageService("ttl", `${prefix}/**`, backend, session, silentLogger, options);
    await svc.start({ align: false });
    try {
      await body(session, backend, svc);
    } finally {
      await svc.stop(false);
    }
  }
  const liveValues = async (session: Session, key: string): Promise<string[]> =>
    (await session.get(key)).flatMap((r) => (r.kind === "ok" ? [r.sample.payload.toString()] : []));

  it(`${n}: a value written with a ttl is deleted at its deadline, and subscribers see a DELETE`, () =>
    withService("exp", async (session, backend) => {
      const seen: string[] = [];
      session.declareSubscriber("exp/**", (s) => {
        seen.push(`${s.kind} ${s.key}`);
      });
      const written = session.clock.newTimestamp();
      await session.put("exp/a", "A", { ttl: 300, timestamp: written });
      await session.put("exp/b", "B");
      assert.deepEqual(await liveValues(session, "exp/a"), ["A"]);
      const deadline = timestampMs(written) + 300;
      await eventually(async () => (await backend.query("exp/a")).length === 0, 5_000, "the expiry");
      const late = Date.now() - deadline;
      assert.ok(late >= 0, "not deleted before its deadline");
      assert.ok(late < 1_000, `deleted ${late} ms after its deadline`);
      assert.deepEqual(seen, ["put exp/a", "put exp/b", "delete exp/a"]);
      const held = await backend.lookup("exp/a");
      assert.equal(
        held?.timestamp.encode(),
        expiryTimestamp(written).encode(),
        "the delete is stamped one tick after the write",
      );
      assert.deepEqual(await liveValues(session, "exp/**"), ["B"]);
    }));

  it(`${n}: no read returns an expired value, whether its delete has run or not`, () =>
    withService("hid", async (session, backend) => {
      // Written straight into the backend, past its deadline: no timer of this service holds it.
      await backend.put({ ...entry("hid/a", "stale", 1), deadline: Date.now() - 1_000 });
      await backend.put({ ...entry("hid/b", "live", 1), deadline: Date.now() + 60_000 });
      assert.deepEqual(await liveValues(session, "hid/a"), []);
      assert.deepEqual(await liveValues(session, "hid/**"), ["live"]);
      const read = session.interest.readStored?.("hid/a");
      if (read !== undefined) assert.deepEqual(read, []);
      const live = (await session.get("hid/b"))[0];
      assert.ok(live?.kind === "ok" && live.sample.deadline !== undefined, "a read hands out the deadline");
      // An expired value is no value to a condition: If-Match on it fails, create-only succeeds.
      const stale = (await backend.lookup("hid/a"))!.version;
      await rejectsWith(session.put("hid/a", "x", { ifVersion: stale }), "precondition_failed", /expired/);
      await session.put("hid/a", "fresh", { ifAbsent: true });
      assert.deepEqual(await liveValues(session, "hid/a"), ["fresh"]);
    }));

  it(`${n}: a refresh moves the deadline, and a put without ttl makes the key permanent again`, () =>
    withService("ref", async (session, backend) => {
      await session.put("ref/a", "1", { ttl: 250 });
      await session.put("ref/a", "2", { ttl: 60_000 }); // the refresh
      await session.put("ref/b", "1", { ttl: 250 });
      await session.put("ref/b", "2"); // permanent again
      await session.put("ref/c", "1", { ttl: 250 }); // the witness that expiry ran
      await eventually(async () => (await backend.query("ref/c")).length === 0, 5_000, "the witness's expiry");
      await new Promise((r) => setTimeout(r, 100));
      assert.deepEqual(await liveValues(session, "ref/a"), ["2"]);
      assert.deepEqual(await liveValues(session, "ref/b"), ["2"]);
      assert.equal((await backend.query("ref/b"))[0]?.deadline, undefined);
    }));

  it(`${n}: the storage's ttl applies to values written without their own`, () =>
    withService(
      "def",
      async (session, backend) => {
        await session.put("def/a", "A");
        await session.put("def/b", "B", { ttl: 60_000 });
        assert.deepEqual(await liveValues(session, "def/a"), ["A"]);
        await eventually(async () => (await backend.query("def/a")).length === 0, 5_000, "the default expiry");
        assert.deepEqual(await liveValues(session, "def/**"), ["B"]);
      },
      { defaultTtlMs: 250 },
    ));

  it(`${n}: after a restart, a durable storage serves no expired key and deletes it`, async (t) => {
    const name = fresh();
    const s = await target.open(name);
    if (s.capability.persistence !== "durable") {
      await s.close(false);
      t.skip("volatile storage");
      return;
    }
    const soon = Date.now() + 400;
    await s.put({ ...entry("rs/gone", "G", 1), deadline: soon });
    await s.put({ ...entry("rs/kept", "K", 1), deadline: Date.now() + 3_600_000 });
    await s.close(false);
    await new Promise((r) => setTimeout(r, Math.max(0, soon - Date.now()) + 50));
    await withService(
      "rs",
      async (session, backend) => {
        assert.deepEqual(await liveValues(session, "rs/**"), ["K"]);
        assert.ok((await backend.query("rs/kept"))[0]?.deadline !== undefined, "the deadline was kept on disk");
        await eventually(
          async () => (await backend.lookup("rs/gone"))?.deleted === true,
          5_000,
          "the expired key's delete",
        );
      },
      { name },
    );
  });

  it(`${n}: acknowledged writes survive closing and reopening when the storage is durable`, async (t) => {
    const name = fresh();
    const s = await target.open(name);
    if (s.capability.persistence !== "durable") {
      await s.close(false);
      t.skip("volatile storage");
      return;
    }
    await s.put(entry("keep/a", "A", 1));
    await s.delete("keep/b", ts(2));
    await s.close(false);
    const again = await target.open(name);
    try {
      assert.deepEqual(values(await again.query("keep/a")), ["A"]);
      assert.deepEqual(await again.query("keep/**"), await again.query("keep/a"));
      assert.equal(
        await again.put(entry("keep/a", "older", 0)),
        again.capability.history === "latest" ? "outdated" : "inserted",
      );
      assert.deepEqual(values(await again.query("keep/a")), ["A"]);
    } finally {
      await again.close(false);
    }
  });
}
