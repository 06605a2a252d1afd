import assert from "node:assert/strict";
import { relative } from "node:path";
import { test } from "node:test";
import { IMPORT, importsOf, sources } from "./support/imports.js";
import { repoPath } from "./support/repo.js";

/** The strongly connected components of more than one module (Tarjan), each an import circle. */
function circles(graph: Map<string, string[]>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (v: string): void => {
    index.set(v, index.size);
    low.set(v, index.get(v) as number);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!graph.has(w)) continue;
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v) as number, low.get(w) as number));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v) as number, index.get(w) as number));
    }
    if (low.get(v) === index.get(v)) {
      const component: string[] = [];
      let w: string | undefined;
      do {
        w = stack.pop() as string;
        onStack.delete(w);
        component.push(w);
      } while (w !== v);
      if (component.length > 1) found.push(component.sort());
    }
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return found;
}

test("no import circle among the modules of src/, type-only imports included", () => {
  const root = repoPath("src");
  const graph = new Map(sources(root).map((f) => [f, importsOf(f)]));
  assert.ok(graph.size > 50, `the modules of src/ were found (${graph.size})`);
  const named = circles(graph).map((c) => c.map((f) => relative(repoPath(), f)));
  assert.deepEqual(named, []);
});

test("the circle check finds a circle closed by a type-only import", () => {
  const graph = new Map([
    ["a.ts", ["b.ts"]],
    ["b.ts", ["c.ts"]],
    ["c.ts", ["a.ts"]],
    ["d.ts", ["a.ts"]],
  ]);
  assert.deepEqual(circles(graph), [["a.ts", "b.ts", "c.ts"]]);
  // And the parser reads `import type` like any other import.
  const line = 'import type { AdminSources } from "./admin-layout.js";';
  assert.deepEqual(
    [...line.matchAll(IMPORT)].map((m) => m[1]),
    ["./admin-layout.js"],
  );
});
