/** A logger that keeps every line it writes, parsed, for tests that assert what was logged. */
import type { Buffer } from "node:buffer";
import { Writable } from "node:stream";
import { pino } from "pino";
import type { Logger } from "../../src/core/log.js";

/** A logger (at `level`) whose lines land, parsed, in `lines`. */
export function capturingLogger(level: "debug" | "info" = "info"): {
  logger: Logger;
  lines: Array<Record<string, unknown>>;
} {
  const lines: Array<Record<string, unknown>> = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const line of chunk.toString().split("\n")) if (line) lines.push(JSON.parse(line));
      done();
    },
  });
  return { logger: pino({ level }, sink), lines };
}
