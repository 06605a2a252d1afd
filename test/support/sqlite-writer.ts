/**
 * Child process for the sqlite durability test: opens `<path>` with the sqlite volume and puts
 * `<count>` keys `durable/<i>` (32 at a time), printing each key on stdout only after its put resolved.
 * Usage: node --import tsx test/support/sqlite-writer.ts <path> <count>
 */
import { silentLogger } from "../../src/core/log.js";
import { HLC } from "../../src/core/timestamp.js";
import { sqliteDriver } from "../../src/storage/volumes/sqlite.js";

const [path, countArg] = process.argv.slice(2);
if (!path || !countArg) {
  process.stderr.write("usage: sqlite-writer <path> <count>\n");
  process.exit(2);
}
const volume = await sqliteDriver.open("durability", { path }, { logger: silentLogger });
const storage = await volume.createStorage("durability", "durable/**", {});
const hlc = new HLC("AB");
// Up to 32 puts in flight, as from concurrent requests, so that several share one group commit.
const IN_FLIGHT = 32;
let next = 0;
async function writer(): Promise<void> {
  while (next < Number(countArg)) {
    const key = `durable/${next++}`;
    await storage.put({
      key,
      payload: Buffer.from(`value ${key}`),
      encoding: "text/plain",
      timestamp: hlc.newTimestamp(),
    });
    // stdout is a pipe: writes are synchronous on Linux, so the parent never sees an unacknowledged key.
    process.stdout.write(`${key}\n`);
  }
}
await Promise.all(Array.from({ length: IN_FLIGHT }, writer));
await storage.close(false);
