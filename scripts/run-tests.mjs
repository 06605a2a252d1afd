// Finds every test file (Node 20's --test does not expand globs) and runs them with tsx.
import { spawnSync } from "node:child_process";
import { readdirSync, statSync } from "node:fs";
import { join } from "node:path";

function find(dir) {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    return statSync(p).isDirectory() ? find(p) : p.endsWith(".test.ts") ? [p] : [];
  });
}

const filters = process.argv.slice(2);
const files = find("test")
  .sort()
  .filter((f) => filters.length === 0 || filters.some((x) => f.includes(x)));
if (files.length === 0) {
  console.error("no test files found");
  process.exit(1);
}
// The zenoh-ts client (test/remote) imports a .wasm module and uses the global WebSocket: Node 20
// needs these flags for it; the test runner hands them to every test file's process.
const zenohTsFlags = [
  "--experimental-wasm-modules",
  "--experimental-websocket",
  "--disable-warning=ExperimentalWarning",
];
const r = spawnSync(
  process.execPath,
  [...zenohTsFlags, "--import", "tsx", "--test", "--test-concurrency=2", "--test-timeout=120000", ...files],
  { stdio: "inherit" },
);
process.exit(r.status ?? 1);
