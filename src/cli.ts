#!/usr/bin/env node
import { Buffer } from "node:buffer";
import { randomBytes } from "node:crypto";
import { Command, CommanderError, Option } from "commander";
import { parseAdminPermissions } from "./access/admin-permissions.js";
import type { AnyFrontDoor, DoorFlag } from "./access/front-door.js";
import { hashSecret } from "./access/hash.js";
import { applyCfgOverride, ConfigError, type ConfigInput, loadConfigFile, positiveInteger } from "./config/config.js";
import { errorMessage } from "./core/errors.js";
import { redactText } from "./config/redact.js";
import { createLogger } from "./core/log.js";
import { defaultStartOptions } from "./defaults.js";
import { startZest, type Zest } from "./runtime.js";
import { VERSION } from "./version.js";
import { builtinDoors, validateConfig, type ZestConfig } from "./zest-config.js";

interface Flags {
  config?: string;
  cfg: string[];
  id?: string;
  adminspacePermissions?: string;
  plugin: string[];
  dataDir?: string;
  nats?: string;
  queryTimeout?: string;
  /** The router's TLS (`tls`): kept under their first names, from when only REST spoke TLS. */
  restTlsCert?: string;
  restTlsKey?: string;
  verbose: number;
  /** The doors' own flags (`--rest-http-port`, `-l`...), by commander's camel-case name. */
  [doorFlag: string]: unknown;
}

const collect = (v: string, prev: string[]): string[] => [...prev, v];
const count = (_: string, prev: number): number => prev + 1;

/**
 * The flags the front doors declare (docs/adding-a-front-door.md, "Flags"), each with its
 * commander option: the command line registers them and hands each value to the door's `parse`.
 */
const DOOR_FLAGS = (builtinDoors() as readonly AnyFrontDoor[]).flatMap((door) =>
  (door.flags ?? []).map((flag) => ({ flag, option: doorOption(flag) })),
);

/** The commander option of a door's flag. */
function doorOption(f: DoorFlag): Option {
  const option = new Option(f.value === undefined ? f.flag : `${f.flag} <${f.value}>`, f.description);
  if (f.choices !== undefined) option.choices(f.choices);
  if (f.repeatable) option.argParser(collect).default([]);
  return option;
}

/** What a door's flag was given: its text, its list, false for a `--no-...` flag, or undefined when absent. */
function given(value: unknown): string | readonly string[] | false | undefined {
  if (typeof value === "string" || value === false) return value;
  if (Array.isArray(value) && value.length > 0) return value as string[];
  return undefined;
}

function program(): Command {
  const cmd = new Command("zest")
    .description("A key/value router with a REST gateway (Zenoh-compatible).")
    .version(VERSION, "-V, --version", "print the version and exit")
    .option("-c, --config <file>", "JSON5 configuration file")
    .option(
      "--cfg <path:json5>",
      'set a config value, e.g. --cfg=\'plugins/storage_manager/storages/demo:{key_expr:"demo/**",volume:"memory"}\' (repeatable)',
      collect,
      [],
    )
    .option("--id <hex>", "router id, 1 to 16 bytes of hex (default: random)")
    .option(
      "--adminspace-permissions <perms>",
      "admin space access over HTTP: r, w, rw or none (default: read for all, write from loopback)",
    )
    .option("-P, --plugin <module>", "load a plugin module that receives a Session (repeatable)", collect, [])
    .option("--data-dir <dir>", "keep run-time storages and file volumes here, so they outlast a restart")
    .option("--nats <urls>", "join a NATS cluster (comma-separated URLs) to form one key space with other routers")
    .option("--query-timeout <ms>", "default query timeout in milliseconds (10000)")
    .option(
      "--rest-tls-cert <file>",
      "the router's TLS: HTTPS, wss and tls/ with this PEM certificate chain (with --rest-tls-key)",
    )
    .option("--rest-tls-key <file>", "the PEM private key of --rest-tls-cert");
  for (const f of DOOR_FLAGS) cmd.addOption(f.option);
  return cmd
    .option("-v, --verbose", "more logs: -v info, -vv debug", count, 0)
    .helpOption("-h, --help", "show this help")
    .showSuggestionAfterError(false)
    .exitOverride()
    .configureOutput({ writeErr: () => undefined });
}

/** Builds the final config: file, then --cfg overrides, then dedicated flags. */
function buildConfig(flags: Flags): ZestConfig {
  const config: ConfigInput = flags.config ? loadConfigFile(flags.config) : {};
  for (const o of flags.cfg) applyCfgOverride(config, o);
  if ((flags.restTlsCert === undefined) !== (flags.restTlsKey === undefined))
    throw new ConfigError("--rest-tls-cert and --rest-tls-key go together");
  if (flags.restTlsCert !== undefined)
    config.tls = { listen_certificate: flags.restTlsCert, listen_private_key: flags.restTlsKey };
  for (const { flag, option } of DOOR_FLAGS) {
    const value = given(flags[option.attributeName()]);
    if (value === undefined) continue;
    let parsed: unknown;
    try {
      parsed = flag.parse ? flag.parse(value) : value;
    } catch (err) {
      throw new ConfigError(errorMessage(err));
    }
    const key = flag.path[flag.path.length - 1]!;
    Object.defineProperty(section(config, ...flag.path.slice(0, -1)), key, {
      value: parsed,
      writable: true,
      enumerable: true,
      configurable: true,
    });
  }
  if (flags.id !== undefined) config.id = flags.id;
  if (flags.dataDir !== undefined) config.data_dir = flags.dataDir;
  if (flags.queryTimeout !== undefined)
    config.queries_default_timeout = positiveInteger(flags.queryTimeout, "--query-timeout");
  if (flags.adminspacePermissions !== undefined) {
    try {
      section(config, "adminspace").permissions = parseAdminPermissions(flags.adminspacePermissions);
    } catch (err) {
      throw new ConfigError(errorMessage(err));
    }
  }
  if (flags.nats !== undefined) {
    // A comma-separated list, split by the fabric's schema.
    section(config, "fabric", "nats").servers = flags.nats;
  }
  validateConfig(config);
  return config;
}

/**
 * The object at `path` in `config`, created when absent. A value there that is no object is
 * replaced: the flag wins, as it always did, and the schema checks the result.
 */
function section(config: ConfigInput, ...path: string[]): Record<string, unknown> {
  let node = config;
  for (const key of path) {
    const next = Object.hasOwn(node, key) ? node[key] : undefined;
    if (typeof next === "object" && next !== null && !Array.isArray(next)) node = next as Record<string, unknown>;
    else {
      const created: Record<string, unknown> = {};
      Object.defineProperty(node, key, { value: created, writable: true, enumerable: true, configurable: true });
      node = created;
    }
  }
  return node;
}

/**
 * `zest passwd`: prints the salted scrypt hash of a password read from stdin (or a prompt on
 * a terminal), for `access_control.users[].password_hash`. `zest passwd --token <id>` makes a
 * new random Bearer token `<id>.<secret>`, printing the token, then its hash for
 * `access_control.tokens[].token_hash`.
 */
async function passwd(args: string[]): Promise<number> {
  const usage = "usage: zest passwd [--token <id>]  (the password is read from stdin)";
  if (args[0] === "-h" || args[0] === "--help") {
    process.stdout.write(`${usage}\n`);
    return 0;
  }
  if (args[0] === "--token") {
    const id = args[1] ?? "";
    if (!/^[A-Za-z0-9_-]{1,64}$/.test(id) || args.length > 2) {
      process.stderr.write(`zest: passwd --token needs an id of 1 to 64 letters, digits, _ or -\n${usage}\n`);
      return 2;
    }
    const token = `${id}.${randomBytes(24).toString("base64url")}`;
    process.stdout.write(`${token}\n${hashSecret(token)}\n`);
    return 0;
  }
  if (args.length > 0) {
    process.stderr.write(`zest: unexpected argument ${args[0]}\n${usage}\n`);
    return 2;
  }
  const secret = await readSecret();
  if (secret === "") {
    process.stderr.write("zest: empty password\n");
    return 2;
  }
  process.stdout.write(`${hashSecret(secret)}\n`);
  return 0;
}

/** The password: one line from a terminal (not echoed), or stdin without its final newline. */
async function readSecret(): Promise<string> {
  const stdin = process.stdin;
  if (stdin.isTTY) {
    process.stderr.write("Password: ");
    stdin.setRawMode(true);
    let line = "";
    for await (const chunk of stdin) {
      for (const ch of String(chunk)) {
        if (ch === "\r" || ch === "\n") {
          stdin.setRawMode(false);
          process.stderr.write("\n");
          stdin.pause();
          return line;
        }
        if (ch === "\u0003") process.exit(130);
        if (ch === "\u007f") line = line.slice(0, -1);
        else line += ch;
      }
    }
    return line;
  }
  const chunks: Buffer[] = [];
  for await (const chunk of stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks)
    .toString("utf8")
    .replace(/\r?\n$/, "");
}

async function main(argv: string[]): Promise<number> {
  if (argv[2] === "passwd") return passwd(argv.slice(3));
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
  let zest: Zest;
  try {
    zest = await startZest(config, { ...defaultStartOptions(), logger, plugins: flags.plugin });
  } catch (err) {
    process.stderr.write(`zest: ${redactText(errorMessage(err))}\n`);
    return err instanceof ConfigError ? 2 : 1;
  }
  process.stderr.write(`${banner(zest)}\n`);
  await new Promise<void>((resolve) => {
    const stop = (): void => resolve();
    process.once("SIGINT", stop);
    process.once("SIGTERM", stop);
  });
  await zest.close();
  return 0;
}

/**
 * The startup line: the router, then every door's locators. The REST gateway's URL comes first,
 * after `serving`, as scripts read it; each other door follows with its title.
 */
function banner(zest: Zest): string {
  const parts = [`zest ${VERSION} router ${zest.router.zid}`];
  for (const door of zest.doors) {
    const locators = door.instance.locators().join(" ");
    parts.push(door.name === "rest" ? `serving ${locators}` : `${door.title} ${locators}`);
  }
  return parts.join(" ");
}

main(process.argv).then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(`zest: ${redactText(errorMessage(err))}\n`);
    process.exit(1);
  },
);
