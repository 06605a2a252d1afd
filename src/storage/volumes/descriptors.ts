/**
 * How the volumes with heavy dependencies (better-sqlite3, the NATS client) describe themselves,
 * their options included. Kept apart from their modules so the storage manager, the admin
 * layouts and the configuration reference can know them before the modules (and their
 * dependencies) are loaded: this file imports nothing heavy.
 */
import { resolve } from "node:path";
import type { VolumeDriver } from "../backend.js";
import {
  choiceOpt,
  driverOptions,
  hostOf,
  intOpt,
  optionsObject,
  stringListOpt,
  stringOpt,
  booleanOpt,
  VOLUME_KEYS,
} from "../options.js";

/** A driver's self-description: everything but `open`. */
export type DriverDescriptor = Omit<VolumeDriver, "open">;

// ---- sqlite ----

/** What a sqlite storage does to its table when it is removed (`on_dispose`); `keep` when unset. */
export type SqliteDisposePolicy = "keep" | "truncate" | "drop" | "dropdb";

const SQLITE_DISPOSE: ReadonlyMap<string, SqliteDisposePolicy> = new Map([
  ["truncate", "truncate"],
  ["trunc", "truncate"],
  ["drop", "drop"],
  ["dropdb", "dropdb"],
]);

const TABLE_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,127}$/;
const SQLITE_URL = /^sqlite3?:(?:\/\/([^/]*))?([^?#]*)/i;

/** The file part of a `sqlite3:///abs/path.db` URL, as written (undefined if it is not one). */
function sqliteUrlPath(url: string): string | undefined {
  const m = SQLITE_URL.exec(url);
  if (!m || (m[1] !== undefined && m[1] !== "" && m[1] !== "localhost") || m[2] === "") return undefined;
  try {
    return decodeURIComponent(m[2]!);
  } catch {
    return undefined;
  }
}

/** The options naming a sqlite file, on a volume or a storage. */
const sqliteFileOpts = {
  url: stringOpt("the file as `sqlite3:///absolute/path.db` (zenoh 0.4); or `path`", (v) =>
    sqliteUrlPath(v) === undefined ? `must look like sqlite3:///absolute/path.db (got "${v}")` : undefined,
  ).optional(),
  path: stringOpt("the SQLite file (default: `<data_dir>/<storage name>.sqlite`)", (v) =>
    v === "" ? "must not be empty" : undefined,
  ).optional(),
  adopt_existing: booleanOpt(
    "open a database zest did not create (configuration file only; never from the admin space)",
  ).optional(),
};

/** `url` and `path` name the same thing: one of them. */
function oneFile(
  o: { url?: string; path?: string },
  ctx: { addIssue(issue: { code: "custom"; message: string }): void },
) {
  if (o.url !== undefined && o.path !== undefined)
    ctx.addIssue({ code: "custom", message: "give either `url` or `path`, not both" });
}

/** The file named by parsed `url`/`path` options, as written (relative paths resolve from the working directory). */
export function sqliteFileOf(o: { url?: string; path?: string }): string | undefined {
  return o.path ?? (o.url !== undefined ? sqliteUrlPath(o.url) : undefined);
}

/** The absolute file named by parsed `url`/`path` options, if any. */
export function sqliteAbsoluteFileOf(o: { url?: string; path?: string }): string | undefined {
  const file = sqliteFileOf(o);
  return file === undefined ? undefined : resolve(file);
}

const sqliteReaches = (o: { url?: string; path?: string }) => {
  const file = sqliteFileOf(o);
  return { files: file === undefined ? [] : [file] };
};

/**
 * The sqlite driver's options. Volume: the file (`url` or `path`), `adopt_existing`. Storage:
 * the file (overrides the volume's), `table`, `on_dispose`, `adopt_existing`.
 */
export const sqliteOptions = driverOptions({
  volume: {
    schema: optionsObject({ ...VOLUME_KEYS, ...sqliteFileOpts }).superRefine(oneFile),
    reaches: sqliteReaches,
    configFileOnly: ["adopt_existing"],
  },
  storage: {
    schema: optionsObject({
      ...sqliteFileOpts,
      table: stringOpt("table (default: the storage name, other characters replaced by `_`)", (v) =>
        TABLE_NAME.test(v) && !/^sqlite_/i.test(v)
          ? undefined
          : `"${v}" is invalid: use up to 128 letters, digits and '_', not starting with a digit or "sqlite_"`,
      ).optional(),
      on_dispose: choiceOpt(
        "on removal: `Truncate` (or `trunc`) empties the table, `Drop` drops it, `DropDB` also deletes the file once it holds no table; unset keeps the data",
        SQLITE_DISPOSE,
        "Truncate, Drop or DropDB",
      ).optional(),
    }).superRefine(oneFile),
    reaches: sqliteReaches,
    configFileOnly: ["adopt_existing"],
  },
});

export const sqliteDescriptor: DriverDescriptor = {
  name: "sqlite",
  aliases: ["sqlite3"],
  kind: "sql",
  adminPath: "<built-in sqlite>",
  options: sqliteOptions,
};

// ---- jetstream ----

/**
 * Writes one storage has in flight at most by default (to different keys; option
 * `max_in_flight`); the others wait their turn.
 */
export const MAX_IN_FLIGHT = 64;
/** The most `max_in_flight` may be. */
export const MAX_IN_FLIGHT_LIMIT = 4_096;

/** A NATS server as `nats://host:port` (a bare `host:port` is one too, as the NATS client reads it). */
export function natsServerUrl(server: string): URL | undefined {
  try {
    return new URL(/^[a-z][a-z0-9+.-]*:\/\//i.test(server) ? server : `nats://${server}`);
  } catch {
    return undefined;
  }
}

const JETSTREAM_ON_CLOSURE: ReadonlyMap<string, boolean> = new Map([
  ["drop", true],
  ["do_nothing", false],
]);
const JETSTREAM_ON_DISPOSE: ReadonlyMap<string, boolean> = new Map([
  ["drop", true],
  ["dropdb", true],
  ["keep", false],
]);

const replicasOpt = (description: string) => intOpt(description, 1, 5);
const inFlightOpt = (description: string) => intOpt(description, 1, MAX_IN_FLIGHT_LIMIT);

/**
 * The jetstream driver's options. Volume: `servers`, `replicas`, `timeout_ms`, `max_in_flight`.
 * Storage: `bucket`, `replicas` and `max_in_flight` (overriding the volume's), and what removing
 * the storage does to the bucket (`on_closure` or `on_dispose`).
 */
export const jetstreamOptions = driverOptions({
  volume: {
    schema: optionsObject({
      ...VOLUME_KEYS,
      servers: stringListOpt(
        "NATS URLs, a list or a comma-separated string (default: the connection of the router's NATS fabric, from `--nats`)",
        (s) => (natsServerUrl(s) === undefined ? `must be NATS URLs (got "${s}")` : undefined),
      ).optional(),
      replicas: replicasOpt(
        "copies of each bucket, 1 to 5 (default 1; an existing bucket keeps its own count, and one with another count than asked is refused with 409)",
      ).optional(),
      timeout_ms: intOpt("JetStream request timeout in milliseconds", 1).default(5_000),
      max_in_flight: inFlightOpt(`writes one storage has in flight at once, 1 to ${MAX_IN_FLIGHT_LIMIT}`).default(
        MAX_IN_FLIGHT,
      ),
    }),
    reaches: (o) => ({ hosts: (o.servers ?? []).flatMap((s) => natsServerUrl(s) ?? []).map((u) => hostOf(u, "4222")) }),
  },
  storage: {
    schema: optionsObject({
      bucket: stringOpt("KV bucket (default `zest_<storage name>`)", (v) =>
        /^[-\w]+$/.test(v) ? undefined : `"${v}" is invalid: use letters, digits, '-' and '_'`,
      ).optional(),
      replicas: replicasOpt("copies of the bucket (default: the volume's `replicas`)").optional(),
      max_in_flight: inFlightOpt("writes in flight at once (default: the volume's `max_in_flight`)").optional(),
      on_closure: choiceOpt(
        "on removal: `drop` deletes the bucket, `do_nothing` keeps it (the default)",
        JETSTREAM_ON_CLOSURE,
        "do_nothing or drop",
      ).optional(),
      on_dispose: choiceOpt(
        "on removal (zenoh 0.4 words): `Drop` (or `DropDB`) deletes the bucket, `Keep` keeps it",
        JETSTREAM_ON_DISPOSE,
        "Drop or Keep",
      ).optional(),
    }),
  },
});

export const jetstreamDescriptor: DriverDescriptor = {
  name: "jetstream",
  aliases: [],
  kind: "jetstream",
  adminPath: "<built-in jetstream>",
  options: jetstreamOptions,
};
