import type { Buffer } from "node:buffer";
import JSON5 from "json5";
import { intersects } from "../keyexpr/index.js";
import { Encoding } from "../core/encoding.js";
import { errorMessage, ZestError } from "../core/errors.js";
import type { Query } from "../core/query.js";
import type { Sample } from "../core/sample.js";
import { redact, redactText } from "../config/redact.js";
import { AdminLayout } from "./admin-layout.js";

/** A JSON value as the admin space replies it. */
type AdminEntry = readonly [key: string, value: unknown];

/**
 * The `@/router/<zid>` administration space (Variant A layout): a queryable like any other,
 * answering router and plugin status, and a subscriber on `config/**` through which storages and
 * volumes are created and removed at run time.
 */
export class AdminSpace extends AdminLayout {
  /** Where storage configs are written, as a client writes the path. */
  static storageConfigPath(zid: string): string {
    return `/@/router/${zid}/config/plugins/storage_manager/storages/<name>`;
  }

  /** Every admin entry, computed on demand (the router's state changes under it). */
  entries(): AdminEntry[] {
    const p = this.prefix;
    const sm = `${p}/status/plugins/storage_manager`;
    const out: AdminEntry[] = [[p, this.routerStatus()]];
    // Health: degraded while the fabric to the other routers is down (the router still serves locally).
    const fabric = this.sources.fabric();
    out.push([`${p}/health`, sortKeys({ status: fabric.connected === false ? "degraded" : "ok", fabric })]);
    out.push([`${p}/status/plugins/rest/__path__`, "<built-in>"]);
    out.push([`${p}/status/plugins/rest/version`, this.sources.version]);
    // zenoh 0.6 shows its REST plugin's status under `rest/port`; the other front doors (the
    // remote API...) each under their plugin name.
    for (const [name, status] of this.sources.doors()) {
      if (name === "rest") {
        out.push([`${p}/status/plugins/rest/port`, status]);
        continue;
      }
      out.push([`${p}/status/plugins/${name}/__path__`, "<built-in>"]);
      out.push([`${p}/status/plugins/${name}/status`, sortKeys(status)]);
    }
    out.push([`${sm}/__path__`, "<built-in>"]);
    out.push([`${sm}/version`, this.sources.version]);
    for (const v of this.manager.listVolumes()) {
      out.push([`${sm}/volumes/${v.id}`, redact(withError(v.config ?? v.status, v.error))]);
      out.push([`${sm}/volumes/${v.id}/__path__`, v.adminPath]);
    }
    for (const s of this.manager.listStorages()) {
      out.push([`${sm}/storages/${s.name}`, redact(withError(s.config, s.error))]);
      // Replication health: last exchange, keys repaired, known to be behind (docs/replication.md);
      // beside the storages, so that a listing of `storages/*` stays one entry per storage.
      if (s.replication) out.push([`${sm}/replication/${s.name}`, s.replication]);
    }
    // Plugins loaded with -P, like zenohd's dynamic plugins (docs/rest-gateway.md §A.5).
    for (const [name, path] of Object.entries(this.sources.plugins()))
      out.push([`${p}/status/plugins/${name}/__path__`, path]);
    return out;
  }

  private routerStatus(): Record<string, unknown> {
    const plugins: Record<string, unknown> = Object.assign(Object.create(null), {
      rest: { path: "<built-in>" },
      storage_manager: { path: "<built-in>" },
    });
    for (const [name] of this.sources.doors()) plugins[name] = { path: "<built-in>" };
    for (const [name, path] of Object.entries(this.sources.plugins())) plugins[name] = { path };
    return sortKeys({
      fabric: this.sources.fabric(),
      locators: this.sources.locators(),
      plugins,
      sessions: this.sources.sessions(),
      version: this.sources.version,
      zid: this.session.zid,
    });
  }

  protected answer(query: Query): void {
    for (const [key, value] of this.entries()) {
      if (intersects(query.key, key)) query.reply(key, JSON.stringify(value), { encoding: Encoding.APP_JSON });
    }
  }

  /** Applies a config write; the promise rejects with a 400/404/409/503 the writer sees. */
  protected async write(sample: Sample): Promise<void> {
    const configPrefix = `${this.prefix}/config/`;
    if (!sample.key.startsWith(configPrefix)) {
      throw ZestError.forbidden(
        `${sample.key} is read-only; storages and volumes are configured under ${configPrefix}plugins/storage_manager/`,
      );
    }
    const path = sample.key.slice(configPrefix.length);
    const m = /^plugins\/storage_manager\/(storages|volumes)\/([^/]+)$/.exec(path);
    if (!m) {
      if (path.startsWith("plugins/rest"))
        throw ZestError.badRequest("the rest plugin doesn't accept run-time configuration changes");
      throw ZestError.badRequest(
        `unsupported configuration path "${path}": use plugins/storage_manager/storages/<name> or plugins/storage_manager/volumes/<name>`,
      );
    }
    const [, kind, name] = m as unknown as [string, "storages" | "volumes", string];
    if (name.includes("*"))
      throw ZestError.badRequest(
        `configuration path "${path}" must name one ${kind === "storages" ? "storage" : "volume"}, without wildcards`,
      );
    if (sample.kind === "delete") {
      return kind === "storages" ? this.manager.deleteStorage(name) : this.manager.deleteVolume(name);
    }
    const value = parseJson5(sample.payload, path);
    return kind === "storages" ? this.manager.putStorage(name, value) : this.manager.putVolume(name, value);
  }
}

function parseJson5(payload: Buffer, path: string): unknown {
  try {
    return JSON5.parse(payload.toString("utf8"));
  } catch (err) {
    throw ZestError.badRequest(`invalid JSON5 value for ${path}: ${errorMessage(err)}`);
  }
}

/** Sorts object keys recursively, so admin JSON is stable (as serde's maps were). */
export function sortKeys(value: unknown): Record<string, unknown> {
  return sortValue(value) as Record<string, unknown>;
}

function sortValue(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortValue);
  if (typeof value !== "object" || value === null) return value;
  // Keys are names (`__proto__` included): a null-prototype object keeps every one of them.
  const out = Object.create(null) as Record<string, unknown>;
  for (const k of Object.keys(value).sort()) out[k] = sortValue((value as Record<string, unknown>)[k]);
  return out;
}

/** A status value, with the reason its backend is unavailable (a storage standing in, retrying) when there is one. */
function withError<T extends object>(value: T, error: string | undefined): T | (T & { error: string }) {
  return error === undefined ? value : { ...value, error: redactText(error) };
}
