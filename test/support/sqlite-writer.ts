/**
 * Child process for the sqlite durability test: opens `<path>` with the sqlite volume and puts
 * `<count>` keys `durable/<i>`, printing each key on stdout only after its put resolved.
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
for (let i = 0; i < Number(countArg); i++) {
  const key = `durable/${i}`;
  await storage.put({ key, payload: Buffer.from(`value ${i}`), encoding: "text/plain", timestamp: hlc.newTimestamp() });
  // stdout is a pipe: writes are synchronous on Linux, so the parent never sees an unacknowledged key.
  process.stdout.write(`${key}\n`);
}
await storage.close(false);
