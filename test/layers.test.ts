/**
 * The layers of src/ (docs/architecture.md): every import, type-only and dynamic ones included,
 * points down the table below, never up and never sideways into another folder of the same
 * layer (one door never imports another). The table mirrors docs/architecture.md; a new folder
 * must be given its layer here and there.
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { relative, sep } from "node:path";
import { test } from "node:test";
import { IMPORT, importsOf, sources } from "./support/imports.js";
import { repoPath } from "./support/repo.js";

/** Folder of src/ → layer; `.` is the top-level modules (runtime, cli, defaults...). */
const LAYERS: Readonly<Record<string, number>> = {
  keyexpr: 0,
  core: 1,
  config: 2,
  access: 3,
  metrics: 3,
  storage: 4,
  fabric: 4,
  admin: 5,
  door: 5,
  rest: 6,
  remote: 6,
  zenoh: 6,
  ".": 7,
};

/** The folder of src/ a module belongs to (`.` for a top-level module). */
function folderOf(root: string, file: string): string {
  const parts = relative(root, file).split(sep);
  return parts.length === 1 ? "." : parts[0]!;
}

/** Each import that does not point down the layers, as `from → to (why)`. */
function violations(root: string, graph: ReadonlyMap<string, readonly string[]>): string[] {
  const out: string[] = [];
  for (const [from, targets] of graph) {
    const a = folderOf(root, from);
    for (const to of targets) {
      const b = folderOf(root, to);
      if (a === b) continue;
      const la = LAYERS[a];
      const lb = LAYERS[b];
      const edge = `${relative(root, from)} → ${relative(root, to)}`;
      if (la === undefined || lb === undefined) out.push(`${edge} (folder ${la === undefined ? a : b} has no layer)`);
      else if (lb > la) out.push(`${edge} (arrow up: ${a} is below ${b})`);
      else if (lb === la && a !== ".") out.push(`${edge} (sideways: ${a} and ${b} are one layer)`);
    }
  }
  return out.sort();
}

test("every import in src/ points down the layers of docs/architecture.md (type-only imports included)", () => {
  const root = repoPath("src");
  const graph = new Map(sources(root).map((f) => [f, importsOf(f)]));
  assert.ok(graph.size > 50, `the modules of src/ were found (${graph.size})`);
  assert.deepEqual(violations(root, graph), []);
  // The table and the page say the same.
  const page = readFileSync(repoPath("docs/architecture.md"), "utf8");
  for (const folder of Object.keys(LAYERS))
    if (folder !== ".") assert.match(page, new RegExp(`\`${folder}/\``), folder);
});

test("the layer check finds an arrow up, a sideways import between doors and a folder with no layer", () => {
  const root = "/r/src";
  const graph = new Map([
    ["/r/src/config/schema.ts", ["/r/src/remote/schema.ts"]],
    ["/r/src/remote/server.ts", ["/r/src/rest/http-status.ts", "/r/src/access/listen.ts"]],
    ["/r/src/mqtt/door.ts", ["/r/src/core/session.ts"]],
    ["/r/src/runtime.ts", ["/r/src/rest/door.ts", "/r/src/defaults.ts"]],
  ]);
  assert.deepEqual(violations(root, graph), [
    "config/schema.ts → remote/schema.ts (arrow up: config is below remote)",
    "mqtt/door.ts → core/session.ts (folder mqtt has no layer)",
    "remote/server.ts → rest/http-status.ts (sideways: remote and rest are one layer)",
  ]);
  // `import type` is read like any other import.
  const line = 'import type { AdminSources } from "./admin-layout.js";';
  assert.deepEqual(
    [...line.matchAll(IMPORT)].map((m) => m[1]),
    ["./admin-layout.js"],
  );
});
