/**
 * Every door folder has the same file set (docs/architecture.md), as every adapter folder of
 * Hono has: a reader who knows one door knows where to look in the next.
 */
import assert from "node:assert/strict";
import { existsSync, readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { repoPath } from "../support/repo.js";

test("every folder of src/ with a door.ts has door, schema, server, and messages or codec", () => {
  const src = repoPath("src");
  const doors = readdirSync(src).filter(
    (name) => statSync(join(src, name)).isDirectory() && existsSync(join(src, name, "door.ts")),
  );
  assert.deepEqual(doors.sort(), ["remote", "rest", "zenoh"]);
  for (const door of doors) {
    const has = (file: string): boolean => existsSync(join(src, door, file));
    for (const file of ["door.ts", "schema.ts", "server.ts"]) assert.ok(has(file), `src/${door}/${file}`);
    assert.ok(
      has("messages.ts") || has("codec.ts") || has("codec"),
      `src/${door}/ has its wire in messages.ts or codec(/)`,
    );
  }
});
