import { pino, destination, type Logger } from "pino";

export type { Logger };

/**
 * Structured logs, one JSON line per event on stderr. Quiet by default (warnings and errors);
 * `-v` shows info, `-vv` debug.
 */
export function createLogger(level: "silent" | "error" | "warn" | "info" | "debug" | "trace" = "warn"): Logger {
  return pino({ level, base: { app: "zest" } }, destination({ dest: 2, sync: true }));
}

/** A logger that drops everything (library default, tests). */
export const silentLogger: Logger = pino({ level: "silent" });
