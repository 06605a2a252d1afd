import { join } from "node:path";
import { z } from "zod";
import { AccessControl } from "./access/access.js";
import { EdgePolicy, type TlsMaterial } from "./access/edge-policy.js";
import type { AnyFrontDoor, FrontDoorInstance } from "./access/front-door.js";
import { loadTlsOptions } from "./access/tls.js";
import type { AdminLayout } from "./admin/admin-layout.js";
import { ConfigError } from "./config/config.js";
import { describeIssue } from "./config/schema.js";
import type { FabricConfig } from "./fabric/schema.js";
import { errorMessage, isServerSide, ZestError } from "./core/errors.js";
import type { Fabric } from "./core/fabric.js";
import type { Logger } from "./core/log.js";
import { Router } from "./core/router.js";
import { Session } from "./core/session.js";
import { SessionBoundKeys } from "./core/session-bound.js";
import { declareAdminExtras } from "./metrics/admin-entries.js";
import { RouterMetrics } from "./metrics/metrics.js";
import { loadPluginModule, pluginName, type LoadedPlugin } from "./plugins.js";
import type { RestVariant } from "./rest/codec.js";
import { variantRegistry } from "./rest/variants.js";
import type { VolumeDriver } from "./storage/backend.js";
import { StorageManager, type StorageManagerConfig } from "./storage/manager.js";
import { memoryDriver } from "./storage/volumes/memory.js";
import { VERSION } from "./version.js";
import { builtinDoors, deprecatedKeys, parseConfig, type ResolvedConfig, type ZestConfig } from "./zest-config.js";

/** The storage a router gets when started with no storage configuration: memory on `**`. */
export const DEFAULT_STORAGES: StorageManagerConfig = { storages: { default: { key_expr: "**", volume: "memory" } } };

/** Everything `startZest` needs besides the config. */
export interface StartOptions {
  logger: Logger;
  /** Plugin modules to load (`-P`). */
  plugins?: string[];
  /** Extra volume drivers (sqlite, influxdb, jetstream...); the memory driver is always there. */
  drivers?: VolumeDriver[];
  /**
   * REST variants besides the built-in ones (rest/variants.ts): each is a choice of
   * `plugins.rest.variant` and `adminspace.layout` (docs/rest-gateway.md, "Variants").
   */
  variants?: RestVariant[];
  /**
   * Front doors besides the built-in ones (docs/adding-a-front-door.md); each reads
   * `plugins.<name>`, checked with its schema.
   */
  doors?: AnyFrontDoor[];
  /** Builds the fabric for the `fabric` section (none: one process). */
  fabric?: (config: FabricConfig | undefined, logger: Logger) => Fabric | undefined | Promise<Fabric | undefined>;
}

/** A running front door, as the router lists it. */
export interface RunningDoor {
  readonly name: string;
  readonly title: string;
  readonly instance: FrontDoorInstance;
}

/** A running router with its plugins. */
export interface Zest {
  readonly router: Router;
  readonly manager: StorageManager;
  /** The admin space, in the layout `adminspace.layout` names (A: `config/`/`status/`, B: `plugin/storages/`). */
  readonly admin: AdminLayout;
  /** The running front doors, in start order (only those the config turns on). */
  readonly doors: readonly RunningDoor[];
  /** The REST door, when enabled. */
  readonly rest: FrontDoorInstance | undefined;
  /** `http://host:port` of the REST gateway, when enabled. */
  readonly restUrl: string | undefined;
  /** A session for embedders. */
  readonly session: Session;
  /** `ws://host:port` of the remote API (zenoh-ts clients), when enabled. */
  readonly remoteApiUrl: string | undefined;
  /** Where zenoh clients and peers connect (`tcp/127.0.0.1:7447`), when the zenoh door is on. */
  readonly zenohLocators: readonly string[];
  close(): Promise<void>;
}

/**
 * Starts a router from its config, parsed once here: fabric, storages, admin space, plugins,
 * then every front door, each handed its own typed section.
 */
export async function startZest(input: ZestConfig, options: StartOptions): Promise<Zest> {
  const { logger } = options;
  const variants = variantRegistry(options.variants);
  const config = parseConfig(input, variants); // embedders get the CLI's checks (a ConfigError naming the key)
  for (const { key, use } of deprecatedKeys(input))
    logger.warn({ key, use }, `${key} is deprecated: it still works, and ${use} is its new name`);
  const fabric = await options.fabric?.(config.fabric, logger);
  const router = new Router({ zid: config.id, queryTimeoutMs: config.queries_default_timeout, fabric, logger });
  const closers: Array<() => Promise<void> | void> = [];
  const close = async (): Promise<void> => {
    for (const c of closers.reverse()) {
      try {
        await c();
      } catch (err) {
        logger.warn({ err: String(err) }, "error while closing");
      }
    }
    closers.length = 0;
  };
  try {
    await router.start();
    closers.push(() => router.close());

    const smSession = new Session(router, "storage_manager", { internal: true });
    const manager = new StorageManager(smSession, {
      drivers: [memoryDriver, ...(options.drivers ?? [])],
      ctx: { dataDir: config.data_dir, logger },
      statePath: config.data_dir ? join(config.data_dir, "storage_manager.json") : undefined,
    });
    closers.push(() => manager.close());
    try {
      // `allowed_paths`/`allowed_hosts` alone are policy: the default storage stays.
      const sm = config.plugins.storage_manager;
      await manager.start(
        sm?.storages === undefined && sm?.volumes === undefined ? { ...sm, ...DEFAULT_STORAGES } : sm,
      );
    } catch (err) {
      // An invalid storage or volume in the configuration is a configuration error (exit 2).
      if (err instanceof ZestError && !isServerSide(err.kind))
        throw new ConfigError(`invalid storage_manager configuration: ${errorMessage(err)}`);
      throw err;
    }

    const edge = new EdgePolicy({
      access: accessControl(config),
      admin: config.adminspace?.permissions,
      tls: routerTls(config),
      sessionBound: sessionBoundKeys(config.session_bound?.key_exprs),
      logger,
    });
    // The schema took only registered names: the layout is there.
    const layout = variants.find((v) => v.name === config.adminspace.layout)!;
    const plugins: LoadedPlugin[] = [];
    const doors: RunningDoor[] = [];
    const admin = layout.admin(new Session(router, "admin"), manager, {
      version: VERSION,
      locators: () => doors.flatMap((d) => d.instance.locators()),
      doors: () => doors.map((d) => [d.name, d.instance.status()] as const),
      sessions: () => [
        ...(router.fabric?.peers?.() ?? []).map((zid) => ({ peer: zid, whatami: "router" })),
        ...doors.flatMap((d) => d.instance.sessions?.() ?? []),
      ],
      fabric: () => ({ ...(router.fabric?.status() ?? { kind: "local", connected: true }) }),
      plugins: () => Object.fromEntries(plugins.map((p) => [p.name, p.path])),
    });
    admin.start();
    closers.push(() => admin.close());
    const metrics = new RouterMetrics({
      storages: () =>
        manager.listStorages().map((s) => ({ name: s.name, volume: s.volume, ...storageSize(manager, s.name) })),
      fabric: () => router.fabric?.status(),
      doors: () => doors.map((d) => ({ door: d.name, ...d.instance.counters() })),
    });
    const extras = declareAdminExtras(new Session(router, "admin"), metrics);
    closers.push(() => extras.close());

    for (const spec of options.plugins ?? []) {
      const { path, start } = await loadPluginModule(spec);
      const name = pluginName(path);
      const session = new Session(router, name);
      const pluginsSection = config.plugins as Record<string, unknown>;
      const handle =
        (await start({
          session,
          config: Object.hasOwn(pluginsSection, name) ? pluginsSection[name] : undefined,
          logger: logger.child({ plugin: name }),
        })) ?? undefined;
      plugins.push({ name, path, handle });
      closers.push(async () => {
        await handle?.close?.();
        session.close();
      });
      logger.info({ plugin: name, path }, "plugin loaded");
    }

    // The front doors, each handed its own section, parsed once (docs/adding-a-front-door.md).
    const builtin: readonly AnyFrontDoor[] = builtinDoors(variants);
    const connectivity = router.connectivity();
    const names = new Set<string>(["storage_manager"]);
    for (const door of [...builtin, ...(options.doors ?? [])]) {
      // A door's name is where its section lives: two doors (or a door and the storage manager) cannot share one.
      if (names.has(door.name))
        throw new ConfigError(`two parts claim plugins.${door.name}: door names must be unique`);
      names.add(door.name);
      const section = doorSection(door, config, builtin.includes(door));
      let instance: FrontDoorInstance | undefined;
      try {
        instance = await door.start({
          config: section,
          zid: router.zid,
          version: VERSION,
          logger: logger.child({ plugin: door.name }),
          edge,
          connectivity,
          httpMetrics: metrics,
          openSession: (name) => new Session(router, name),
        });
      } catch (err) {
        // A value its schema let through but the door refuses is a configuration error (exit 2).
        if (err instanceof ZestError && err.kind === "bad_input") throw new ConfigError(errorMessage(err));
        throw err;
      }
      if (instance === undefined) continue;
      const running = instance;
      doors.push({ name: door.name, title: door.title, instance: running });
      closers.push(() => running.close());
    }
    const locatorOf = (name: string): string | undefined => doors.find((d) => d.name === name)?.instance.locators()[0];
    return {
      router,
      manager,
      admin,
      doors,
      rest: doors.find((d) => d.name === "rest")?.instance,
      restUrl: locatorOf("rest"),
      session: new Session(router, "embedder"),
      remoteApiUrl: locatorOf("remote_api"),
      zenohLocators: doors.find((d) => d.name === "zenoh")?.instance.locators() ?? [],
      close,
    };
  } catch (err) {
    await close();
    throw err;
  }
}

/** The router's access control; a policy that does not hold together is a configuration error. */
function accessControl(config: ResolvedConfig): AccessControl {
  try {
    return AccessControl.fromParsed(config.access_control);
  } catch (err) {
    throw new ConfigError(errorMessage(err));
  }
}

/** `session_bound.key_exprs` as the edge policy holds them; a key expression that does not parse is a ConfigError. */
function sessionBoundKeys(keyExprs: readonly string[] | undefined): SessionBoundKeys | undefined {
  if (keyExprs === undefined || keyExprs.length === 0) return undefined;
  try {
    return new SessionBoundKeys(keyExprs);
  } catch (err) {
    throw new ConfigError(errorMessage(err));
  }
}

/** The router's TLS material (`tls`), shared by every door that speaks TLS (the edge policy's input). */
function routerTls(config: ResolvedConfig): TlsMaterial | undefined {
  const tls = config.tls;
  if (tls === undefined) return undefined;
  try {
    return loadTlsOptions(tls);
  } catch (err) {
    throw new ConfigError(errorMessage(err));
  }
}

/**
 * A door's section: a built-in door's was parsed with the root schema; another door's is parsed
 * here, once, with its own schema (a ConfigError naming the key when it does not fit).
 */
function doorSection(door: AnyFrontDoor, config: ResolvedConfig, builtin: boolean): unknown {
  const where = door.atRoot ? [] : ["plugins", door.name];
  const raw = door.atRoot ? rootSections(door, config) : pluginSection(door, config);
  if (builtin) return raw;
  const r = door.schema.safeParse(raw ?? {});
  if (r.success) return r.data;
  throw new ConfigError(describeIssue(r.error.issues[0]!, where));
}

/** `plugins.<name>` of the config, when there. */
function pluginSection(door: AnyFrontDoor, config: ResolvedConfig): unknown {
  const plugins = config.plugins as Record<string, unknown>;
  return Object.hasOwn(plugins, door.name) ? plugins[door.name] : undefined;
}

/** A root door's sections (the keys of its object schema), taken from the root of the config. */
function rootSections(door: AnyFrontDoor, config: ResolvedConfig): Record<string, unknown> {
  const root = config as Record<string, unknown>;
  const keys = door.schema instanceof z.ZodObject ? Object.keys(door.schema.shape) : [];
  const picked: Record<string, unknown> = {};
  for (const k of keys) if (Object.hasOwn(root, k)) picked[k] = root[k];
  return picked;
}

/** Sizes a storage's backend can tell without a scan (a memory backend's key count). */
function storageSize(manager: StorageManager, name: string): { samples?: number } {
  const backend = manager.storage(name)?.backend as { size?: unknown } | undefined;
  return typeof backend?.size === "number" ? { samples: backend.size } : {};
}
