/**
 * The `zest` command's V8 flags are written in three places: its #! line, `npm start`, and
 * `NODE_FLAGS` (which the benchmarks and end-to-end tests start the router with). They must agree.
 */
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import { NODE_FLAGS } from "../../src/node-flags.js";

const root = new URL("../../", import.meta.url);

test("the #! line of the zest command, npm start and NODE_FLAGS give node the same flags", () => {
  const flags = NODE_FLAGS.join(" ");
  for (const file of ["src/cli.ts", "dist/cli.js"]) {
    const first = readFileSync(new URL(file, root), "utf8").split("\n", 1)[0];
    assert.equal(first, `#!/usr/bin/env -S node ${flags}`, file);
  }
  const pkg = JSON.parse(readFileSync(new URL("package.json", root), "utf8")) as { scripts: Record<string, string> };
  assert.equal(pkg.scripts.start, `node ${flags} dist/cli.js`);
});

test("node accepts the flags, and the built command runs through its #! line", () => {
  const out = execFileSync(process.execPath, [...NODE_FLAGS, "-p", "process.execArgv.join(' ')"], { encoding: "utf8" });
  assert.ok(out.startsWith(`${NODE_FLAGS.join(" ")} -p`), out);
  // Executed as the kernel runs the installed `zest` bin: the rest of the #! line is one argument
  // to env, whose -S splits it into node and its flags.
  const cli = new URL("dist/cli.js", root).pathname;
  const shebang = readFileSync(cli, "utf8").split("\n", 1)[0]!;
  const [interpreter, rest] = [shebang.slice(2, shebang.indexOf(" ")), shebang.slice(shebang.indexOf(" ") + 1)];
  const version = execFileSync(interpreter, [rest, cli, "--version"], { encoding: "utf8" });
  assert.match(version, /^\d+\.\d+\.\d+$/m);
});
