#!/usr/bin/env node
import { Buffer } from "node:buffer";
import { randomBytes } from "node:crypto";
import { Command, CommanderError, Option } from "commander";
import { parseAdminPermissions } from "./access/admin-permissions.js";
import type { AnyFrontDoor } from "./access/front-door.js";
import { hashSecret } from "./access/hash.js";
import { parseEndpoint } from "./access/listen.js";
import { applyCfgOverride, ConfigError, type ConfigInput, loadConfigFile } from "./config/config.js";
import { errorMessage } from "./core/errors.js";
import { redactText } from "./config/redact.js";
import { createLogger } from "./core/log.js";
import { defaultStartOptions } from "./defaults.js";
import { startZest, type Zest } from "./runtime.js";
import { parseEndpoint as parseZenohEndpoint } from "./zenoh/endpoint.js";
import { VERSION } from "./version.js";
import { builtinDoors, validateConfig, type ZestConfig } from "./zest-config.js";

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
  restTlsCert?: string;
  restTlsKey?: string;
  /** zenoh endpoints (`-l`, as zenohd names it): the zenoh protocol door, docs/zenoh-protocol.md. */
  listen: string[];
  /** zenoh routers to join (`-e`, as zenohd names it): docs/zenoh-network.md. */
  connect: string[];
  /** False with `--no-multicast-scouting` (zenohd's flag): no answer to SCOUTs. */
  multicastScouting: boolean;
  verbose: number;
  /** The doors' own flags (`--remote-api-port`...), by commander's camel-case name. */
  [doorFlag: string]: unknown;
}

/** The flags the front doors declare (docs/adding-a-front-door.md), with the door each belongs to. */
const DOOR_FLAGS = (builtinDoors() as readonly AnyFrontDoor[]).flatMap((door) =>
  (door.flags ?? []).map((flag) => ({ door: door.name, ...flag })),
);

/** `remote-api-port` → `remoteApiPort`, as commander names an option's value. */
const camel = (flag: string): string => flag.replace(/-([a-z])/g, (_, c: string) => c.toUpperCase());

const collect = (v: string, prev: string[]): string[] => [...prev, v];
const count = (_: string, prev: number): number => prev + 1;

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
    .option(
      "--rest-http-port <port>",
      "REST gateway port: a port, ip:port, or none to disable (default 8000; a port alone listens on 127.0.0.1 unless access control is on)",
    )
    .addOption(
      new Option("--rest-variant <variant>", "REST variant: a (zenoh 0.6 style) or b (zenoh 0.4 style)").choices([
        "a",
        "b",
      ]),
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
    .option("--body-limit <bytes>", "largest request body the REST gateway accepts (16777216)")
    .option(
      "--rest-tls-cert <file>",
      "serve the REST gateway over HTTPS with this PEM certificate chain (with --rest-tls-key)",
    )
    .option("--rest-tls-key <file>", "the PEM private key of --rest-tls-cert")
    .option(
      "-l, --listen <endpoint>",
      "zenoh endpoint to listen on, tcp/, udp/ or tls/ then <ip>:<port> or [<ipv6>]:<port> (repeatable; default tcp/127.0.0.1:7447)",
      collect,
      [],
    )
    .option(
      "-e, --connect <endpoint>",
      "zenoh router to join as a client, tcp/ or tls/ then <ip>:<port> (repeatable: the first that answers)",
      collect,
      [],
    )
    .option("--no-multicast-scouting", "do not answer zenoh multicast scouting (as zenohd's flag)");
  for (const f of DOOR_FLAGS) cmd.option(`--${f.flag} <${f.value}>`, f.description);
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
  const rest = () => section(config, "plugins", "rest");
  if (flags.restHttpPort !== undefined) {
    try {
      parseEndpoint(flags.restHttpPort, "http port", true);
    } catch (err) {
      throw new ConfigError(errorMessage(err));
    }
    rest().http_port = flags.restHttpPort;
  }
  if (flags.restVariant !== undefined) rest().variant = flags.restVariant;
  if (flags.bodyLimit !== undefined) rest().body_limit = positiveInt(flags.bodyLimit, "--body-limit");
  if ((flags.restTlsCert === undefined) !== (flags.restTlsKey === undefined))
    throw new ConfigError("--rest-tls-cert and --rest-tls-key go together");
  if (flags.restTlsCert !== undefined)
    rest().tls = { listen_certificate: flags.restTlsCert, listen_private_key: flags.restTlsKey };
  for (const f of DOOR_FLAGS) {
    const value = flags[camel(f.flag)];
    if (typeof value === "string") section(config, "plugins", f.door)[f.key] = value;
  }
  if (flags.listen.length > 0) {
    for (const e of flags.listen) {
      try {
        parseZenohEndpoint(e);
      } catch (err) {
        throw new ConfigError(`--listen: ${errorMessage(err)}`);
      }
    }
    section(config, "listen").endpoints = flags.listen;
  }
  if (flags.connect.length > 0) {
    for (const e of flags.connect) {
      try {
        parseZenohEndpoint(e);
      } catch (err) {
        throw new ConfigError(`--connect: ${errorMessage(err)}`);
      }
    }
    section(config, "connect").endpoints = flags.connect;
  }
  if (!flags.multicastScouting) {
    section(config, "scouting", "multicast").enabled = false;
  }
  if (flags.id !== undefined) config.id = flags.id;
  if (flags.dataDir !== undefined) config.data_dir = flags.dataDir;
  if (flags.queryTimeout !== undefined)
    config.queries_default_timeout = positiveInt(flags.queryTimeout, "--query-timeout");
  if (flags.adminspacePermissions !== undefined) {
    try {
      section(config, "adminspace").permissions = parseAdminPermissions(flags.adminspacePermissions);
    } catch (err) {
      throw new ConfigError(errorMessage(err));
    }
  }
  if (flags.nats !== undefined) {
    section(config, "fabric", "nats").servers = flags.nats
      .split(",")
      .map((s) => s.trim())
      .filter(Boolean);
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

function positiveInt(s: string, flag: string): number {
  const n = Number(s);
  if (!Number.isInteger(n) || n <= 0) throw new ConfigError(`${flag} expects a positive integer, not "${s}"`);
  return n;
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
