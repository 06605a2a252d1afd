import { join } from "node:path";
import { AdminSpace } from "./admin/admin-space.js";
import { AdminSpaceB } from "./admin/admin-space-b.js";
import type { ZestConfig } from "./config/config.js";
import { ConfigError, parseHttpPort, validateConfig } from "./config/config.js";
import { errorMessage, isServerSide, ZestError } from "./core/errors.js";
import type { Fabric } from "./core/fabric.js";
import type { Logger } from "./core/log.js";
import { Router } from "./core/router.js";
import { Session } from "./core/session.js";
import { type AdminPermissions, DEFAULT_ADMIN_PERMISSIONS } from "./rest/access.js";
import type { RestCodec } from "./rest/codec.js";
import { RestServer } from "./rest/server.js";
import { variantA } from "./rest/variant-a.js";
import { loadPluginModule, pluginName, type LoadedPlugin } from "./plugins.js";
import type { VolumeDriver } from "./storage/backend.js";
import { StorageManager, type StorageManagerConfig } from "./storage/manager.js";
import { VERSION } from "./version.js";

/** The storage a router gets when started with no storage configuration: memory on `**`. */
export const DEFAULT_STORAGES: StorageManagerConfig = { storages: { default: { key_expr: "**", volume: "memory" } } };

/** Everything `startZest` needs besides the config. */
export interface StartOptions {
  logger: Logger;
  /** Plugin modules to load (`-P`). */
  plugins?: string[];
  /** Extra volume drivers (sqlite, influxdb, jetstream...). */
  drivers?: VolumeDriver[];
  /** Codecs by variant name. */
  codecs?: Partial<Record<"a" | "b", RestCodec>>;
  /** Builds the fabric for `config.fabric` (none: one process). */
  fabric?: (config: ZestConfig, logger: Logger) => Fabric | undefined | Promise<Fabric | undefined>;
}

/** A running router with its plugins. */
export interface Zest {
  readonly router: Router;
  readonly manager: StorageManager;
  /** The admin space in the layout of the REST variant (A: `config/`/`status/`, B: `plugin/storages/`). */
  readonly admin: AdminSpace | AdminSpaceB;
  readonly rest: RestServer | undefined;
  /** `http://host:port` of the REST gateway, when enabled. */
  readonly restUrl: string | undefined;
  /** A session for embedders. */
  readonly session: Session;
  close(): Promise<void>;
}

/** Starts a router from its config: fabric, storages, admin space, plugins, then REST. */
export async function startZest(config: ZestConfig, options: StartOptions): Promise<Zest> {
  const { logger } = options;
  validateConfig(config); // embedders get the CLI's checks (a ConfigError naming the key)
  const fabric = await options.fabric?.(config, logger);
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

    const smSession = new Session(router, "storage_manager");
    const manager = new StorageManager(smSession, {
      drivers: options.drivers ?? [],
      ctx: { dataDir: config.data_dir, logger },
      statePath: config.data_dir ? join(config.data_dir, "storage_manager.json") : undefined,
    });
    closers.push(() => manager.close());
    try {
      // `allowed_paths`/`allowed_hosts` alone are policy: the default storage stays.
      const sm = config.plugins?.storage_manager;
      await manager.start(sm?.storages === undefined && sm?.volumes === undefined ? { ...sm, ...DEFAULT_STORAGES } : sm);
    } catch (err) {
      // An invalid storage or volume in the configuration is a configuration error (exit 2).
      if (err instanceof ZestError && !isServerSide(err.kind)) throw new ConfigError(`invalid storage_manager configuration: ${errorMessage(err)}`);
      throw err;
    }

    const restCfg = config.plugins?.rest ?? {};
    const bind = parseHttpPort(restCfg.http_port);
    const plugins: LoadedPlugin[] = [];
    let rest: RestServer | undefined;
    let restUrl: string | undefined;
    const variant = restCfg.variant ?? "a";
    const AdminLayout = variant === "b" ? AdminSpaceB : AdminSpace;
    const admin = new AdminLayout(new Session(router, "admin"), manager, {
      version: VERSION,
      locators: () => (restUrl ? [restUrl] : []),
      restStatus: () => (bind ? { http_port: boundPort(bind, rest), sse_streams: rest?.sseStreams ?? 0, variant: restCfg.variant ?? "a" } : undefined),
      sessions: () => (router.fabric?.peers?.() ?? []).map((zid) => ({ peer: zid, whatami: "router" })),
      fabric: () => ({ ...(router.fabric?.status() ?? { kind: "local", connected: true }) }),
      plugins: () => Object.fromEntries(plugins.map((p) => [p.name, p.path])),
    });
    admin.start();
    closers.push(() => admin.close());

    for (const spec of options.plugins ?? []) {
      const { path, start } = await loadPluginModule(spec);
      const name = pluginName(path);
      const session = new Session(router, name);
      const handle = (await start({ session, config: config.plugins && Object.hasOwn(config.plugins, name) ? config.plugins[name] : undefined, logger: logger.child({ plugin: name }) })) ?? undefined;
      plugins.push({ name, path, handle });
      closers.push(async () => {
        await handle?.close?.();
        session.close();
      });
      logger.info({ plugin: name, path }, "plugin loaded");
    }

    if (bind) {
      const codec = options.codecs?.[variant] ?? (variant === "a" ? variantA : undefined);
      if (!codec) throw new Error(`REST variant ${variant} is not available`);
      const permissions: AdminPermissions = { ...DEFAULT_ADMIN_PERMISSIONS, ...config.adminspace?.permissions };
      rest = new RestServer({ session: new Session(router, "rest"), codec, port: bind.port, host: bind.host, bodyLimit: restCfg.body_limit, cacheEntries: restCfg.cache_entries, permissions, logger });
      const addr = await rest.listen();
      const server = rest;
      closers.push(() => server.close());
      const host = bind.host && bind.host !== "0.0.0.0" && bind.host !== "::" ? bind.host : "localhost";
      restUrl = `http://${host.includes(":") ? `[${host}]` : host}:${addr.port}`;
      logger.info({ zid: router.zid, url: restUrl, variant }, "REST gateway listening");
    }
    return { router, manager, admin, rest, restUrl, session: new Session(router, "embedder"), close };
  } catch (err) {
    await close();
    throw err;
  }
}

/** `host:port` (or `port`) the REST gateway is bound to: the real port once listening, not `0`. */
function boundPort(bind: { host?: string; port: number }, rest: RestServer | undefined): string {
  const port = rest?.address()?.port ?? bind.port;
  return bind.host ? `${bind.host}:${port}` : String(port);
}
