import { mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import JSON5 from "json5";
import { dirname } from "node:path";
import { isDeepStrictEqual } from "node:util";
import { canonize } from "../keyexpr/index.js";
import { type AdmissionPolicy, admissionPolicy, admitRuntimeOptions, type HostRef } from "../config/admission.js";
import { problems } from "../config/closed-schema.js";
import { redactText } from "../config/redact.js";
import { errorMessage, isServerSide, ZestError } from "../core/errors.js";
import { durationValue } from "../core/lifetime.js";
import type { Logger } from "../core/log.js";
import type { Session } from "../core/session.js";
import type { Volume, VolumeContext, VolumeDriver } from "./backend.js";
import { SerialQueue } from "../core/serial-queue.js";
import { type OptionsSpec, parseOptions, type RawOptions } from "./options.js";
import { savedStateSchema, storageSchema, volumeSchema } from "./schema.js";
import {
  REOPEN_EVERY_MS,
  type RunningStorage,
  StorageService,
  type StorageServiceOptions,
  UnavailableStorage,
  unavailableError,
} from "./service.js";
import { parseReplication } from "./replication/config.js";
import type { ReplicationStatus } from "./replication/replicator.js";

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
  /** Directories (besides `data_dir`) where run-time volumes may open files. */
  allowed_paths?: string[];
  /** Hosts run-time volumes may reach (default: the hosts of the configured volumes). */
  allowed_hosts?: string[];
}

/** A storage the manager runs, with the config and volume it was started from. */
interface StorageEntry {
  readonly config: StorageConfig;
  /** The storage, or its stand-in while its backend cannot be opened. */
  readonly service: RunningStorage;
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
interface SavedState {
  volumes?: Record<string, VolumeConfig>;
  storages?: Record<string, StorageConfig>;
  removedStorages?: string[];
  removedVolumes?: string[];
}

/** Where a change comes from: the configuration (file, flags, saved state) or an admin write. */
export interface ChangeOptions {
  /** false: do not save it under `--data-dir` (start-up). */
  persist?: boolean;
  /**
   * true for changes written through the admin space (the default): their files and hosts are
   * checked against `allowed_paths`/`allowed_hosts`. Start-up passes false.
   */
  runtime?: boolean;
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
  /** How often a storage whose backend could not be opened tries again (default `REOPEN_EVERY_MS`, 5 s). */
  retryEveryMs?: number;
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
  private readonly storages = new Map<string, StorageEntry>();
  private readonly ctx: VolumeContext;
  private readonly logger: Logger;
  private readonly statePath: string | undefined;
  private readonly retryEveryMs: number;
  /** Serializes changes: each one sees the state the previous one left. */
  private readonly changes = new SerialQueue();
  /** Names removed at run time that the configuration file still has (kept in the saved state). */
  private readonly removedStorages = new Set<string>();
  private readonly removedVolumes = new Set<string>();
  /** What run-time volumes may reach (set by `start`). */
  private admission: AdmissionPolicy;

  constructor(session: Session, options: StorageManagerOptions) {
    this.session = session;
    this.ctx = options.ctx;
    this.logger = options.ctx.logger.child({ plugin: "storage_manager" });
    this.statePath = options.statePath;
    this.retryEveryMs = options.retryEveryMs ?? REOPEN_EVERY_MS;
    for (const d of options.drivers) for (const name of [d.name, ...d.aliases]) this.drivers.set(name, d);
    this.admission = admissionPolicy({ dataDir: this.ctx.dataDir });
  }

  /**
   * Starts the configured volumes and storages (persisted run-time state overrides the config).
   * A volume or storage whose backend cannot be opened does not stop the others: it is logged,
   * kept in the saved state, and its storages stand in (503 with the reason) while they retry
   * opening every `retryEveryMs` (5 s). A config error (4xx) still fails start-up.
   */
  async start(config: StorageManagerConfig): Promise<void> {
    for (const d of new Set(this.drivers.values()))
      if (d.builtIn && !this.volumes.has(d.name)) this.volumes.set(d.name, await d.open(d.name, {}, this.ctx));
    // Names are data: Maps throughout, so `__proto__` or `constructor` is a name like any other.
    const volumes = new Map<string, unknown>(entriesOf(config.volumes));
    const storages = new Map<string, unknown>(entriesOf(config.storages));
    this.admission = admissionPolicy({
      dataDir: this.ctx.dataDir,
      allowedPaths: config.allowed_paths,
      allowedHosts: config.allowed_hosts,
      configuredHosts: this.hostsOf(volumes, storages),
    });
    const saved = this.loadState();
    if (saved) {
      for (const [id, v] of entriesOf(saved.volumes)) volumes.set(id, v);
      for (const [name, s] of entriesOf(saved.storages)) storages.set(name, s);
      for (const name of saved.removedStorages ?? []) {
        storages.delete(name);
        this.removedStorages.add(name);
      }
      for (const id of saved.removedVolumes ?? []) {
        volumes.delete(id);
        this.removedVolumes.add(id);
      }
    }
    for (const [id, v] of volumes) {
      try {
        await this.putVolume(id, v, { persist: false, runtime: false });
      } catch (err) {
        if (!retryable(err)) throw err;
        this.volumeConfigs.set(id, v as VolumeConfig);
        this.volumeErrors.set(id, redactText(errorMessage(err)));
        this.logger.warn(
          { volume: id, err: redactText(errorMessage(err)) },
          "volume unavailable at start-up; its storages answer 503 and retry",
        );
      }
    }
    for (const [name, s] of storages) {
      try {
        await this.putStorage(name, s, { persist: false, runtime: false });
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
  listStorages(): Array<{
    name: string;
    config: StorageConfig;
    volume: string;
    driver: string;
    error?: string;
    replication?: ReplicationStatus;
  }> {
    return [...this.storages.entries()]
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([name, s]) => {
        const replication = s.service.replicationStatus();
        const out = {
          name,
          config: s.config,
          volume: s.volume,
          driver: this.driverName(s.volume),
          ...(replication === undefined ? {} : { replication }),
        };
        const unavailable = s.service.unavailable;
        return unavailable === undefined ? out : { ...out, error: unavailableError(name, unavailable).message };
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
    for (const v of this.volumes.values())
      out.push({
        id: v.id,
        driver: v.driver,
        ...describe(v.driver),
        status: v.status(),
        config: this.volumeConfigs.get(v.id),
      });
    for (const [id, error] of this.volumeErrors) {
      if (this.volumes.has(id)) continue;
      const driver = this.driverName(id);
      out.push({ id, driver, ...describe(driver), status: { error }, config: this.volumeConfigs.get(id), error });
    }
    return out.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  }

  /** The running storage `name`, if any (not while it stands in for an unavailable backend). */
  storage(name: string): RunningStorage | undefined {
    const service = this.storages.get(name)?.service;
    return service?.unavailable === undefined ? service : undefined;
  }

  /** Creates or replaces volume `id`. A volume in use by storages cannot be replaced (409). */
  putVolume(id: string, config: unknown, opts: ChangeOptions = {}): Promise<void> {
    return this.serial(async () => {
      const cfg = asObject(config, `volume ${id}`);
      checkSchema(volumeSchema, cfg, ["plugins", "storage_manager", "volumes", id]);
      const driver = this.driverFor(id, cfg);
      this.checkOptions(driver.options.volume, cfg, `volume ${id}`, opts);
      const prev = this.volumeConfigs.get(id);
      // The same config again is a no-op, unless the volume failed to open: then it is a retry.
      if (prev && isDeepStrictEqual(prev, cfg) && this.volumes.has(id)) return;
      const users = this.usersOf(id);
      if (users.length > 0)
        throw ZestError.conflict(`volume ${id} is used by storage(s) ${users.join(", ")}; remove them first`);
      const volume = await driver.open(id, cfg, this.ctx);
      const prevVolume = this.volumes.get(id);
      const prevError = this.volumeErrors.get(id);
      this.volumes.set(id, volume);
      this.volumeConfigs.set(id, cfg);
      this.volumeErrors.delete(id);
      if (opts.persist !== false) {
        await this.saveOrUndo(async () => {
          // Back to the previous volume: the running and the saved state stay the same.
          await volume.close();
          restore(this.volumes, id, prevVolume);
          restore(this.volumeConfigs, id, prev);
          restore(this.volumeErrors, id, prevError);
        });
      }
      await prevVolume?.close();
      this.logger.info({ volume: id, driver: driver.name }, "volume opened");
    });
  }

  /** Removes volume `id` (404 if unknown, 409 while storages use it). */
  deleteVolume(id: string): Promise<void> {
    return this.serial(async () => {
      if (this.drivers.get(id)?.builtIn && this.volumes.get(id)?.driver === id)
        throw ZestError.forbidden(`the built-in ${id} volume cannot be removed`);
      const volume = this.volumes.get(id);
      if (!volume && !this.volumeErrors.has(id)) throw ZestError.notFound(`no volume named ${id}`);
      const users = this.usersOf(id);
      if (users.length > 0)
        throw ZestError.conflict(`volume ${id} is used by storage(s) ${users.join(", ")}; remove them first`);
      const prevConfig = this.volumeConfigs.get(id);
      const prevError = this.volumeErrors.get(id);
      const wasRemoved = this.removedVolumes.has(id);
      this.volumes.delete(id);
      this.volumeConfigs.delete(id);
      this.volumeErrors.delete(id);
      // Remembered as removed, so a volume from the config file does not come back on a restart.
      this.removedVolumes.add(id);
      await this.saveOrUndo(async () => {
        restore(this.volumes, id, volume);
        restore(this.volumeConfigs, id, prevConfig);
        restore(this.volumeErrors, id, prevError);
        if (!wasRemoved) this.removedVolumes.delete(id);
      });
      await volume?.close();
    });
  }

  /**
   * Creates storage `name`, or replaces it when its config changed (an identical config is a
   * no-op). Validation errors are 400s naming the field; an unreachable backend is a 503.
   */
  putStorage(name: string, config: unknown, opts: ChangeOptions = {}): Promise<void> {
    return this.serial(async () => {
      const cfg = parseStorageConfig(name, config);
      if (typeof cfg.volume === "object") {
        // Checked before the volume opens, so a misspelled option is refused even while it cannot.
        const { id: volumeId, options } = splitVolume(cfg.volume);
        const driver = this.driverOfVolume(volumeId);
        if (driver) this.checkOptions(driver.options.storage, options, `${driver.name} storage ${name}`, opts);
      }
      const prev = this.storages.get(name);
      // The same config again is a no-op, unless the storage stands in for an unavailable
      // backend: then it is a retry now (a 503 if it still fails, the stand-in staying).
      if (prev && isDeepStrictEqual(prev.config, cfg) && prev.service.unavailable === undefined) return;
      const { id: volumeId, options } = splitVolume(cfg.volume);
      const volume = await this.volumeFor(volumeId);
      const backend = await volume.createStorage(name, cfg.key_expr, options);
      if (prev) {
        this.storages.delete(name);
        await prev.service.stop(false);
      }
      const service = new StorageService(
        name,
        cfg.key_expr,
        backend,
        this.session,
        this.logger,
        serviceOptions(cfg, name),
      );
      await service.start();
      this.storages.set(name, { config: cfg, service, volume: volumeId });
      const wasRemoved = this.removedStorages.delete(name);
      if (opts.persist !== false) {
        await this.saveOrUndo(async () => {
          // Back to the previous storage (its data was kept), or to no storage at all.
          this.storages.delete(name);
          if (wasRemoved) this.removedStorages.add(name);
          await service.stop(false);
          if (prev) await this.reopenPrevious(name, prev);
        });
      }
      this.logger.info({ storage: name, key_expr: cfg.key_expr, volume: volumeId }, "storage started");
    });
  }

  /** Removes storage `name`, applying its disposal policy (404 if unknown). */
  deleteStorage(name: string): Promise<void> {
    return this.serial(async () => {
      const s = this.storages.get(name);
      if (!s) throw ZestError.notFound(`no storage named ${name}`);
      this.storages.delete(name);
      const wasRemoved = this.removedStorages.has(name);
      this.removedStorages.add(name);
      // Saved before its disposal policy runs, so a failed save leaves the storage as it was.
      await this.saveOrUndo(async () => {
        this.storages.set(name, s);
        if (!wasRemoved) this.removedStorages.delete(name);
      });
      if (s.service.unavailable !== undefined)
        this.logger.warn(
          { storage: name, err: s.service.unavailable },
          "storage removed while its backend is unavailable: its disposal policy was not applied",
        );
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
    const standIn = new UnavailableStorage(
      name,
      cfg.key_expr,
      redactText(errorMessage(err)),
      this.session,
      serviceOptions(cfg, name).complete,
    );
    const prev = this.storages.get(name);
    if (prev) {
      this.storages.delete(name);
      await prev.service.stop(false);
    }
    standIn.start(() => this.serial(() => this.reopen(name, standIn)), this.retryEveryMs);
    this.storages.set(name, { config: cfg, service: standIn, volume: volumeId });
    this.logger.warn(
      { storage: name, key_expr: cfg.key_expr, volume: volumeId, err: standIn.reason },
      "storage unavailable at start-up; answering 503 and retrying",
    );
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
      service = new StorageService(
        name,
        s.config.key_expr,
        backend,
        this.session,
        this.logger,
        serviceOptions(s.config, name),
      );
    } catch (err) {
      standIn.reason = redactText(errorMessage(err));
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
    this.logger.warn(
      { storage: name, key_expr: s.config.key_expr, volume: volumeId },
      "storage available again: opened after a retry",
    );
    return true;
  }

  /**
   * Checks options with their driver's schema (a 400 naming a bad or misspelled option); for a
   * change written through the admin space, then what they reach and may set (403 otherwise).
   */
  private checkOptions(spec: OptionsSpec, raw: RawOptions, where: string, opts: ChangeOptions): void {
    const parsed = parseOptions(spec.schema, raw, where);
    if (opts.runtime === false) return;
    const declared = { reach: spec.reaches?.(parsed) ?? {}, configFileOnly: spec.configFileOnly };
    admitRuntimeOptions(raw, declared, where, this.admission);
  }

  /** The driver of volume `id` (opened, configured, or named after a driver), if it is known. */
  private driverOfVolume(id: string): VolumeDriver | undefined {
    const open = this.volumes.get(id);
    if (open) return this.drivers.get(open.driver);
    const cfg = this.volumeConfigs.get(id);
    if (cfg) {
      try {
        return this.driverFor(id, cfg);
      } catch {
        return undefined; // reported when the storage asks for its volume
      }
    }
    return this.drivers.get(id);
  }

  /**
   * The hosts the configured volumes and storages reach, by their drivers' declarations (the
   * hosts run-time volumes may reach by default). Options that do not parse reach nothing here:
   * they are refused when their volume or storage is put.
   */
  private hostsOf(volumes: ReadonlyMap<string, unknown>, storages: ReadonlyMap<string, unknown>): HostRef[] {
    const hosts: HostRef[] = [];
    const add = (spec: OptionsSpec, raw: unknown): void => {
      if (typeof raw !== "object" || raw === null || Array.isArray(raw)) return;
      try {
        hosts.push(...(spec.reaches?.(parseOptions(spec.schema, raw as RawOptions, "")).hosts ?? []));
      } catch {
        // refused later, with its reason
      }
    };
    for (const [id, v] of volumes) {
      if (typeof v !== "object" || v === null) continue;
      const driver = this.drivers.get(
        typeof (v as VolumeConfig).backend === "string" ? String((v as VolumeConfig).backend) : id,
      );
      if (driver) add(driver.options.volume, v);
    }
    for (const s of storages.values()) {
      const volume = (s as { volume?: unknown } | undefined)?.volume;
      if (typeof volume !== "object" || volume === null) continue;
      const { id, ...options } = volume as { id?: unknown };
      if (typeof id !== "string") continue;
      const cfg = volumes.get(id) as VolumeConfig | undefined;
      const driver = this.drivers.get(typeof cfg?.backend === "string" ? cfg.backend : id);
      if (driver) add(driver.options.storage, options);
    }
    return hosts;
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
    // A driver's error may quote a URL with credentials: they never reach the writer or the logs.
    return this.changes.run(fn).catch((err: unknown) => {
      if (err instanceof Error) err.message = redactText(err.message);
      throw err;
    });
  }

  private driverFor(id: string, cfg: VolumeConfig): VolumeDriver {
    const requested = typeof cfg.backend === "string" ? cfg.backend : id;
    const driver = this.drivers.get(requested);
    if (!driver)
      throw ZestError.badRequest(
        `unknown volume backend "${requested}" for volume ${id} (known: ${this.driverNames().join(", ")})`,
      );
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
    if (!driver)
      throw ZestError.badRequest(
        `\`${id}\` volume not found (known volumes: ${[...new Set([...this.volumes.keys(), ...this.driverNames()])].join(", ")})`,
      );
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

  /** The saved state, checked against the schema; a state that does not pass stops start-up. */
  private loadState(): SavedState | undefined {
    if (!this.statePath) return undefined;
    let text: string;
    try {
      text = readFileSync(this.statePath, "utf8");
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "ENOENT")
        this.logger.warn({ path: this.statePath, err: errorMessage(err) }, "could not read saved storages");
      return undefined;
    }
    let state: unknown;
    try {
      // JSON5 defines every key as an own property: a `__proto__` name stays a name.
      state = JSON5.parse(text);
    } catch (err) {
      throw ZestError.badRequest(`saved state ${this.statePath} is not valid JSON: ${errorMessage(err)}`);
    }
    const found = problems(savedStateSchema, state);
    if (found.length > 0) throw ZestError.badRequest(`saved state ${this.statePath}: ${found[0]}`);
    return state as SavedState;
  }

  /**
   * Saves the state after a change; if it cannot be saved, `undo` brings the running state back
   * to what is saved, and the writer gets an `internal` error saying why.
   */
  private async saveOrUndo(undo: () => Promise<void>): Promise<void> {
    try {
      this.saveState();
    } catch (err) {
      this.logger.error(
        { path: this.statePath, err: errorMessage(err) },
        "could not save storages; the change is undone",
      );
      try {
        await undo();
      } catch (undoErr) {
        this.logger.error({ err: errorMessage(undoErr) }, "undoing the unsaved change failed");
      }
      throw new ZestError(
        "internal",
        `the change could not be saved to ${this.statePath} (${errorMessage(err)}), so it was undone`,
        { cause: err },
      );
    }
  }

  /** Writes the current volumes and storages atomically (rename), so a crash never leaves half a file. */
  private saveState(): void {
    if (!this.statePath) return;
    const state: SavedState = {
      volumes: fromEntries(this.volumeConfigs),
      storages: fromEntries([...this.storages].map(([n, s]) => [n, s.config])),
      removedStorages: [...this.removedStorages].filter((n) => !this.storages.has(n)),
      removedVolumes: [...this.removedVolumes].filter((n) => !this.volumeConfigs.has(n)),
    };
    mkdirSync(dirname(this.statePath), { recursive: true });
    const tmp = `${this.statePath}.tmp`;
    writeFileSync(tmp, JSON.stringify(state, null, 2));
    renameSync(tmp, this.statePath);
  }

  /** After an unsaved replacement was undone: the previous storage runs again (or stands in). */
  private async reopenPrevious(name: string, prev: StorageEntry): Promise<void> {
    try {
      const { id: volumeId, options } = splitVolume(prev.config.volume);
      const volume = await this.volumeFor(volumeId);
      const backend = await volume.createStorage(name, prev.config.key_expr, options);
      const service = new StorageService(
        name,
        prev.config.key_expr,
        backend,
        this.session,
        this.logger,
        serviceOptions(prev.config, name),
      );
      await service.start();
      this.storages.set(name, { config: prev.config, service, volume: volumeId });
    } catch (err) {
      await this.standIn(name, prev.config, err);
    }
  }
}

/** The entries of a map of names; own properties only, so every name (`__proto__` too) counts. */
function entriesOf<T>(map: Readonly<Record<string, T>> | undefined): Array<[string, T]> {
  return map === undefined ? [] : Object.entries(map);
}

/** A plain object of `entries` with every name an own property (`__proto__` included). */
function fromEntries<T>(entries: Iterable<readonly [string, T]>): Record<string, T> {
  const out = Object.create(null) as Record<string, T>;
  for (const [k, v] of entries) out[k] = v;
  return out;
}

function restore<V>(map: Map<string, V>, key: string, value: V | undefined): void {
  if (value === undefined) map.delete(key);
  else map.set(key, value);
}

/** Checks a run-time body against its schema; a 400 naming the first problem. */
function checkSchema(schema: Parameters<typeof problems>[0], value: unknown, path: readonly string[]): void {
  const found = problems(schema, value, path);
  if (found.length > 0) throw ZestError.badRequest(found[0]!);
}

function asObject(value: unknown, what: string): Record<string, unknown> {
  if (typeof value !== "object" || value === null || Array.isArray(value))
    throw ZestError.badRequest(`${what}: expected a JSON object`);
  return value as Record<string, unknown>;
}

/** Validates a storage config; throws a 400 naming the field at fault. */
export function parseStorageConfig(name: string, raw: unknown): StorageConfig {
  const obj = asObject(raw, `storage ${name}`);
  if (!/^[A-Za-z0-9_.-]+$/.test(name))
    throw ZestError.badRequest(`invalid storage name "${name}": use letters, digits, '_', '-' and '.'`);
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
    if (typeof v.id !== "string" || v.id === "")
      throw ZestError.badRequest(`\`volume\` of storage ${name} must be a string or an object with a string \`id\``);
  }
  checkSchema(storageSchema, obj, ["plugins", "storage_manager", "storages", name]);
  parseReplication(obj.replication, name); // refuses a bad replication section with a 400 naming the field
  const ttl = typeof volume === "string" ? undefined : (volume as Record<string, unknown>).ttl;
  if (ttl !== undefined) durationValue(ttl, `\`ttl\` of storage ${name}`);
  return { ...obj, key_expr: keyExpr, volume: volume as StorageConfig["volume"] };
}

/**
 * What the storage service takes from a storage's config: its default lifetime (the storage option
 * `ttl`, docs/ttl-and-leases.md, applied whatever the volume), its replication, and `complete`
 * (zenoh's, a boolean or zenoh's strings "true"/"false").
 */
function serviceOptions(cfg: StorageConfig, name: string): StorageServiceOptions {
  const ttl = typeof cfg.volume === "object" ? cfg.volume.ttl : undefined;
  const replication = parseReplication(cfg.replication, name);
  const complete = cfg.complete === true || cfg.complete === "true";
  return {
    ...(complete ? { complete } : {}),
    ...(ttl === undefined ? {} : { defaultTtlMs: durationValue(ttl, `\`ttl\` of storage ${name}`) }),
    ...(replication === undefined ? {} : { replication }),
  };
}

function splitVolume(volume: StorageConfig["volume"]): { id: string; options: Record<string, unknown> } {
  if (typeof volume === "string") return { id: volume, options: {} };
  // `ttl` is the storage service's, not the driver's (see `serviceOptions`).
  const { id, ttl: _ttl, ...options } = volume;
  return { id, options };
}
