/**
 * `node --import tsx bench/lib/netns-main.ts <name>`: runs one zenoh benchmark and prints its
 * result as one JSON line. bench/lib/zenoh.ts runs it inside a loopback-only namespace.
 */
import { BENCHMARKS } from "../benchmarks.js";
import { killAllChildren } from "./proc.js";

const name = process.argv[2];
const entry = BENCHMARKS.find((b) => b.name === name);
if (entry === undefined) {
  console.error(`unknown benchmark ${name}`);
  process.exit(2);
}
try {
  const result = await (await entry.load()).run();
  console.log(JSON.stringify(result));
} catch (err) {
  console.log(JSON.stringify({ error: err instanceof Error ? err.message : String(err) }));
  process.exitCode = 1;
} finally {
  killAllChildren();
}
