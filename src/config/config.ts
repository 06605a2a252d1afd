import { readFileSync } from "node:fs";
import JSON5 from "json5";
import { errorMessage } from "../core/errors.js";
import { depthProblem } from "./schema.js";

/**
 * A configuration as read, before it is checked: the root schema (`src/zest-config.ts`, composed
 * from the sections the doors and the storage manager register) checks and types it.
 */
export type ConfigInput = Record<string, unknown>;

/** A configuration error: one line, and the CLI exits with status 2. */
export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ConfigError";
  }
}

/** Reads and parses a JSON5 config file. */
export function loadConfigFile(path: string): ConfigInput {
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
  return value as ConfigInput;
}

/**
 * Applies a `--cfg 'path:json5'` override, zenohd style: `path` is `/`-separated
 * (`plugins/storage_manager/storages/demo`), intermediate objects are created.
 */
export function applyCfgOverride(config: ConfigInput, override: string): void {
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
  let node = config;
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

/** The positive integer `text` says, for a flag's value; a ConfigError naming `flag` otherwise. */
export function positiveInteger(text: string, flag: string): number {
  const n = Number(text);
  if (!Number.isInteger(n) || n <= 0) throw new ConfigError(`${flag} expects a positive integer, not "${text}"`);
  return n;
}
