import { isAbsolute, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import type { Logger } from "./core/log.js";
import type { Session } from "./core/session.js";

/** What a plugin module receives. */
export interface PluginContext {
  /** A session of its own on the router. */
  readonly session: Session;
  /** `plugins.<name>` from the config, if any. */
  readonly config: unknown;
  readonly logger: Logger;
}

/** A running plugin; `close` is called when the router stops. */
export interface PluginHandle {
  close?(): void | Promise<void>;
}

/**
 * A plugin module's shape: a default export (or `plugin` export) that is called once with its
 * context, and may return a handle to close.
 */
// biome-ignore lint/suspicious/noConfusingVoidType: a plugin that needs no closing returns nothing
export type PluginStart = (ctx: PluginContext) => void | PluginHandle | Promise<void | PluginHandle>;

/** A loaded plugin. */
export interface LoadedPlugin {
  readonly name: string;
  readonly path: string;
  readonly handle: PluginHandle | undefined;
}

/** Plugin name: the file name without directory and extension. */
export function pluginName(path: string): string {
  return path
    .replace(/\\/g, "/")
    .split("/")
    .pop()!
    .replace(/\.(m?js|cjs|ts)$/, "");
}

/** Imports a plugin module (a path relative to the working directory, or a package name). */
export async function loadPluginModule(spec: string): Promise<{ path: string; start: PluginStart }> {
  const looksLikePath = spec.startsWith(".") || spec.startsWith("/") || isAbsolute(spec) || /\.(m?js|cjs)$/.test(spec);
  const path = looksLikePath ? resolve(spec) : spec;
  let mod: { default?: unknown; plugin?: unknown };
  try {
    mod = (await import(looksLikePath ? pathToFileURL(path).href : spec)) as { default?: unknown; plugin?: unknown };
  } catch (err) {
    throw new Error(`cannot load plugin ${spec}: ${err instanceof Error ? err.message.split("\n")[0] : String(err)}`);
  }
  const start = typeof mod.default === "function" ? mod.default : mod.plugin;
  if (typeof start !== "function") throw new Error(`plugin ${spec} has no default export function (ctx) => ...`);
  return { path, start: start as PluginStart };
}
