import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { rejectsWith } from "../support/assert.js";
import { silentLogger } from "../../src/core/log.js";
import { Router } from "../../src/core/router.js";
import { Session } from "../../src/core/session.js";
import { memoryDriver } from "../../src/storage/volumes/memory.js";
import { StorageManager } from "../../src/storage/manager.js";
import { sqliteDriver } from "../../src/storage/volumes/sqlite.js";
import { eventually } from "../support/wait.js";

describe("storage manager: a backend that cannot be opened at start-up", () => {
  let dir: string;
  let n = 0;
  /** A short retry interval, so the test waits on the condition rather than on the 5 s default. */
  const RETRY_MS = 50;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), "zest-manager-"));
  });
  after(() => {
    rmSync(dir, { recursive: true, force: true });
  });

  /** A storage config on a SQLite file that cannot be created while `blocker` is a file. */
  function blocked(): { blocker: string; config: { key_expr: string; volume: { id: string; path: string } } } {
    const blocker = join(dir, `blocker${n++}`);
    writeFileSync(blocker, "a file where a directory should be");
    return { blocker, config: { key_expr: "sql/**", volume: { id: "sqlite", path: join(blocker, "db.sqlite") } } };
  }

  async function manager(statePath?: string): Promise<{ session: Session; sm: StorageManager }> {
    const session = new Session(new Router({ zid: "0A" }));
    const sm = new StorageManager(session, {
      drivers: [memoryDriver, sqliteDriver],
      ctx: { logger: silentLogger, dataDir: dir },
      statePath,
      retryEveryMs: RETRY_MS,
    });
    return { session, sm };
  }

  it("does not stop the others: the storage answers 503 with the reason, and opens once it can", async () => {
    const { blocker, config } = blocked();
    const { session, sm } = await manager();
    await sm.start({ storages: { sql: config, mem: { key_expr: "mem/**", volume: "memory" } } });
    try {
      await session.put("mem/a", "ok");
      assert.deepEqual(
        (await session.get("mem/a")).map((r) => r.kind),
        ["ok"],
      );
      await rejectsWith(
        session.put("sql/a", "x"),
        "unavailable",
        /^storage sql is unavailable: sqlite storage sql \(.*blocker.*\): /,
      );
      const replies = await session.get("sql/**");
      assert.equal(replies.length, 1);
      const [err] = replies;
      assert.ok(err?.kind === "err");
      assert.equal(err.errorKind, "unavailable");
      assert.match(err.payload.toString(), /^storage sql is unavailable: /);
      // The admin space shows why.
      const listed = sm.listStorages().find((s) => s.name === "sql");
      assert.match(listed?.error ?? "", /^storage sql is unavailable: /);
      assert.equal(sm.storage("sql"), undefined);

      // The same config again retries at once: still a 503, and the stand-in stays.
      await rejectsWith(sm.putStorage("sql", config), "unavailable", /blocker/);
      await rejectsWith(session.put("sql/a", "x"), "unavailable", /^storage sql is unavailable: /);

      rmSync(blocker);
      await eventually(() => sm.storage("sql") !== undefined, 8_000, "the storage to open after a retry");
      assert.ok(sm.storage("sql"), "opened after a retry");
      assert.equal(sm.listStorages().find((s) => s.name === "sql")?.error, undefined);
      await session.put("sql/a", "stored");
      const got = await session.get("sql/a");
      assert.deepEqual(
        got.map((r) => (r.kind === "ok" ? r.sample.payload.toString() : r.kind)),
        ["stored"],
      );
    } finally {
      await sm.close();
    }
  });

  it("a removed stand-in stops retrying and answering; its saved entry stays until then", async () => {
    const { blocker, config } = blocked();
    const statePath = join(dir, `state${n++}.json`);
    writeFileSync(statePath, JSON.stringify({ storages: { sql: config } }));
    const { session, sm } = await manager(statePath);
    await sm.start({});
    try {
      await rejectsWith(session.put("sql/a", "x"), "unavailable", /unavailable/);
      // Another change is saved: the stand-in's entry is kept.
      await sm.putStorage("other", { key_expr: "other/**", volume: "memory" });
      const saved = JSON.parse(readFileSync(statePath, "utf8")) as { storages: Record<string, unknown> };
      assert.deepEqual(saved.storages.sql, config);
      await sm.deleteStorage("sql");
      rmSync(blocker);
      await new Promise((r) => setTimeout(r, RETRY_MS * 10)); // ten retry periods: a retry would have run
      assert.equal(sm.storage("sql"), undefined, "no retry after removal");
      await session.put("sql/a", "x"); // nothing stands in any more
      assert.deepEqual(await session.get("sql/a"), []);
    } finally {
      await sm.close();
    }
  });

  it("a config error still fails start-up", async () => {
    const { sm } = await manager();
    await rejectsWith(
      sm.start({ storages: { bad: { key_expr: "a/**", volume: "no-such-volume" } } }),
      "bad_input",
      /no-such-volume/,
    );
    await sm.close();
  });
});

describe("storage manager: a storage's `complete` option (zenoh's)", () => {
  const allComplete = { target: "all_complete" } as const;

  it("declares the storage's queryable complete only when set, as zenoh's storages: then targets count it", async () => {
    const session = new Session(new Router({ zid: "0B" }));
    const sm = new StorageManager(session, { drivers: [memoryDriver], ctx: { logger: silentLogger } });
    await sm.start({
      storages: {
        plain: { key_expr: "plain/**", volume: "memory" },
        full: { key_expr: "full/**", volume: "memory", complete: true },
        // zenohd's config spells it as a string.
        zenohd: { key_expr: "zenohd/**", volume: "memory", complete: "true" },
        off: { key_expr: "off/**", volume: "memory", complete: "false" },
      },
    });
    try {
      assert.equal(session.matchingStatus("plain/a", "queryables", allComplete), false);
      assert.equal(session.matchingStatus("off/a", "queryables", allComplete), false);
      assert.equal(session.matchingStatus("full/a", "queryables", allComplete), true);
      assert.equal(session.matchingStatus("zenohd/a", "queryables", allComplete), true);
      // Complete for the keys it includes only.
      assert.equal(session.matchingStatus("full/**", "queryables", allComplete), true);
      assert.equal(session.matchingStatus("**", "queryables", allComplete), false);
      await session.put("full/a", "kept");
      const replies = await session.get("full/a", { target: "all_complete" });
      assert.deepEqual(
        replies.map((r) => r.kind === "ok" && r.sample.payload.toString()),
        ["kept"],
      );
      assert.deepEqual(await session.get("plain/a", { target: "all_complete" }), []);
      await rejectsWith(
        sm.putStorage("bad", { key_expr: "bad/**", volume: "memory", complete: "yes" }),
        "bad_input",
        /complete/,
      );
    } finally {
      await sm.close();
    }
  });
});
