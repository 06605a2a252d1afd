/**
 * Conditional writes in the core (docs/conditional-writes.md): `Session.putIf` and `deleteIf`,
 * the one meaning of If-Match / If-None-Match for every front door, on a real router with real
 * memory storages.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { MATCH_TRIES, MAX_MATCH_VERSIONS } from "../../src/core/conditional-write.js";
import { silentLogger } from "../../src/core/log.js";
import { Router } from "../../src/core/router.js";
import { Session } from "../../src/core/session.js";
import { Timestamp } from "../../src/core/timestamp.js";
import { StorageService } from "../../src/storage/service.js";
import { MemoryBackend } from "../../src/storage/volumes/memory.js";
import { rejectsWith } from "../support/assert.js";

async function session(): Promise<{ s: Session; stop: () => Promise<void> }> {
  const s = new Session(new Router({ zid: "01" }));
  const storage = new StorageService("mem", "c/**", new MemoryBackend("mem"), s, silentLogger);
  await storage.start({ align: false });
  return { s, stop: () => storage.stop(false) };
}

/** The key's version and value as a read sees them (undefined: it holds nothing). */
async function held(s: Session, key: string): Promise<{ version: string; value: string } | undefined> {
  const [reply] = await s.get(key);
  if (reply === undefined || reply.kind !== "ok") return undefined;
  return { version: reply.sample.timestamp!.encode(), value: reply.sample.payload.toString() };
}

/** Asserts that `p` rejects with a ZestError of `kind` whose message matches `message`. */
/** Runs `write` on the next turn: the memory storage has answered the read by then. */
async function afterStorageAnswered(write: () => Promise<void>): Promise<void> {
  await new Promise((resolve) => setImmediate(resolve));
  await write();
}

describe("conditional writes through the Session", () => {
  test("ifMatch with the held version writes and returns the new version; a stale one changes nothing", async () => {
    const { s, stop } = await session();
    await s.put("c/k", "v1");
    const v1 = (await held(s, "c/k"))!.version;
    const written = await s.putIf("c/k", "v2", { ifMatch: [v1] });
    assert.ok(written instanceof Timestamp);
    assert.deepEqual(await held(s, "c/k"), { version: written.encode(), value: "v2" });
    await rejectsWith(s.putIf("c/k", "v3", { ifMatch: [v1] }), "precondition_failed", /another version/);
    await rejectsWith(s.deleteIf("c/k", { ifMatch: [v1] }), "precondition_failed", /another version/);
    assert.equal((await held(s, "c/k"))!.value, "v2");
    await s.deleteIf("c/k", { ifMatch: [written.encode()] });
    assert.equal(await held(s, "c/k"), undefined);
    await stop();
  });

  test("a storage that decides at once gives the timestamp back synchronously, so a door answers in the same turn", async () => {
    const { s, stop } = await session();
    const created = s.putIf("c/sync", "v1", { ifAbsent: true });
    assert.ok(created instanceof Timestamp, "the memory volume checks and writes in one step");
    const updated = s.putIf("c/sync", "v2", { ifMatch: [created.encode()] });
    assert.ok(updated instanceof Timestamp);
    assert.equal((await held(s, "c/sync"))!.version, updated.encode());
    await stop();
  });

  test("ifAbsent creates only when the key holds no value: absent, or deleted", async () => {
    const { s, stop } = await session();
    await s.putIf("c/lock", "me", { ifAbsent: true });
    await rejectsWith(s.putIf("c/lock", "you", { ifAbsent: true }), "precondition_failed", /already holds a value/);
    assert.equal((await held(s, "c/lock"))!.value, "me");
    await s.delete("c/lock");
    await s.putIf("c/lock", "you", { ifAbsent: true });
    assert.equal((await held(s, "c/lock"))!.value, "you");
    await stop();
  });

  test('ifMatch "*" writes on whatever the key holds, and fails on a key that holds nothing', async () => {
    const { s, stop } = await session();
    await rejectsWith(s.putIf("c/any", "v", { ifMatch: "*" }), "precondition_failed", /c\/any holds nothing/);
    assert.equal(await held(s, "c/any"), undefined);
    await s.put("c/any", "v1");
    const written = await s.putIf("c/any", "v2", { ifMatch: "*" });
    assert.deepEqual(await held(s, "c/any"), { version: written.encode(), value: "v2" });
    await s.deleteIf("c/any", { ifMatch: "*" });
    assert.equal(await held(s, "c/any"), undefined);
    await rejectsWith(s.deleteIf("c/any", { ifMatch: "*" }), "precondition_failed", /holds nothing/);
    await stop();
  });

  test("ifMatch with several versions writes when the held one is among them, and fails otherwise", async () => {
    const { s, stop } = await session();
    await s.put("c/list", "v1");
    const v1 = (await held(s, "c/list"))!.version;
    const other = new Timestamp(1n, "02").encode();
    const v2 = (await s.putIf("c/list", "v2", { ifMatch: [other, v1] })).encode();
    assert.deepEqual(await held(s, "c/list"), { version: v2, value: "v2" });
    await rejectsWith(s.putIf("c/list", "v3", { ifMatch: [other, v1] }), "precondition_failed", /another version/);
    assert.equal((await held(s, "c/list"))!.value, "v2");
    await stop();
  });

  test('a writer that gets in between the read and the write of ifMatch "*" makes it read again and write on the new version', async () => {
    const { s, stop } = await session();
    await s.put("c/race", "v1");
    // An eval on the key, queried by the read: after the storage has answered the old version,
    // it writes a newer one, as another client would between the read and the write.
    let reads = 0;
    const intruder = s.declareQueryable("c/race", async () => {
      reads++;
      if (reads === 1) await afterStorageAnswered(() => s.put("c/race", "intruder"));
    });
    const written = await s.putIf("c/race", "mine", { ifMatch: "*" });
    assert.equal(reads, 2, "read again once");
    assert.deepEqual(await held(s, "c/race"), { version: written.encode(), value: "mine" });
    intruder.undeclare();
    await stop();
  });

  test("a version list that no longer holds after a writer got in between fails, and a writer that always gets in wins after the last try", async () => {
    const { s, stop } = await session();
    await s.put("c/race", "v1");
    const v1 = (await held(s, "c/race"))!.version;
    let reads = 0;
    let intruder = s.declareQueryable("c/race", async () => {
      reads++;
      if (reads === 1) await afterStorageAnswered(() => s.put("c/race", "intruder"));
    });
    const other = new Timestamp(1n, "02").encode();
    await rejectsWith(s.putIf("c/race", "mine", { ifMatch: [v1, other] }), "precondition_failed", /another version/);
    assert.equal(reads, 2);
    assert.equal((await held(s, "c/race"))!.value, "intruder");
    intruder.undeclare();
    reads = 0;
    intruder = s.declareQueryable("c/race", async () => {
      reads++;
      await afterStorageAnswered(() => s.put("c/race", `intruder ${reads}`));
    });
    await rejectsWith(s.putIf("c/race", "mine", { ifMatch: "*" }), "precondition_failed", /another version/);
    assert.equal(reads, MATCH_TRIES);
    intruder.undeclare();
    assert.equal((await held(s, "c/race"))!.value, `intruder ${MATCH_TRIES}`);
    await stop();
  });

  test("malformed conditions are bad_input, refused before anything is read or written", async () => {
    const { s, stop } = await session();
    let reads = 0;
    const spy = s.declareQueryable("c/**", () => void reads++);
    const bad: Array<[Promise<unknown> | unknown, RegExp]> = [
      [s.putIf("c/*", "v", { ifMatch: "*" }), /one key, not a key expression with wildcards/],
      [s.putIf("c/k", "v", { ifMatch: [] }), /1 to 16 versions/],
      [s.putIf("c/k", "v", { ifMatch: Array.from({ length: MAX_MATCH_VERSIONS + 1 }, (_, i) => `v${i}`) }), /1 to 16/],
      [s.putIf("c/k", "v", { ifMatch: [""] }), /1 to 256 characters/],
      [s.putIf("c/k", "v", { ifMatch: ["a", "x".repeat(257)] }), /1 to 256 characters/],
      [s.deleteIf("c/k", { ifAbsent: true }), /not a delete/],
      [s.putIf("c/k", "v", {} as never), /ifMatch or ifAbsent/],
    ];
    for (const [p, message] of bad) await rejectsWith(p, "bad_input", message);
    assert.equal(reads, 0);
    assert.equal(await held(s, "c/k"), undefined);
    spy.undeclare();
    await stop();
  });

  test("a conditional write on a key no storage on this router holds is not_supported", async () => {
    const { s, stop } = await session();
    await rejectsWith(s.putIf("elsewhere/k", "v", { ifAbsent: true }), "not_supported", /needs a storage/);
    await stop();
  });
});
