import { readFileSync } from "node:fs";
import JSON5 from "json5";
import { errorMessage } from "../core/errors.js";
import type { StorageManagerConfig } from "../storage/manager.js";
import { configSchema, depthProblem, problems } from "./schema.js";

/** The router's configuration (JSON5 file, `--cfg` overrides and flags, in that order). */
export interface ZestConfig {
  /** Router id, hex. */
  id?: string;
  /** Directory where run-time storages and file-backed volumes are kept. */
  data_dir?: string;
  /** Default query timeout in milliseconds (10 000). */
  queries_default_timeout?: number;
  adminspace?: { permissions?: { read?: boolean; write?: boolean | "loopback" } };
  plugins?: {
    rest?: {
      http_port?: number | string;
      variant?: "a" | "b";
      body_limit?: number;
      cache_entries?: number;
      /** SSE resume (docs/sse.md): events and bytes kept, linger after the last stream, retry hint. */
      sse?: { resume_log?: number; resume_log_bytes?: number; resume_linger_ms?: number; retry_ms?: number };
      /** Long-poll bounds (docs/long-poll.md). */
      long_poll?: { max_wait_ms?: number; max_waits?: number; max_waits_per_address?: number };
      /** HTTP/2 on the TLS port (docs/http2.md). */
      http2?: { enabled?: boolean; max_concurrent_streams?: number; max_session_memory_mb?: number };
    };
    storage_manager?: StorageManagerConfig;
    [plugin: string]: unknown;
  };
  /** Authentication and access control (src/access/schema.ts). */
  access_control?: unknown;
  fabric?: { nats?: { servers?: string[] | string; [option: string]: unknown } };
}

/** A configuration error: one line, and the CLI exits with status 2. */
export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ConfigError";
  }
}

/** Reads and parses a JSON5 config file. */
export function loadConfigFile(path: string): ZestConfig {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (err) {
    throw new ConfigError(
      `cannot read config file ${path}: ${(err as NodeJS.ErrnoException).code === "ENOENT" ? "no such file" : errorMessage(err)}`,
    );
  }
  let value: unknown;
  try {
    value = JSON5.parse(text);
  } catch (err) {
    throw new ConfigError(`config file ${path} is not valid JSON5: ${errorMessage(err)}`);
  }
  const deep = depthProblem(value);
  if (deep) throw new ConfigError(`config file ${path}: ${deep}`);
  if (typeof value !== "object" || value === null || Array.isArray(value))
    throw new ConfigError(`config file ${path} must hold a JSON5 object`);
  return value as ZestConfig;
}

/**
 * Applies a `--cfg 'path:json5'` override, zenohd style: `path` is `/`-separated
 * (`plugins/storage_manager/storages/demo`), intermediate objects are created.
 */
export function applyCfgOverride(config: ZestConfig, override: string): void {
  const colon = override.indexOf(":");
  if (colon <= 0)
    throw new ConfigError(`invalid --cfg "${override}": expected PATH:VALUE, e.g. plugins/rest/http_port:8080`);
  const path = override
    .slice(0, colon)
    .split("/")
    .filter((s) => s !== "");
  let value: unknown;
  try {
    value = JSON5.parse(override.slice(colon + 1));
  } catch (err) {
    throw new ConfigError(`invalid --cfg value for ${path.join("/")}: ${errorMessage(err)}`);
  }
  if (path.length === 0) throw new ConfigError(`invalid --cfg "${override}": the path is empty`);
  // Path parts are names (a storage may be called `__proto__`): own properties only, set by definition.
  let node = config as Record<string, unknown>;
  for (const part of path.slice(0, -1)) {
    const next = Object.hasOwn(node, part) ? node[part] : undefined;
    if (next === undefined) node = defineKey(node, part, {}) as Record<string, unknown>;
    else if (typeof next === "object" && next !== null && !Array.isArray(next)) node = next as Record<string, unknown>;
    else throw new ConfigError(`invalid --cfg path ${path.join("/")}: ${part} is not an object`);
  }
  defineKey(node, path[path.length - 1]!, value);
}

/** Sets `obj[key]` as an own property, even for `__proto__`; returns the value. */
function defineKey(obj: Record<string, unknown>, key: string, value: unknown): unknown {
  Object.defineProperty(obj, key, { value, writable: true, enumerable: true, configurable: true });
  return value;
}

/** Where the REST gateway listens; `undefined` when disabled (`none`). */
export function parseHttpPort(value: number | string | undefined): { host?: string; port: number } | undefined {
  if (value === undefined) return { port: 8000 };
  const s = String(value).trim();
  if (s.toLowerCase() === "none") return undefined;
  const colon = s.lastIndexOf(":");
  const host = colon === -1 ? undefined : s.slice(0, colon).replace(/^\[|\]$/g, "");
  const portText = colon === -1 ? s : s.slice(colon + 1);
  const port = Number(portText);
  if (!/^\d+$/.test(portText) || port > 65535)
    throw new ConfigError(`invalid http port "${s}": expected a port, ip:port, or none`);
  return host === undefined ? { port } : { host, port };
}

/**
 * Checks the whole config against the schema (`schema.ts`): an unknown key, a wrong type or a
 * value nested too deep is a ConfigError (exit 2) naming the key.
 */
export function validateConfig(config: unknown): asserts config is ZestConfig {
  const found = problems(configSchema, config);
  if (found.length > 0)
    throw new ConfigError(
      found.length === 1 ? found[0]! : `${found[0]} (and ${found.length - 1} more: ${found.slice(1, 4).join("; ")})`,
    );
  parseHttpPort((config as ZestConfig).plugins?.rest?.http_port);
}
