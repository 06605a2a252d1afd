import { readFileSync } from "node:fs";
import JSON5 from "json5";
import { errorMessage } from "../core/errors.js";
import type { StorageManagerConfig } from "../storage/manager.js";

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
    };
    storage_manager?: StorageManagerConfig;
    [plugin: string]: unknown;
  };
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
    throw new ConfigError(`cannot read config file ${path}: ${(err as NodeJS.ErrnoException).code === "ENOENT" ? "no such file" : errorMessage(err)}`);
  }
  let value: unknown;
  try {
    value = JSON5.parse(text);
  } catch (err) {
    throw new ConfigError(`config file ${path} is not valid JSON5: ${errorMessage(err)}`);
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) throw new ConfigError(`config file ${path} must hold a JSON5 object`);
  return value as ZestConfig;
}

/**
 * Applies a `--cfg 'path:json5'` override, zenohd style: `path` is `/`-separated
 * (`plugins/storage_manager/storages/demo`), intermediate objects are created.
 */
export function applyCfgOverride(config: ZestConfig, override: string): void {
  const colon = override.indexOf(":");
  if (colon <= 0) throw new ConfigError(`invalid --cfg "${override}": expected PATH:VALUE, e.g. plugins/rest/http_port:8080`);
  const path = override.slice(0, colon).split("/").filter((s) => s !== "");
  let value: unknown;
  try {
    value = JSON5.parse(override.slice(colon + 1));
  } catch (err) {
    throw new ConfigError(`invalid --cfg value for ${path.join("/")}: ${errorMessage(err)}`);
  }
  let node = config as Record<string, unknown>;
  for (const part of path.slice(0, -1)) {
    const next = node[part];
    if (next === undefined) node = node[part] = {};
    else if (typeof next === "object" && next !== null && !Array.isArray(next)) node = next as Record<string, unknown>;
    else throw new ConfigError(`invalid --cfg path ${path.join("/")}: ${part} is not an object`);
  }
  node[path[path.length - 1]!] = value;
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
  if (!/^\d+$/.test(portText) || port > 65535) throw new ConfigError(`invalid http port "${s}": expected a port, ip:port, or none`);
  return host === undefined ? { port } : { host, port };
}

/** Checks the parts of the config whose type mistakes would otherwise surface late. */
export function validateConfig(config: ZestConfig): void {
  const rest = config.plugins?.rest;
  if (rest !== undefined && (typeof rest !== "object" || rest === null)) throw new ConfigError("plugins.rest must be an object");
  if (rest?.variant !== undefined && rest.variant !== "a" && rest.variant !== "b") throw new ConfigError(`plugins.rest.variant must be "a" or "b", not ${JSON.stringify(rest.variant)}`);
  if (rest?.body_limit !== undefined && (!Number.isInteger(rest.body_limit) || rest.body_limit <= 0)) throw new ConfigError("plugins.rest.body_limit must be a positive integer (bytes)");
  if (rest?.cache_entries !== undefined && (!Number.isInteger(rest.cache_entries) || rest.cache_entries < 0)) throw new ConfigError("plugins.rest.cache_entries must be a whole number (0 disables the read cache)");
  for (const [k, v] of Object.entries(rest?.sse ?? {})) {
    if (!Number.isInteger(v) || (v as number) < 0) throw new ConfigError(`plugins.rest.sse.${k} must be a whole number`);
  }
  parseHttpPort(rest?.http_port);
  const t = config.queries_default_timeout;
  if (t !== undefined && (typeof t !== "number" || !(t > 0))) throw new ConfigError("queries_default_timeout must be a positive number of milliseconds");
  const sm = config.plugins?.storage_manager;
  if (sm !== undefined && (typeof sm !== "object" || sm === null || Array.isArray(sm))) throw new ConfigError("plugins.storage_manager must be an object");
  for (const section of ["storages", "volumes"] as const) {
    const v = sm?.[section];
    if (v !== undefined && (typeof v !== "object" || v === null || Array.isArray(v))) throw new ConfigError(`plugins.storage_manager.${section} must be an object`);
  }
  if (config.id !== undefined && (typeof config.id !== "string" || !/^([0-9a-fA-F]{2}){1,16}$/.test(config.id))) {
    throw new ConfigError(`invalid router id ${JSON.stringify(config.id)}: expected 1 to 16 bytes of hex`);
  }
}
