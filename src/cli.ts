#!/usr/bin/env node
import { Command, CommanderError, Option } from "commander";
import { applyCfgOverride, ConfigError, loadConfigFile, parseHttpPort, validateConfig, type ZestConfig } from "./config/config.js";
import { errorMessage } from "./core/errors.js";
import { redactText } from "./config/redact.js";
import { createLogger } from "./core/log.js";
import { parseAdminPermissions } from "./rest/access.js";
import { defaultStartOptions } from "./defaults.js";
import { startZest } from "./runtime.js";
import { VERSION } from "./version.js";

interface Flags {
  config?: string;
  cfg: string[];
  restHttpPort?: string;
  restVariant?: string;
  id?: string;
  adminspacePermissions?: string;
  plugin: string[];
  dataDir?: string;
  nats?: string;
  queryTimeout?: string;
  bodyLimit?: string;
  verbose: number;
}

const collect = (v: string, prev: string[]): string[] => [...prev, v];
const count = (_: string, prev: number): number => prev + 1;

function program(): Command {
  return new Command("zest")
    .description("A key/value router with a REST gateway (Zenoh-compatible).")
    .version(VERSION, "-V, --version", "print the version and exit")
    .option("-c, --config <file>", "JSON5 configuration file")
    .option("--cfg <path:json5>", "set a config value, e.g. --cfg='plugins/storage_manager/storages/demo:{key_expr:\"demo/**\",volume:\"memory\"}' (repeatable)", collect, [])
    .option("--rest-http-port <port>", "REST gateway port: a port, ip:port, or none to disable (default 8000)")
    .addOption(new Option("--rest-variant <variant>", "REST variant: a (zenoh 0.6 style) or b (zenoh 0.4 style)").choices(["a", "b"]))
    .option("--id <hex>", "router id, 1 to 16 bytes of hex (default: random)")
    .option("--adminspace-permissions <perms>", "admin space access over HTTP: r, w, rw or none (default: read for all, write from loopback)")
    .option("-P, --plugin <module>", "load a plugin module that receives a Session (repeatable)", collect, [])
    .option("--data-dir <dir>", "keep run-time storages and file volumes here, so they outlast a restart")
    .option("--nats <urls>", "join a NATS cluster (comma-separated URLs) to form one key space with other routers")
    .option("--query-timeout <ms>", "default query timeout in milliseconds (10000)")
    .option("--body-limit <bytes>", "largest request body the REST gateway accepts (16777216)")
    .option("-v, --verbose", "more logs: -v info, -vv debug", count, 0)
    .helpOption("-h, --help", "show this help")
    .showSuggestionAfterError(false)
    .exitOverride()
    .configureOutput({ writeErr: () => undefined });
}

/** Builds the final config: file, then --cfg overrides, then dedicated flags. */
function buildConfig(flags: Flags): ZestConfig {
  const config: ZestConfig = flags.config ? loadConfigFile(flags.config) : {};
  for (const o of flags.cfg) applyCfgOverride(config, o);
  const rest = () => ((config.plugins ??= {}).rest ??= {});
  if (flags.restHttpPort !== undefined) {
    parseHttpPort(flags.restHttpPort);
    rest().http_port = flags.restHttpPort;
  }
  if (flags.restVariant !== undefined) rest().variant = flags.restVariant as "a" | "b";
  if (flags.bodyLimit !== undefined) rest().body_limit = positiveInt(flags.bodyLimit, "--body-limit");
  if (flags.id !== undefined) config.id = flags.id;
  if (flags.dataDir !== undefined) config.data_dir = flags.dataDir;
  if (flags.queryTimeout !== undefined) config.queries_default_timeout = positiveInt(flags.queryTimeout, "--query-timeout");
  if (flags.adminspacePermissions !== undefined) {
    try {
      (config.adminspace ??= {}).permissions = parseAdminPermissions(flags.adminspacePermissions);
    } catch (err) {
      throw new ConfigError(errorMessage(err));
    }
  }
  if (flags.nats !== undefined) ((config.fabric ??= {}).nats ??= {}).servers = flags.nats.split(",").map((s) => s.trim()).filter(Boolean);
  validateConfig(config);
  return config;
}

function positiveInt(s: string, flag: string): number {
  const n = Number(s);
  if (!Number.isInteger(n) || n <= 0) throw new ConfigError(`${flag} expects a positive integer, not "${s}"`);
  return n;
}

async function main(argv: string[]): Promise<number> {
  const cmd = program();
  try {
    cmd.parse(argv);
  } catch (err) {
    if (err instanceof CommanderError) {
      if (err.code === "commander.helpDisplayed" || err.code === "commander.version") return 0;
      process.stderr.write(`zest: ${err.message.replace(/^error: /, "")} (see zest --help)\n`);
      return 2;
    }
    throw err;
  }
  const flags = cmd.opts<Flags>();
  let config: ZestConfig;
  try {
    config = buildConfig(flags);
  } catch (err) {
    process.stderr.write(`zest: ${redactText(errorMessage(err))}\n`);
    return 2;
  }
  const logger = createLogger(flags.verbose >= 2 ? "debug" : flags.verbose === 1 ? "info" : "warn");
  let zest;
  try {
    zest = await startZest(config, { ...defaultStartOptions(), logger, plugins: flags.plugin });
  } catch (err) {
    process.stderr.write(`zest: ${redactText(errorMessage(err))}\n`);
    return err instanceof ConfigError ? 2 : 1;
  }
  process.stderr.write(`zest ${VERSION} router ${zest.router.zid}${zest.restUrl ? ` serving ${zest.restUrl}` : ""}\n`);
  await new Promise<void>((resolve) => {
    const stop = (): void => resolve();
    process.once("SIGINT", stop);
    process.once("SIGTERM", stop);
  });
  await zest.close();
  return 0;
}

main(process.argv).then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(`zest: ${redactText(errorMessage(err))}\n`);
    process.exit(1);
  },
);
