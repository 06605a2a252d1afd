// Preloaded (`--expose-gc --import`) into a server by the `live-memory` benchmark: on SIGUSR2 it
// collects garbage, then writes the process's memory figures (bytes) as JSON to
// $HEAP_REPORT_FILE, so the benchmark reads what the server retains, not the garbage it made.
import { writeFileSync } from "node:fs";

process.on("SIGUSR2", () => {
  globalThis.gc?.();
  globalThis.gc?.();
  const m = process.memoryUsage();
  writeFileSync(
    process.env.HEAP_REPORT_FILE,
    JSON.stringify({ rss: m.rss, heapUsed: m.heapUsed, external: m.external, arrayBuffers: m.arrayBuffers }),
  );
});
