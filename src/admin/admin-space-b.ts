import type { Buffer } from "node:buffer";
import { hostname } from "node:os";
import { isDeepStrictEqual } from "node:util";
import { intersects, keyExprToPath, pathToKeyExpr } from "../keyexpr/index.js";
import { Encoding } from "../core/encoding.js";
import { errorMessage, ZestError } from "../core/errors.js";
import type { Query } from "../core/query.js";
import type { Sample } from "../core/sample.js";
import type { Timestamp } from "../core/timestamp.js";
import type { StorageConfig } from "../storage/manager.js";
import { isSecretName, redactText } from "../config/redact.js";
import { SerialQueue } from "../core/serial-queue.js";
import { AdminLayout } from "./admin-layout.js";
import { sortKeys } from "./admin-space.js";

/** One admin reply: key, payload, encoding, and the time it shows (none: `"None"`). */
interface AdminEntryB {
  readonly key: string;
  readonly value: string;
  readonly encoding: string;
  readonly timestamp: Timestamp | undefined;
}

const strictUtf8 = new TextDecoder("utf-8", { fatal: true });

/** Properties as zenoh 0.4 kept them: every value a string. */
type Properties = Record<string, string>;

/** `auto` in a storage path picks a backend for the caller (0.4); ours is always `memory`. */
const AUTO = "auto";

/** `k=v;k=v` with the keys sorted, as 0.4 rendered properties. */
export function propertiesString(props: Properties): string {
  return Object.keys(props)
    .sort()
    .map((k) => `${k}=${props[k]}`)
    .join(";");
}

function asString(v: unknown): string {
  return typeof v === "string" ? v : JSON.stringify(v);
}

function copyProperties(into: Properties, from: Readonly<Record<string, unknown>>, skip: ReadonlySet<string>): void {
  // Credentials never leave the router: secret options are left out, URLs lose their user part.
  for (const [k, v] of Object.entries(from))
    if (!skip.has(k) && !isSecretName(k) && v !== undefined) into[k] = redactText(asString(v));
}

const STORAGE_SKIP = new Set(["key_expr", "volume"]);
const VOLUME_SKIP = new Set(["id"]);
/** A backend created with `lib` keeps it as its driver name in `backend` (see `volumeConfig`), shown once. */
const BACKEND_SKIP = new Set(["id", "backend"]);

/** The volume config of a backend's properties: zenoh 0.4's `lib` names the driver. */
function volumeConfig(props: Properties): Properties {
  return props.lib !== undefined && props.backend === undefined ? { ...props, backend: props.lib } : props;
}

/**
 * A storage's B properties: the `selector` as it was given (or its key expression shown as a
 * path, for storages configured in the modern form), the volume options, and any other option.
 */
export function storageProperties(config: StorageConfig): Properties {
  const props = Object.create(null) as Properties;
  copyProperties(props, config, STORAGE_SKIP);
  if (typeof config.volume === "object") copyProperties(props, config.volume, VOLUME_SKIP);
  if (typeof config.selector !== "string") props.selector = keyExprToPath(config.key_expr);
  return props;
}

/**
 * The value of a B admin write: a JSON object whose values are all strings (`"key_size":"100"`,
 * not `100`, as zenoh 0.4 required). Anything else is a 400 saying what to send instead.
 */
function parseProperties(payload: Buffer, what: string): Properties {
  let text: string;
  try {
    text = strictUtf8.decode(payload);
  } catch {
    throw ZestError.badRequest(`${what}: the value is not UTF-8 text; send a JSON object of string properties`);
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw ZestError.badRequest(
      `${what}: invalid JSON (${errorMessage(err)}); send a JSON object of string properties such as {"selector":"/demo/**"}`,
    );
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw ZestError.badRequest(
      `${what}: expected a JSON object of string properties, got ${Array.isArray(value) ? "an array" : JSON.stringify(value)}`,
    );
  }
  const props = Object.create(null) as Properties;
  for (const [k, v] of Object.entries(value)) {
    if (typeof v !== "string")
      throw ZestError.badRequest(
        `${what}: property "${k}" must be a string (got ${JSON.stringify(v)}); write "${k}":"${asString(v).replace(/"/g, '\\"')}"`,
      );
    props[k] = v;
  }
  return props;
}

/**
 * The Variant B administration space (zenoh 0.4 layout, docs/rest-gateway.md §B.5), a queryable and a
 * subscriber on `@/router/<zid>/**` like the Variant A one:
 *
 * - `@/router/<zid>`: the router (JSON);
 * - `@/router/<zid>/plugin/http` and `@/router/<zid>/plugin/storages` (JSON views);
 * - `@/router/<zid>/plugin/storages/backend/<backend>`: a volume, as a properties string;
 * - `@/router/<zid>/plugin/storages/backend/<backend>/storage/<name>`: a storage, likewise;
 * - `@/router/<zid>/plugin/storages/backend/<backend>/storage/<name>/replication`: its
 *   replication health (JSON, read-only; docs/replication.md).
 *
 * PUT and DELETE on the last two create and remove volumes and storages through the storage
 * manager, so they persist under `--data-dir` exactly as Variant A's do. Unlike 0.4, every
 * failure reaches the writer as a status (400, 404, 409, 503) instead of only the log.
 */
export class AdminSpaceB extends AdminLayout {
  /** Where storage configs are written, as a client writes the path. */
  static storageConfigPath(zid: string): string {
    return `/@/router/${zid}/plugin/storages/backend/<backend>/storage/<name>`;
  }

  /** When each backend and storage was created through this space (`backend/<b>[/storage/<s>]`). */
  private readonly created = new Map<string, Timestamp>();
  private lastChange: Timestamp | undefined;
  /** Writes run one at a time, so a duplicate check and the creation it guards never interleave. */
  private readonly writes = new SerialQueue();

  /**
   * Every admin entry, computed on demand. Times follow 0.4: the router entry is stamped when it
   * is read; backends and storages carry the time of the PUT that created them, `None` for those
   * that came from the config or a previous run.
   */
  entries(): AdminEntryB[] {
    const p = this.prefix;
    const sp = `${p}/plugin/storages`;
    const json = (key: string, value: unknown, timestamp?: Timestamp): AdminEntryB => ({
      key,
      value: JSON.stringify(value),
      encoding: Encoding.APP_JSON,
      timestamp,
    });
    const props = (key: string, value: Properties, timestamp: Timestamp | undefined): AdminEntryB => ({
      key,
      value: propertiesString(value),
      encoding: Encoding.APP_PROPERTIES,
      timestamp,
    });
    const out: AdminEntryB[] = [json(p, this.routerStatus(), this.session.clock.newTimestamp())];
    // 0.4's HTTP plugin entry lists the HTTP locators only; the router's own lists every door's.
    const http = this.sources.locators().filter((l) => l.startsWith("http://") || l.startsWith("https://"));
    out.push(json(`${p}/plugin/http`, { locators: http }));
    // Volume and storage names are data: null-prototype objects keep `__proto__` a name.
    const tree = Object.create(null) as Record<string, Record<string, unknown>>;
    const backends: AdminEntryB[] = [];
    for (const v of this.manager.listVolumes()) {
      const bp = Object.create(null) as Properties;
      copyProperties(bp, v.config ?? {}, v.config?.lib !== undefined ? BACKEND_SKIP : VOLUME_SKIP);
      bp.kind = v.kind;
      if (v.error !== undefined) bp.error = redactText(v.error);
      tree[v.id] = { ...bp };
      backends.push(props(`${sp}/backend/${v.id}`, bp, this.created.get(`backend/${v.id}`)));
    }
    for (const s of this.manager.listStorages()) {
      const sprops = storageProperties(s.config);
      if (s.error !== undefined) sprops.error = redactText(s.error);
      tree[s.volume] ??= Object.create(null) as Record<string, unknown>;
      const node = tree[s.volume]!;
      node.storage ??= Object.create(null);
      (node.storage as Record<string, unknown>)[s.name] = sprops;
      backends.push(
        props(
          `${sp}/backend/${s.volume}/storage/${s.name}`,
          sprops,
          this.created.get(`backend/${s.volume}/storage/${s.name}`),
        ),
      );
      // Replication health, as Variant A shows it (docs/replication.md, "Health"): JSON, read-only,
      // below the storage so that `storage/*` stays one entry per storage.
      if (s.replication) backends.push(json(`${sp}/backend/${s.volume}/storage/${s.name}/replication`, s.replication));
    }
    out.push(json(sp, sortKeys({ backend: tree }), this.lastChange), ...backends);
    return out;
  }

  private routerStatus(): Record<string, unknown> {
    const plugins: Record<string, unknown> = Object.assign(Object.create(null), {
      http: { path: "<built-in>" },
      storages: { path: "<built-in>" },
    });
    for (const [name, path] of Object.entries(this.sources.plugins())) plugins[name] = { path };
    // 0.4's field order (pid first), then what zest adds.
    return {
      pid: this.session.zid.toLowerCase(),
      hostname: hostname(),
      locators: this.sources.locators(),
      sessions: this.sources.sessions(),
      version: this.sources.version,
      plugins,
      fabric: this.sources.fabric(),
    };
  }

  protected answer(query: Query): void {
    for (const e of this.entries()) {
      if (intersects(query.key, e.key)) query.reply(e.key, e.value, { encoding: e.encoding, timestamp: e.timestamp });
    }
  }

  /** Applies a write; the promise rejects with the 400/403/404/409/503 the writer sees. */
  protected write(sample: Sample): Promise<void> {
    return this.writes.run(() => this.apply(sample));
  }

  private async apply(sample: Sample): Promise<void> {
    const rel = sample.key.startsWith(`${this.prefix}/`) ? sample.key.slice(this.prefix.length + 1) : "";
    const m = /^plugin\/storages\/backend\/([^/]+)(?:\/storage\/([^/]+))?$/.exec(rel);
    if (!m) {
      const where = `/@/router/${this.session.zid.toLowerCase()}/plugin/storages/backend/<backend>`;
      throw ZestError.forbidden(
        `${this.showKey(sample.key)} is read-only; backends are created under ${where} and storages under ${where}/storage/<name>`,
      );
    }
    const backend = m[1]!;
    const storage = m[2];
    if (backend.includes("*") || storage?.includes("*"))
      throw ZestError.badRequest(`${this.showKey(sample.key)} must name one backend or storage, without wildcards`);
    if (storage !== undefined) {
      if (sample.kind === "delete") await this.deleteStorage(backend, storage, sample);
      else await this.putStorage(backend, storage, sample);
    } else if (sample.kind === "delete") {
      await this.manager.deleteVolume(backend);
      this.forget(`backend/${backend}`, sample);
    } else {
      await this.putBackend(backend, sample);
    }
  }

  /** A key as Variant B shows it (`/@/router/<pid>/...`, the id in lowercase), for messages. */
  private showKey(key: string): string {
    const path = keyExprToPath(key);
    const own = `/${this.prefix}`;
    return path === own || path.startsWith(`${own}/`)
      ? `/@/router/${this.session.zid.toLowerCase()}${path.slice(own.length)}`
      : path;
  }

  private async putBackend(id: string, sample: Sample): Promise<void> {
    if (id === AUTO) throw ZestError.badRequest(`"${AUTO}" is reserved and cannot name a backend`);
    const props = volumeConfig(parseProperties(sample.payload, `backend ${id}`));
    const existing = this.manager.listVolumes().find((v) => v.id === id);
    if (existing) {
      if (existing.config && isDeepStrictEqual(existing.config, props)) return; // the same PUT again
      throw ZestError.conflict(`backend ${id} already exists with other properties; DELETE it first`);
    }
    await this.manager.putVolume(id, props);
    this.remember(`backend/${id}`, sample);
  }

  private async putStorage(backend: string, name: string, sample: Sample): Promise<void> {
    const what = `storage ${name}`;
    const props = parseProperties(sample.payload, what);
    const { selector, ...options } = props;
    if (selector === undefined)
      throw ZestError.badRequest(`${what}: the "selector" property is missing, e.g. {"selector":"/demo/example/**"}`);
    let keyExpr: string;
    try {
      keyExpr = pathToKeyExpr(selector, { expr: true });
    } catch (err) {
      throw ZestError.badRequest(`${what}: invalid selector "${selector}": ${errorMessage(err)}`);
    }
    const volume = backend === AUTO ? "memory" : backend;
    if (!this.manager.listVolumes().some((v) => v.id === volume)) {
      throw ZestError.notFound(
        `unknown backend "${backend}": create it first with PUT /@/router/local/plugin/storages/backend/${backend}`,
      );
    }
    // `selector` is kept beside the key expression so the listing shows it exactly as given.
    const config: StorageConfig = { key_expr: keyExpr, selector, volume: { id: volume, ...options } };
    const existing = this.manager.listStorages().find((s) => s.name === name);
    if (existing) {
      if (isDeepStrictEqual(existing.config, config)) return; // the same PUT again
      throw ZestError.conflict(
        `storage ${name} already exists (in backend ${existing.volume}, ${propertiesString(storageProperties(existing.config))}); DELETE it first`,
      );
    }
    await this.manager.putStorage(name, config);
    this.remember(`backend/${volume}/storage/${name}`, sample);
  }

  private async deleteStorage(backend: string, name: string, sample: Sample): Promise<void> {
    const existing = this.manager.listStorages().find((s) => s.name === name);
    const volume = backend === AUTO ? existing?.volume : backend;
    if (!existing || existing.volume !== volume) throw ZestError.notFound(`no storage ${name} in backend ${backend}`);
    await this.manager.deleteStorage(name);
    this.forget(`backend/${existing.volume}/storage/${name}`, sample);
  }

  private remember(path: string, sample: Sample): void {
    if (sample.timestamp) this.created.set(path, sample.timestamp);
    this.touch(sample.timestamp);
  }

  private forget(path: string, sample: Sample): void {
    this.created.delete(path);
    this.touch(sample.timestamp);
  }

  private touch(ts: Timestamp | undefined): void {
    if (ts) this.lastChange = ts;
  }
}
