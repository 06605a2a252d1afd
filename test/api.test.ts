import assert from "node:assert/strict";
import { test } from "node:test";

// The package imports itself by name, through package.json "exports" and the built dist/.
test('the library API imports as `import { KeyExpr, Session } from "zest"` and works', async () => {
  const { KeyExpr, Session, Router } = await import("zest");
  const ke = new KeyExpr("demo/example/**");
  assert.ok(ke.intersects("demo/example/a"));
  assert.equal(KeyExpr.autocanonize("demo/**/**/x").toString(), "demo/**/x");
  assert.throws(() => new KeyExpr("demo//x"), /empty chunk/);

  const session = await Session.open({ zid: "0A" });
  assert.equal(session.zid, "0A");
  // A second Session on the same router shares its key space.
  const other = new Session(session.router, "other");
  const seen: string[] = [];
  session.declareSubscriber("demo/**", (s) => void seen.push(`${s.kind} ${s.key} ${s.payload.toString()}`));
  session.declareQueryable("demo/eval", (q) => q.reply("demo/eval", `hello ${q.parameters.get("name")}`));
  await session.put("demo/a", "1");
  await session.delete("demo/a");
  await other.put("demo/b", "2");
  const replies = await session.get("demo/eval?(name=api)");
  assert.deepEqual(seen, ["put demo/a 1", "delete demo/a ", "put demo/b 2"]);
  assert.equal(replies[0]?.kind === "ok" && replies[0].sample.payload.toString(), "hello api");
  other.close();
  session.close();
  await session.router.close();

  // Router is exported too: a Session on a Router of one's own works the same.
  const router = new Router({ zid: "0B" });
  await router.start();
  const own = new Session(router, "own");
  const keys: string[] = [];
  own.declareSubscriber("x/**", (s) => void keys.push(`${s.key}@${own.zid}`));
  await own.put("x/1", "1");
  assert.deepEqual(keys, ["x/1@0B"]);
  own.close();
  await router.close();
});

test("zest/sqlite exports the SQLite driver and no test hook", async () => {
  const sqlite = await import("zest/sqlite");
  assert.deepEqual(Object.keys(sqlite).sort(), ["sqliteDriver"]);
});
