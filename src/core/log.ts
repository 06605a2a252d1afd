import { pino, destination, type Logger } from "pino";
import { redactLogFields } from "./secrets.js";

export type { Logger };

/**
 * Structured logs, one JSON line per event on stderr. Quiet by default (warnings and errors);
 * `-v` shows info, `-vv` debug.
 */
export function createLogger(level: "silent" | "error" | "warn" | "info" | "debug" | "trace" = "warn"): Logger {
  // Credentials in URLs (a NATS server, an InfluxDB url) never reach the log.
  return pino(
    { level, base: { app: "zest" }, formatters: { log: redactLogFields } },
    destination({ dest: 2, sync: true }),
  );
}

/** A logger that drops everything (library default, tests). */
export const silentLogger: Logger = pino({ level: "silent" });
