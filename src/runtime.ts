import { join } from "node:path";
import { protectedBind, restSecurityOptions, type RestSecurityOptions } from "./access/rest-config.js";
import type { AdminLayout } from "./admin/admin-layout.js";
import type { ZestConfig } from "./config/config.js";
import { ConfigError, parseHttpPort, validateConfig } from "./config/config.js";
import { errorMessage, isServerSide, ZestError } from "./core/errors.js";
import type { Fabric } from "./core/fabric.js";
import type { Logger } from "./core/log.js";
import { Router } from "./core/router.js";
import { Session } from "./core/session.js";
import { type AdminPermissions, DEFAULT_ADMIN_PERMISSIONS } from "./rest/access.js";
import type { RestVariant } from "./rest/codec.js";
import type { SseOptions } from "./rest/sse.js";
import { declareAdminExtras } from "./metrics/admin-entries.js";
import { RouterMetrics } from "./metrics/metrics.js";
import { openApiDocument } from "./rest/openapi.js";
import { RestServer } from "./rest/server.js";
import { variantA } from "./rest/variant-a.js";
import { loadPluginModule, pluginName, type LoadedPlugin } from "./plugins.js";
import { startRemoteApi } from "./remote/start.js";
import type { VolumeDriver } from "./storage/backend.js";
import { StorageManager, type StorageManagerConfig } from "./storage/manager.js";
import { memoryDriver } from "./storage/volumes/memory.js";
import { VERSION } from "./version.js";

/** The storage a router gets when started with no storage configuration: memory on `**`. */
export const DEFAULT_STORAGES: StorageManagerConfig = { storages: { default: { key_expr: "**", volume: "memory" } } };

/** Everything `startZest` needs besides the config. */
export interface StartOptions {
  logger: Logger;
  /** Plugin modules to load (`-P`). */
  plugins?: string[];
  /** Extra volume drivers (sqlite, influxdb, jetstream...); the memory driver is always there. */
  drivers?: VolumeDriver[];
  /** REST variants besides Variant A (which is always there). */
  variants?: RestVariant[];
  /** Builds the fabric for `config.fabric` (none: one process). */
  fabric?: (config: ZestConfig, logger: Logger) => Fabric | undefined | Promise<Fabric | undefined>;
}

/** A running router with its plugins. */
export interface Zest {
  readonly router: Router;
  readonly manager: StorageManager;
  /** The admin space in the layout of the REST variant (A: `config/`/`status/`, B: `plugin/storages/`). */
  readonly admin: AdminLayout;
  readonly rest: RestServer | undefined;
  /** `http://host:port` of the REST gateway, when enabled. */
  readonly restUrl: string | undefined;
  /** A session for embedders. */
  readonly session: Session;
  /** `ws://host:port` of the remote API (zenoh-ts clients), when enabled. */
  readonly remoteApiUrl: string | undefined;
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
      drivers: [memoryDriver, ...(options.drivers ?? [])],
      ctx: { dataDir: config.data_dir, logger },
      statePath: config.data_dir ? join(config.data_dir, "storage_manager.json") : undefined,
    });
    closers.push(() => manager.close());
    try {
      // `allowed_paths`/`allowed_hosts` alone are policy: the default storage stays.
      const sm = config.plugins?.storage_manager;
      await manager.start(
        sm?.storages === undefined && sm?.volumes === undefined ? { ...sm, ...DEFAULT_STORAGES } : sm,
      );
    } catch (err) {
      // An invalid storage or volume in the configuration is a configuration error (exit 2).
      if (err instanceof ZestError && !isServerSide(err.kind))
        throw new ConfigError(`invalid storage_manager configuration: ${errorMessage(err)}`);
      throw err;
    }

    const restCfg = config.plugins?.rest ?? {};
    const bind = parseHttpPort(restCfg.http_port);
    let security: RestSecurityOptions;
    try {
      security = restSecurityOptions(config.access_control, restCfg as Record<string, unknown>);
    } catch (err) {
      throw new ConfigError(errorMessage(err));
    }
    const plugins: LoadedPlugin[] = [];
    let rest: RestServer | undefined;
    let restUrl: string | undefined;
    const variant = restCfg.variant ?? "a";
    const restVariant = [variantA, ...(options.variants ?? [])].find((v) => v.name === variant);
    if (!restVariant) throw new ConfigError(`REST variant ${variant} is not available`);
    const admin = restVariant.admin(new Session(router, "admin"), manager, {
      version: VERSION,
      locators: () => (restUrl ? [restUrl] : []),
      restStatus: () =>
        bind
          ? {
              http_port: boundPort(bind, rest),
              sse_streams: rest?.sseStreams ?? 0,
              long_polls: rest?.longPolls ?? 0,
              variant: restCfg.variant ?? "a",
            }
          : undefined,
      sessions: () => (router.fabric?.peers?.() ?? []).map((zid) => ({ peer: zid, whatami: "router" })),
      fabric: () => ({ ...(router.fabric?.status() ?? { kind: "local", connected: true }) }),
      plugins: () => Object.fromEntries(plugins.map((p) => [p.name, p.path])),
    });
    admin.start();
    closers.push(() => admin.close());
    const metrics = new RouterMetrics(variant, {
      sse: () => rest?.sseStatus,
      longPoll: () => rest?.longPollStatus,
      storages: () =>
        manager.listStorages().map((s) => ({ name: s.name, volume: s.volume, ...storageSize(manager, s.name) })),
      fabric: () => router.fabric?.status(),
      responseBytes: () => rest?.responseBytes ?? 0,
    });
    const extras = declareAdminExtras(new Session(router, "admin"), metrics, () => openApiDocument(variant, VERSION));
    closers.push(() => extras.close());

    for (const spec of options.plugins ?? []) {
      const { path, start } = await loadPluginModule(spec);
      const name = pluginName(path);
      const session = new Session(router, name);
      const handle =
        (await start({
          session,
          config: config.plugins && Object.hasOwn(config.plugins, name) ? config.plugins[name] : undefined,
          logger: logger.child({ plugin: name }),
        })) ?? undefined;
      plugins.push({ name, path, handle });
      closers.push(async () => {
        await handle?.close?.();
        session.close();
      });
      logger.info({ plugin: name, path }, "plugin loaded");
    }

    if (bind) {
      const codec = restVariant.codec;
      const permissions: AdminPermissions = { ...DEFAULT_ADMIN_PERMISSIONS, ...config.adminspace?.permissions };
      bind.host = protectedBind(bind.host, bind.port, security.access, logger);
      rest = new RestServer({
        session: new Session(router, "rest"),
        codec,
        port: bind.port,
        host: bind.host,
        bodyLimit: restCfg.body_limit,
        cacheEntries: restCfg.cache_entries,
        permissions,
        logger,
        ...security,
        metrics,
        sse: sseOptions(restCfg.sse),
        longPoll: {
          maxWaitMs: restCfg.long_poll?.max_wait_ms,
          maxWaits: restCfg.long_poll?.max_waits,
          maxWaitsPerAddress: restCfg.long_poll?.max_waits_per_address,
        },
        http2: {
          enabled: restCfg.http2?.enabled,
          maxConcurrentStreams: restCfg.http2?.max_concurrent_streams,
          maxSessionMemoryMb: restCfg.http2?.max_session_memory_mb,
        },
      });
      const addr = await rest.listen();
      const server = rest;
      closers.push(() => server.close());
      const host = bind.host && bind.host !== "0.0.0.0" && bind.host !== "::" ? bind.host : "localhost";
      restUrl = `${security.tls ? "https" : "http"}://${host.includes(":") ? `[${host}]` : host}:${addr.port}`;
      logger.info({ zid: router.zid, url: restUrl, variant }, "REST gateway listening");
    }
    // The remote API (zenoh-ts clients over WebSocket): off unless plugins.remote_api.websocket_port is set.
    // It shares REST's access control and TLS certificate (`wss`): docs/remote-api.md.
    const remote = await startRemoteApi(router, config.plugins?.remote_api, {
      logger,
      adminWrite: config.adminspace?.permissions?.write,
      adminRead: config.adminspace?.permissions?.read,
      access: security.access,
      tls: security.tls,
    });
    if (remote) closers.push(() => remote.server.close());
    return {
      router,
      manager,
      admin,
      rest,
      restUrl,
      session: new Session(router, "embedder"),
      remoteApiUrl: remote?.url,
      close,
    };
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

/** Sizes a storage's backend can tell without a scan (a memory backend's key count). */
function storageSize(manager: StorageManager, name: string): { samples?: number } {
  const backend = manager.storage(name)?.backend as { size?: unknown } | undefined;
  return typeof backend?.size === "number" ? { samples: backend.size } : {};
}

/** `plugins.rest.sse` as the SSE hub takes it (docs/sse.md). */
function sseOptions(cfg: NonNullable<NonNullable<ZestConfig["plugins"]>["rest"]>["sse"]): SseOptions | undefined {
  if (cfg === undefined) return undefined;
  return {
    resumeLog: cfg.resume_log,
    resumeLogBytes: cfg.resume_log_bytes,
    resumeLingerMs: cfg.resume_linger_ms,
    retryMs: cfg.retry_ms,
  };
}
