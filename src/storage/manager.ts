import { mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { dirname } from "node:path";
import { isDeepStrictEqual } from "node:util";
import { canonize } from "../keyexpr/index.js";
import { errorMessage, isServerSide, ZestError } from "../core/errors.js";
import type { Logger } from "../core/log.js";
import type { Session } from "../core/session.js";
import type { Volume, VolumeContext, VolumeDriver } from "./backend.js";
import { StorageService, UnavailableStorage } from "./service.js";

/** Options of a volume: `backend` names the driver or one of its aliases (default: the volume's own name). */
export type VolumeConfig = Readonly<Record<string, unknown>>;

/** A storage as configured: `{ key_expr, volume }`, the volume a name or `{ id, ...options }`. */
export interface StorageConfig {
  readonly key_expr: string;
  readonly volume: string | Readonly<{ id: string } & Record<string, unknown>>;
  readonly [option: string]: unknown;
}

/** The `plugins.storage_manager` section of the config. */
export interface StorageManagerConfig {
  volumes?: Record<string, VolumeConfig>;
  storages?: Record<string, StorageConfig>;
}

interface RunningStorage {
  readonly config: StorageConfig;
  /** The storage, or its stand-in while its backend cannot be opened. */
  readonly service: StorageService | UnavailableStorage;
  readonly volume: string;
}

/** A volume as the admin layouts list it, with what its driver says about itself. */
export interface VolumeListing {
  readonly id: string;
  /** The driver's name. */
  readonly driver: string;
  /** The driver's zenoh 0.4 `kind`. */
  readonly kind: string;
  /** The driver's admin `__path__`. */
  readonly adminPath: string;
  readonly status: Record<string, unknown>;
  readonly config: VolumeConfig | undefined;
  /** Why the volume could not be opened, while it cannot. */
  readonly error?: string;
}

/** What was saved under `--data-dir`: run-time changes, and what was removed from the config. */
interface SavedState extends StorageManagerConfig {
  removedStorages?: string[];
  removedVolumes?: string[];
}

/**
 * A failure worth waiting out: an unavailable backend (503) or an unexpected error. A config
 * error (4xx) will not fix itself, and still stops start-up.
 */
function retryable(err: unknown): boolean {
  return !(err instanceof ZestError) || isServerSide(err.kind);
}

/** Storage manager options. */
export interface StorageManagerOptions {
  /** Every volume driver the router knows (`memoryDriver` among them, for the built-in `memory` volume). */
  drivers: VolumeDriver[];
  ctx: VolumeContext;
  /** File where run-time changes are kept (under `--data-dir`); absent = not persisted. */
  statePath?: string;
}

/**
 * Creates, lists and removes storages and volumes. Every change is validated before anything is
 * touched, and is in effect when the returned promise resolves.
 */
export class StorageManager {
  private readonly session: Session;
  /** Drivers by name and by alias. */
  private readonly drivers = new Map<string, VolumeDriver>();
  private readonly volumeConfigs = new Map<string, VolumeConfig>();
  private readonly volumes = new Map<string, Volume>();
  /** Configured volumes that could not be opened (id → why); their storages stand in. */
  private readonly volumeErrors = new Map<string, string>();
  private readonly storages = new Map<string, RunningStorage>();
  private readonly ctx: VolumeContext;
  private readonly logger: Logger;
  private readonly statePath: string | undefined;
  /** Serializes changes: each one sees the state the previous one left. */
  private tail: Promise<unknown> = Promise.resolve();

  constructor(session: Session, options: StorageManagerOptions) {
    this.session = session;
    this.ctx = options.ctx;
    this.logger = options.ctx.logger.child({ plugin: "storage_manager" });
    this.statePath = options.statePath;
    for (const d of options.drivers) for (const name of [d.name, ...d.aliases]) this.drivers.set(name, d);
  }

  /**
   * Starts the configured volumes and storages (persisted run-time state overrides the config).
   * A volume or storage whose backend cannot be opened does not stop the others: it is logged,
   * kept in the saved state, and its storages stand in (503 with the reason) while they retry
   * opening every 5 s. A config error (4xx) still fails start-up.
   */
  async start(config: StorageManagerConfig): Promise<void> {
    for (const d of new Set(this.drivers.values())) if (d.builtIn && !this.volumes.has(d.name)) this.volumes.set(d.name, await d.open(d.name, {}, this.ctx));
    const merged = { volumes: { ...config.volumes }, storages: { ...config.storages } };
    const saved = this.loadState();
    if (saved) {
      Object.assign(merged.volumes, saved.volumes);
      Object.assign(merged.storages, saved.storages);
      for (const name of saved.removedStorages ?? []) delete merged.storages[name];
      for (const id of saved.removedVolumes ?? []) delete merged.volumes[id];
    }
    for (const [id, v] of Object.entries(merged.volumes)) {
      try {
        await this.putVolume(id, v, { persist: false });
      } catch (err) {
        if (!retryable(err)) throw err;
        this.volumeConfigs.set(id, v);
        this.volumeErrors.set(id, errorMessage(err));
        this.logger.warn({ volume: id, err: errorMessage(err) }, "volume unavailable at start-up; its storages answer 503 and retry");
      }
    }
    for (const [name, s] of Object.entries(merged.storages)) {
      try {
        await this.putStorage(name, s, { persist: false });
      } catch (err) {
        if (!retryable(err)) throw err;
        await this.serial(async () => this.standIn(name, parseStorageConfig(name, s), err));
      }
    }
  }

  /** Stops every storage (keeping their data) and closes the volumes. */
  async close(): Promise<void> {
    for (const [name, s] of this.storages) {
      try {
        await s.service.stop(false);
      } catch (err) {
        this.logger.warn({ storage: name, err: errorMessage(err) }, "storage stop failed");
      }
    }
    this.storages.clear();
    for (const v of this.volumes.values()) await v.close().catch(() => undefined);
    this.volumes.clear();
    this.volumeErrors.clear();
  }

  /**
   * Names and configs of the storages, sorted by name. `error` is set while a storage's backend
   * cannot be opened (it answers 503 with that reason and retries).
   */
  listStorages(): Array<{ name: string; config: StorageConfig; volume: string; driver: string; error?: string }> {
    return [...this.storages.entries()]
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([name, s]) => {
        const out = { name, config: s.config, volume: s.volume, driver: this.driverName(s.volume) };
        return s.service instanceof UnavailableStorage ? { ...out, error: s.service.error().message } : out;
      });
  }

  /**
   * The volumes with their status and config, sorted by id: the open ones, and the configured
   * ones that could not be opened, with `error` set (their status is `{ error }`).
   */
  listVolumes(): VolumeListing[] {
    const out: VolumeListing[] = [];
    const describe = (name: string): Pick<VolumeListing, "kind" | "adminPath"> => {
      const d = this.drivers.get(name);
      return { kind: d?.kind ?? name, adminPath: d?.adminPath ?? `<built-in ${name}>` };
    };
    for (const v of this.volumes.values()) out.push({ id: v.id, driver: v.driver, ...describe(v.driver), status: v.status(), config: this.volumeConfigs.get(v.id) });
    for (const [id, error] of this.volumeErrors) {
      if (this.volumes.has(id)) continue;
      const driver = this.driverName(id);
      out.push({ id, driver, ...describe(driver), status: { error }, config: this.volumeConfigs.get(id), error });
    }
    return out.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  }

  /** The running storage service `name`, if any (not while it stands in for an unavailable backend). */
  storage(name: string): StorageService | undefined {
    const service = this.storages.get(name)?.service;
    return service instanceof StorageService ? service : undefined;
  }

  /** Creates or replaces volume `id`. A volume in use by storages cannot be replaced (409). */
  putVolume(id: string, config: unknown, opts: { persist?: boolean } = {}): Promise<void> {
    return this.serial(async () => {
      const cfg = asObject(config, `volume ${id}`);
      const driver = this.driverFor(id, cfg);
      const prev = this.volumeConfigs.get(id);
      // The same config again is a no-op, unless the volume failed to open: then it is a retry.
      if (prev && isDeepStrictEqual(prev, cfg) && this.volumes.has(id)) return;
      const users = this.usersOf(id);
      if (users.length > 0) throw ZestError.conflict(`volume ${id} is used by storage(s) ${users.join(", ")}; remove them first`);
      const volume = await driver.open(id, cfg, this.ctx);
      await this.volumes.get(id)?.close();
      this.volumes.set(id, volume);
      this.volumeConfigs.set(id, cfg);
      this.volumeErrors.delete(id);
      if (opts.persist !== false) this.saveState();
      this.logger.info({ volume: id, driver: driver.name }, "volume opened");
    });
  }

  /** Removes volume `id` (404 if unknown, 409 while storages use it). */
  deleteVolume(id: string): Promise<void> {
    return this.serial(async () => {
      if (this.drivers.get(id)?.builtIn && this.volumes.get(id)?.driver === id) throw ZestError.forbidden(`the built-in ${id} volume cannot be removed`);
      const volume = this.volumes.get(id);
      if (!volume && !this.volumeErrors.has(id)) throw ZestError.notFound(`no volume named ${id}`);
      const users = this.usersOf(id);
      if (users.length > 0) throw ZestError.conflict(`volume ${id} is used by storage(s) ${users.join(", ")}; remove them first`);
      this.volumes.delete(id);
      this.volumeConfigs.delete(id);
      this.volumeErrors.delete(id);
      await volume?.close();
      // Remembered as removed, so a volume from the config file does not come back on a restart.
      this.saveState([], [id]);
    });
  }

  /**
   * Creates storage `name`, or replaces it when its config changed (an identical config is a
   * no-op). Validation errors are 400s naming the field; an unreachable backend is a 503.
   */
  putStorage(name: string, config: unknown, opts: { persist?: boolean } = {}): Promise<void> {
    return this.serial(async () => {
      const cfg = parseStorageConfig(name, config);
      const prev = this.storages.get(name);
      // The same config again is a no-op, unless the storage stands in for an unavailable
      // backend: then it is a retry now (a 503 if it still fails, the stand-in staying).
      if (prev && isDeepStrictEqual(prev.config, cfg) && !(prev.service instanceof UnavailableStorage)) return;
      const { id: volumeId, options } = splitVolume(cfg.volume);
      const volume = await this.volumeFor(volumeId);
      const backend = await volume.createStorage(name, cfg.key_expr, options);
      if (prev) {
        this.storages.delete(name);
        await prev.service.stop(false);
      }
      const service = new StorageService(name, cfg.key_expr, backend, this.session, this.logger);
      await service.start();
      this.storages.set(name, { config: cfg, service, volume: volumeId });
      if (opts.persist !== false) this.saveState();
      this.logger.info({ storage: name, key_expr: cfg.key_expr, volume: volumeId }, "storage started");
    });
  }

  /** Removes storage `name`, applying its disposal policy (404 if unknown). */
  deleteStorage(name: string): Promise<void> {
    return this.serial(async () => {
      const s = this.storages.get(name);
      if (!s) throw ZestError.notFound(`no storage named ${name}`);
      this.storages.delete(name);
      this.saveState([name]);
      if (s.service instanceof UnavailableStorage) this.logger.warn({ storage: name, err: s.service.reason }, "storage removed while its backend is unavailable: its disposal policy was not applied");
      await s.service.stop(true);
      this.logger.info({ storage: name }, "storage removed");
    });
  }

  /**
   * Puts a stand-in for storage `name`, whose backend could not be opened: it answers 503 with
   * the reason on its key expression and retries opening until it can switch to the real storage.
   */
  private async standIn(name: string, cfg: StorageConfig, err: unknown): Promise<void> {
    const { id: volumeId } = splitVolume(cfg.volume);
    const standIn = new UnavailableStorage(name, cfg.key_expr, errorMessage(err), this.session);
    const prev = this.storages.get(name);
    if (prev) {
      this.storages.delete(name);
      await prev.service.stop(false);
    }
    standIn.start(() => this.serial(() => this.reopen(name, standIn)));
    this.storages.set(name, { config: cfg, service: standIn, volume: volumeId });
    this.logger.warn({ storage: name, key_expr: cfg.key_expr, volume: volumeId, err: standIn.reason }, "storage unavailable at start-up; answering 503 and retrying every 5 s");
  }

  /** One retry of a stand-in: true once the real storage runs (or the stand-in is gone). */
  private async reopen(name: string, standIn: UnavailableStorage): Promise<boolean> {
    const s = this.storages.get(name);
    if (!s || s.service !== standIn) return true; // removed or replaced meanwhile
    const { id: volumeId, options } = splitVolume(s.config.volume);
    let service: StorageService;
    try {
      const volume = await this.volumeFor(volumeId);
      const backend = await volume.createStorage(name, s.config.key_expr, options);
      service = new StorageService(name, s.config.key_expr, backend, this.session, this.logger);
    } catch (err) {
      standIn.reason = errorMessage(err);
      this.logger.debug({ storage: name, err: standIn.reason }, "storage still unavailable");
      return false;
    }
    if (this.storages.get(name)?.service !== standIn) {
      await service.stop(false); // removed, replaced or closed while it opened
      return true;
    }
    await standIn.stop();
    await service.start();
    this.storages.set(name, { config: s.config, service, volume: volumeId });
    this.logger.warn({ storage: name, key_expr: s.config.key_expr, volume: volumeId }, "storage available again: opened after a retry");
    return true;
  }

  /** The driver name of volume `id` (opened, configured, or a driver's own name). */
  private driverName(id: string): string {
    const open = this.volumes.get(id);
    if (open) return open.driver;
    const cfg = this.volumeConfigs.get(id);
    try {
      if (cfg) return this.driverFor(id, cfg).name;
    } catch {
      // fall through
    }
    return this.drivers.get(id)?.name ?? "?";
  }

  private serial<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.tail.then(fn);
    this.tail = run.catch(() => undefined);
    return run;
  }

  private driverFor(id: string, cfg: VolumeConfig): VolumeDriver {
    const requested = typeof cfg.backend === "string" ? cfg.backend : id;
    const driver = this.drivers.get(requested);
    if (!driver) throw ZestError.badRequest(`unknown volume backend "${requested}" for volume ${id} (known: ${this.driverNames().join(", ")})`);
    return driver;
  }

  /** A configured volume, or one opened on demand when `id` names a driver (`memory`, `sqlite`...). */
  private async volumeFor(id: string): Promise<Volume> {
    const open = this.volumes.get(id);
    if (open) return open;
    const cfg = this.volumeConfigs.get(id);
    if (cfg) {
      // Configured, but it could not be opened: try again.
      const configured = this.driverFor(id, cfg);
      let volume: Volume;
      try {
        volume = await configured.open(id, cfg, this.ctx);
      } catch (err) {
        this.volumeErrors.set(id, errorMessage(err));
        throw err;
      }
      this.volumes.set(id, volume);
      this.volumeErrors.delete(id);
      this.logger.warn({ volume: id, driver: configured.name }, "volume available again: opened after a retry");
      return volume;
    }
    const driver = this.drivers.get(id);
    if (!driver) throw ZestError.badRequest(`\`${id}\` volume not found (known volumes: ${[...new Set([...this.volumes.keys(), ...this.driverNames()])].join(", ")})`);
    const volume = await driver.open(id, {}, this.ctx);
    this.volumes.set(id, volume);
    return volume;
  }

  /** The drivers' own names (not their aliases). */
  private driverNames(): string[] {
    return [...new Set([...this.drivers.values()].map((d) => d.name))];
  }

  private usersOf(volumeId: string): string[] {
    return [...this.storages.entries()].filter(([, s]) => s.volume === volumeId).map(([n]) => n);
  }

  private loadState(): SavedState | undefined {
    if (!this.statePath) return undefined;
    try {
      return JSON.parse(readFileSync(this.statePath, "utf8")) as SavedState;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "ENOENT") this.logger.warn({ path: this.statePath, err: errorMessage(err) }, "could not read saved storages");
      return undefined;
    }
  }

  /** Writes the current volumes and storages atomically (rename), so a crash never leaves half a file. */
  private saveState(removed: string[] = [], removedVolumeIds: string[] = []): void {
    if (!this.statePath) return;
    const prev = this.loadState();
    const removedStorages = [...new Set([...(prev?.removedStorages ?? []), ...removed])].filter((n) => !this.storages.has(n));
    const removedVolumes = [...new Set([...(prev?.removedVolumes ?? []), ...removedVolumeIds])].filter((n) => !this.volumeConfigs.has(n));
    const state: SavedState = {
      volumes: Object.fromEntries(this.volumeConfigs),
      storages: Object.fromEntries([...this.storages.entries()].map(([n, s]) => [n, s.config])),
      removedStorages,
      removedVolumes,
    };
    mkdirSync(dirname(this.statePath), { recursive: true });
    const tmp = `${this.statePath}.tmp`;
    writeFileSync(tmp, JSON.stringify(state, null, 2));
    renameSync(tmp, this.statePath);
  }
}

function asObject(value: unknown, what: string): Record<string, unknown> {
  if (typeof value !== "object" || value === null || Array.isArray(value)) throw ZestError.badRequest(`${what}: expected a JSON object`);
  return value as Record<string, unknown>;
}

/** Validates a storage config; throws a 400 naming the field at fault. */
export function parseStorageConfig(name: string, raw: unknown): StorageConfig {
  const obj = asObject(raw, `storage ${name}`);
  if (!/^[A-Za-z0-9_.-]+$/.test(name)) throw ZestError.badRequest(`invalid storage name "${name}": use letters, digits, '_', '-' and '.'`);
  if (obj.key_expr === undefined) throw ZestError.badRequest(`\`key_expr\` field missing for storage ${name}`);
  if (typeof obj.key_expr !== "string") throw ZestError.badRequest(`\`key_expr\` of storage ${name} must be a string`);
  let keyExpr: string;
  try {
    keyExpr = canonize(obj.key_expr);
  } catch (err) {
    throw ZestError.badRequest(`key_expr='${obj.key_expr}' is not a valid key expression: ${errorMessage(err)}`);
  }
  if (obj.volume === undefined) throw ZestError.badRequest(`\`volume\` field missing for storage ${name}`);
  const volume = obj.volume;
  if (typeof volume !== "string") {
    const v = asObject(volume, `\`volume\` of storage ${name}`);
    if (typeof v.id !== "string" || v.id === "") throw ZestError.badRequest(`\`volume\` of storage ${name} must be a string or an object with a string \`id\``);
  }
  return { ...obj, key_expr: keyExpr, volume: volume as StorageConfig["volume"] };
}

function splitVolume(volume: StorageConfig["volume"]): { id: string; options: Record<string, unknown> } {
  if (typeof volume === "string") return { id: volume, options: {} };
  const { id, ...options } = volume;
  return { id, options };
}
